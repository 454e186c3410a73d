/**
 * What the SQL stores share with the code that reads their lock tables: one statement at a time on a connection, with
 * `?` placeholders whatever the dialect (the PostgreSQL session numbers them), rows as plain objects keyed by the
 * column names the statement gives them.
 */
import type { SqlDialect } from './url';

export type SqlRow = Record<string, unknown>;

/**
 * A column's value as text, undefined for NULL: the drivers give some text as Buffers (MySQL's BINARY casts, binary
 * collations), read as UTF-8.
 */
export function rowText(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

export interface SqlSession {
  readonly dialect: SqlDialect;
  query(sql: string, params?: readonly unknown[]): Promise<SqlRow[]>;
}

/**
 * A release must know whether its guarded UPDATE or DELETE changed the row (0 rows: the lock changed, nothing was
 * done), and MySQL/MariaDB have no UPDATE … RETURNING: the session says how many rows a statement changed (pg's
 * `rowCount`, mysql2's `affectedRows`).
 */
export interface SqlWriteSession extends SqlSession {
  execute(sql: string, params?: readonly unknown[]): Promise<number>;
}

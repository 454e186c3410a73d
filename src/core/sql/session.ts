/**
 * What the SQL stores share with the code that reads their lock tables: one statement at a time on a connection, with
 * `?` placeholders whatever the dialect (the PostgreSQL session numbers them), rows as plain objects keyed by the
 * column names the statement gives them.
 */
import type { SqlDialect } from './url';

export type SqlRow = Record<string, unknown>;

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

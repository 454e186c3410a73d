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

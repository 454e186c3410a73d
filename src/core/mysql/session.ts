/**
 * The backend's own connection, for reading the locks (and the lock tables, as a SqlSession) and for KILL: opened
 * again on the next query after the server ended it (a restart, wait_timeout, a KILL), so a watch that failed one poll
 * recovers on the next. `execute` says how many rows a statement changed (mysql2's affectedRows). Rows come as plain objects keyed by column name; DATETIME and TIMESTAMP as Date (in UTC: see
 * connect.ts), DECIMAL as strings, integers as numbers while exact (as strings beyond 2^53), binary columns
 * (`BINARY col`, BLOB) as Buffers.
 */
import type { Connection } from 'mysql2/promise';
import { LockLensError, errorMessage } from '../errors';
import type { SqlRow, SqlWriteSession } from '../sql/session';
import { openConnection, serverErrno, type MysqlTarget } from './connect';

export class MysqlSession implements SqlWriteSession {
  readonly dialect = 'mysql' as const;
  private current: Connection | undefined;
  private opening: Promise<Connection> | undefined;
  private broken = false;
  private closed = false;

  constructor(
    readonly target: MysqlTarget,
    first: Connection,
  ) {
    this.adopt(first);
  }

  private adopt(conn: Connection): Connection {
    this.current = conn;
    this.broken = false;
    conn.on('error', () => {
      if (this.current === conn) this.broken = true;
    });
    return conn;
  }

  private connection(): Promise<Connection> {
    if (this.closed) return Promise.reject(new LockLensError('CLOSED', 'the MySQL connection is closed'));
    if (this.current && !this.broken) return Promise.resolve(this.current);
    this.current?.destroy();
    this.current = undefined;
    this.opening ??= openConnection(this.target)
      .then((conn) => {
        if (this.closed) {
          conn.destroy();
          throw new LockLensError('CLOSED', 'the MySQL connection is closed');
        }
        return this.adopt(conn);
      })
      .finally(() => (this.opening = undefined));
    return this.opening;
  }

  /** The rows of the statement's first result set ([] when it has none). */
  async query(sql: string, params: readonly unknown[] = []): Promise<SqlRow[]> {
    const result = await this.run(sql, params);
    // A compound statement (MariaDB's BEGIN NOT ATOMIC … END) answers with the result sets of its SELECTs, then an OK.
    const rows = Array.isArray(result) && Array.isArray(result[0]) ? (result[0] as unknown) : result;
    return Array.isArray(rows) ? (rows as SqlRow[]) : [];
  }

  /** How many rows an UPDATE or DELETE changed. */
  async execute(sql: string, params: readonly unknown[] = []): Promise<number> {
    const result = await this.run(sql, params);
    return Array.isArray(result) ? 0 : Number((result as { affectedRows?: unknown }).affectedRows ?? 0);
  }

  private async run(sql: string, params: readonly unknown[]): Promise<unknown> {
    const conn = await this.connection();
    try {
      const [result] = await conn.query(sql, params as unknown[]);
      return result;
    } catch (e) {
      // A server error leaves the connection usable; anything else (the socket went) has it reopened next time.
      if (serverErrno(e) === undefined) this.broken = true;
      throw e instanceof LockLensError ? e : new LockLensError(serverErrno(e) === undefined ? 'UNREACHABLE' : 'STORE', `MySQL at ${this.target.url.label}: ${errorMessage(e)}`, { cause: e });
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const conn = this.current;
    this.current = undefined;
    void conn?.end().catch(() => conn.destroy());
  }
}

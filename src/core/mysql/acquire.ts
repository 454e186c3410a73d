/**
 * Taking a GET_LOCK lock from LockLens, so that it excludes every client that takes the same name (PyMySQL scripts,
 * Flyway's `GET_LOCK('Flyway-…')`, Rails' advisory lock): a connection of its own, kept open while held, since the
 * lock is the connection's and goes when it ends.
 *
 * The wait is one `GET_LOCK(name, <a year>)`; cancelling it is a `KILL QUERY` of that connection from the backend's
 * own, and closing it (a lock granted just before the KILL goes with the connection). GET_LOCK has no queue position
 * to report: "one ahead" while another connection holds it.
 *
 * `ttlSeconds` becomes the hold's session `wait_timeout`: the lock has no TTL, but a LockLens that vanishes without
 * closing its socket (a machine gone, a cut network) leaves an idle connection, which the server ends after
 * wait_timeout, freeing the lock. A hold therefore pings (checking that it still holds the name) every third of it,
 * well inside the timeout, which would otherwise end a healthy but idle hold silently.
 */
import type { Connection } from 'mysql2/promise';
import type { AcquireOptions, LockHold } from '../backend';
import { Emitter, type Event } from '../emitter';
import { LockLensError, abortError, errorMessage, throwIfAborted } from '../errors';
import { displayKey, isUtf8 } from '../keys';
import { errorCode, serverErrno, type MysqlFlavor } from './connect';
import { memberKey } from './getLockReading';

export interface AcquireContext {
  readonly flavor: MysqlFlavor;
  /** A new connection, for the hold alone. */
  readonly open: () => Promise<Connection>;
  /** `KILL QUERY <id>` from the backend's connection: ends a GET_LOCK wait. */
  readonly killQuery: (connectionId: number) => Promise<void>;
  /** Who holds `name`: a connection id and what the processlist says of it, for LOCKED messages. */
  readonly describeHolder: (name: string) => Promise<string | undefined>;
}

/** A GET_LOCK that waits this long (a year, in seconds) is as good as for ever on MySQL and MariaDB alike. */
const WAIT_FOR_EVER_S = 365 * 24 * 3600;
/** The pings keep at least this pace, whatever the TTL. */
const MAX_PING_MS = 60_000;

// Server errors seen on a killed or interrupted connection (MySQL's and MariaDB's numbers agree).
const ER_QUERY_INTERRUPTED = 1317;
const ER_CONNECTION_KILLED = 1927;
const ER_SERVER_SHUTDOWN = 1053;

/**
 * The name as the server takes it, or INVALID_ARGUMENT: MySQL refuses names over 64 characters; MariaDB allows 192
 * bytes of utf8mb3 and stores every 4-byte character as '?' (two names differing in an emoji would be one lock).
 */
export function checkLockName(flavor: MysqlFlavor, bytes: Uint8Array): string {
  const shown = displayKey(bytes);
  if (bytes.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'GET_LOCK needs a name: the empty name is no lock');
  if (!isUtf8(bytes)) throw new LockLensError('INVALID_ARGUMENT', `${shown} is not UTF-8: GET_LOCK names are text, converted by the server`);
  const name = Buffer.from(bytes).toString('utf8');
  const characters = [...name];
  if (flavor === 'mysql' && characters.length > 64) {
    throw new LockLensError('INVALID_ARGUMENT', `${shown} has ${characters.length} characters: MySQL's GET_LOCK names have at most 64`);
  }
  if (flavor === 'mariadb') {
    if (characters.some((c) => c.codePointAt(0)! > 0xffff)) {
      throw new LockLensError('INVALID_ARGUMENT', `${shown} has characters outside the Basic Multilingual Plane: MariaDB keeps GET_LOCK names in utf8mb3, where they all become '?'`);
    }
    if (Buffer.byteLength(name) > 192) throw new LockLensError('INVALID_ARGUMENT', `${shown} is ${Buffer.byteLength(name)} bytes: MariaDB's GET_LOCK names have at most 192`);
  }
  return name;
}

function lostReason(e: unknown): string {
  const errno = serverErrno(e);
  if (errno === ER_CONNECTION_KILLED || errno === ER_QUERY_INTERRUPTED) return 'its connection was killed by someone (KILL: a force release?)';
  if (errno === ER_SERVER_SHUTDOWN) return 'the server is shutting down';
  if (errorCode(e) === 'PROTOCOL_CONNECTION_LOST') return 'the server closed its connection (killed by someone, a restart, or wait_timeout)';
  return `its connection failed: ${errorMessage(e)}`;
}

async function getLock(conn: Connection, name: string, timeoutS: number): Promise<number | null> {
  const [rows] = await conn.query('SELECT GET_LOCK(?, ?) AS got', [name, timeoutS]);
  const got = (rows as { got: unknown }[])[0].got;
  return got === null ? null : Number(got);
}

export async function acquire(ctx: AcquireContext, nameBytes: Uint8Array, options: AcquireOptions): Promise<MysqlHold> {
  const name = checkLockName(ctx.flavor, nameBytes);
  if (!(options.ttlSeconds > 0)) throw new LockLensError('INVALID_ARGUMENT', 'the TTL (the hold connection`s wait_timeout) must be positive');
  throwIfAborted(options.signal);
  const conn = await ctx.open();
  const id = conn.threadId;
  const key = memberKey(id);
  const waitTimeoutS = Math.max(1, Math.ceil(options.ttlSeconds));
  let onAbort: (() => void) | undefined;
  try {
    throwIfAborted(options.signal);
    await conn.query('SET SESSION wait_timeout = ?', [waitTimeoutS]);
    if (options.tryOnly) {
      if ((await getLock(conn, name, 0)) !== 1) {
        const holder = await ctx.describeHolder(name);
        throw new LockLensError('LOCKED', `${displayKey(nameBytes)} is held${holder ? ` by ${holder}` : ''}`);
      }
    } else {
      const [rows] = await conn.query('SELECT IS_USED_LOCK(?) AS holder', [name]);
      if ((rows as { holder: unknown }[])[0].holder !== null) options.onQueue?.({ key, ahead: 1, fencingToken: null });
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => {
          void ctx.killQuery(id).catch(() => undefined);
          reject(abortError(options.signal!));
        };
        options.signal?.addEventListener('abort', onAbort, { once: true });
      });
      aborted.catch(() => undefined);
      // An abort while the connection opened or the statements above ran fired before the listener: it is seen here,
      // before the year-long GET_LOCK is sent; one from now on by the listener.
      throwIfAborted(options.signal);
      const got = await Promise.race([getLock(conn, name, WAIT_FOR_EVER_S), aborted]);
      throwIfAborted(options.signal);
      if (got !== 1) throw new LockLensError('LOCK_LOST', `GET_LOCK(${displayKey(nameBytes)}) on connection ${id} returned ${String(got)}: its wait was killed by someone`);
    }
    options.onQueue?.({ key, ahead: 0, fencingToken: null });
    throwIfAborted(options.signal);
    return new MysqlHold(conn, Buffer.from(nameBytes), name, key, waitTimeoutS);
  } catch (e) {
    // Whatever it got goes with the connection.
    conn.destroy();
    if (e instanceof LockLensError) throw e;
    if (serverErrno(e) === ER_QUERY_INTERRUPTED && options.signal?.aborted) throw abortError(options.signal);
    throw new LockLensError('LOCK_LOST', `waiting for ${displayKey(nameBytes)} failed: ${lostReason(e)}`, { cause: e });
  } finally {
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
  }
}

/** A lock held by a connection of its own; see the file's comment. */
export class MysqlHold implements LockHold {
  readonly fencingToken = null;
  readonly revision = null;
  readonly owner: string;
  private readonly lostEmitter = new Emitter<LockLensError>();
  readonly onDidLose: Event<LockLensError> = this.lostEmitter.event;
  private lostError: LockLensError | undefined;
  private isEnded = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly conn: Connection,
    readonly name: Buffer,
    private readonly serverName: string,
    readonly key: Buffer,
    waitTimeoutS: number,
  ) {
    this.owner = String(conn.threadId);
    conn.on('error', (e: unknown) => this.lose(lostReason(e)));
    conn.on('end', () => this.lose('the server closed its connection (killed by someone, a restart, or wait_timeout)'));
    this.timer = setInterval(() => void this.check(), Math.min(MAX_PING_MS, (waitTimeoutS * 1000) / 3));
  }

  get lost(): LockLensError | undefined {
    return this.lostError;
  }

  get ended(): boolean {
    return this.isEnded;
  }

  /** The keepalive: still our connection's lock. */
  private async check(): Promise<void> {
    if (this.isEnded) return;
    try {
      const [rows] = await this.conn.query('SELECT IS_USED_LOCK(?) = CONNECTION_ID() AS ours', [this.serverName]);
      if (!this.isEnded && Number((rows as { ours: unknown }[])[0].ours) !== 1) this.lose(`connection ${this.owner} no longer holds it`);
    } catch (e) {
      this.lose(lostReason(e));
    }
  }

  private end(): void {
    this.isEnded = true;
    clearInterval(this.timer);
  }

  private lose(why: string, error = new LockLensError('LOCK_LOST', `lost ${displayKey(this.name)}: ${why}`)): void {
    if (this.isEnded) return;
    this.end();
    this.lostError = error;
    this.lostEmitter.fire(error);
    this.conn.destroy();
  }

  /** The connection it was taken through is closing: lost now; ending our own connection frees the lock. */
  abandon(error: LockLensError): void {
    this.lose('', error);
  }

  async release(): Promise<boolean> {
    if (this.isEnded) return false;
    this.end();
    this.lostEmitter.dispose();
    try {
      const [rows] = await this.conn.query('SELECT RELEASE_LOCK(?) AS released', [this.serverName]);
      return Number((rows as { released: unknown }[])[0].released) === 1;
    } catch {
      return false;
    } finally {
      await this.conn.end().catch(() => this.conn.destroy());
    }
  }

  dispose(): void {
    void this.release().catch(() => undefined);
  }
}

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
 * wait_timeout, freeing the lock. The hold's pings (sql/connectionHold.ts: every third of the TTL, each checking that
 * the connection still holds the name) keep a healthy but idle hold inside that timeout, and count it lost when they go
 * unanswered for most of it.
 */
import type { Connection } from 'mysql2/promise';
import type { AcquireOptions } from '../backend';
import { LockLensError, abortError, errorMessage, throwIfAborted } from '../errors';
import { displayKey, isUtf8 } from '../keys';
import { ConnectionHold, type HeldConnection } from '../sql/connectionHold';
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

const CLOSED_BY_SERVER = 'the server closed its connection (killed by someone, a restart, or wait_timeout)';

function lostReason(e: unknown): string {
  const errno = serverErrno(e);
  if (errno === ER_CONNECTION_KILLED || errno === ER_QUERY_INTERRUPTED) return 'its connection was killed by someone (KILL: a force release?)';
  if (errno === ER_SERVER_SHUTDOWN) return 'the server is shutting down';
  if (errorCode(e) === 'PROTOCOL_CONNECTION_LOST') return CLOSED_BY_SERVER;
  return `its connection failed: ${errorMessage(e)}`;
}

async function getLock(conn: Connection, name: string, timeoutS: number): Promise<number | null> {
  const [rows] = await conn.query('SELECT GET_LOCK(?, ?) AS got', [name, timeoutS]);
  const got = (rows as { got: unknown }[])[0].got;
  return got === null ? null : Number(got);
}

export async function acquire(ctx: AcquireContext, nameBytes: Uint8Array, options: AcquireOptions): Promise<ConnectionHold> {
  const name = checkLockName(ctx.flavor, nameBytes);
  if (!(options.ttlSeconds > 0)) throw new LockLensError('INVALID_ARGUMENT', "the TTL (the hold connection's wait_timeout) must be positive");
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
    return new ConnectionHold({ name: Buffer.from(nameBytes), key, owner: String(id), ttlSeconds: options.ttlSeconds }, heldConnection(conn, name));
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

/** A held lock's connection as the hold keeps it; see the file's comment. */
function heldConnection(conn: Connection, serverName: string): HeldConnection {
  return {
    store: 'MySQL',
    freedWhenSilent: 'the server ends a connection it has not heard from for wait_timeout (the TTL), freeing the lock',
    onEnd: (listener) => {
      conn.on('error', listener);
      conn.on('end', () => listener());
    },
    lossReason: (e) => (e === undefined ? CLOSED_BY_SERVER : lostReason(e)),
    // Still our connection's lock: a ping that also proves the hold.
    ping: async () => {
      const [rows] = await conn.query('SELECT IS_USED_LOCK(?) = CONNECTION_ID() AS ours', [serverName]);
      return Number((rows as { ours: unknown }[])[0].ours) === 1;
    },
    unlock: async () => {
      const [rows] = await conn.query('SELECT RELEASE_LOCK(?) AS released', [serverName]);
      return Number((rows as { released: unknown }[])[0].released) === 1;
    },
    close: () => conn.end(),
    destroy: () => conn.destroy(),
  };
}

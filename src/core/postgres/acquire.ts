/**
 * Taking an advisory lock from LockLens: `pg_advisory_lock(key)` (`_shared` for reading) on a connection of its own,
 * kept open while the lock is held, so that it excludes every client that locks the same key (psycopg2, Flyway, any
 * service calling pg_advisory_lock). PostgreSQL queues the waiters itself; our position is read from pg_locks while
 * the lock statement waits. Cancelling asks the server to cancel that statement (pg_cancel_backend, from the backend's
 * own connection) and then closes the connection: a waiting backend does not notice its client leaving by itself.
 *
 * An advisory lock has no TTL: it lasts as long as its session. `ttlSeconds` is used for what comes closest: the
 * holding session's TCP keepalives (and tcp_user_timeout) are set so that the server ends it, freeing the lock, within
 * about ttlSeconds of LockLens vanishing from the network; the session also checks for a vanished client while it
 * waits (client_connection_check_interval, PostgreSQL 14+). The hold pings and watches for silence as every SQL hold
 * does (sql/connectionHold.ts).
 */
import type { Client } from 'pg';
import type { AcquireOptions } from '../backend';
import { LockLensError, abortError, errorMessage, throwIfAborted } from '../errors';
import { displayKey, isUtf8 } from '../keys';
import type { LockState } from '../lockState';
import { keyArguments, parseAdvisoryName, type AdvisoryKey } from './advisoryKeys';
import { sleep } from '../sleep';
import { ConnectionHold, type HeldConnection } from '../sql/connectionHold';
import { SESSION_WORDS, holdersOf, sessionText } from '../sql/sessionText';

export interface AcquireContext {
  /** A new connection for one hold, its client's TCP keepalives set for the TTL. */
  readonly openClient: (ttlSeconds: number) => Promise<Client>;
  /** The server's version (server_version_num). */
  readonly serverVersion: number;
  /** The lock as pg_locks shows it now (undefined: nobody holds or waits for it), read on the backend's connection. */
  readonly readLock: (key: AdvisoryKey) => Promise<LockState | undefined>;
  /** Cancels the statement `pid` is running, from the backend's connection. */
  readonly cancel: (pid: number) => Promise<void>;
}

/** How often our position is read while we wait. */
const QUEUE_POLL_MS = 250;
/** How long a cancelled lock statement is given to end before its connection is closed under it. */
const CANCEL_WAIT_MS = 5000;

/** Who holds a lock, for LOCKED. */
export function holdersText(lock: LockState | undefined): string {
  const holders = lock ? holdersOf(lock) : [];
  if (holders.length === 0) return 'another session (gone by now)';
  return holders.map((m) => sessionText(m.owner, m.session, SESSION_WORDS.postgres)).join(' and ');
}

/** Session settings that bound how long the server keeps our session (and lock) once we vanish; see the file's comment. */
function keepaliveSettings(ttlSeconds: number, serverVersion: number): [string, string][] {
  const idle = Math.max(1, Math.round(ttlSeconds / 2));
  const interval = Math.max(1, Math.round(ttlSeconds / 6));
  const settings: [string, string][] = [
    ['tcp_keepalives_idle', String(idle)],
    ['tcp_keepalives_interval', String(interval)],
    ['tcp_keepalives_count', '3'],
  ];
  if (serverVersion >= 120000) settings.push(['tcp_user_timeout', String(Math.max(1000, Math.round(ttlSeconds * 1000)))]);
  if (serverVersion >= 140000) settings.push(['client_connection_check_interval', String(Math.max(1000, Math.round((ttlSeconds * 1000) / 3)))]);
  return settings;
}

function nameText(name: Uint8Array): string {
  if (!isUtf8(name)) throw new LockLensError('INVALID_ARGUMENT', `'${displayKey(name)}' is not a PostgreSQL advisory lock key: write a bigint such as 42, or an int pair such as 1:2`);
  return Buffer.from(name).toString('utf8');
}

export async function acquire(ctx: AcquireContext, nameBytes: Uint8Array, options: AcquireOptions): Promise<ConnectionHold> {
  const name = nameText(nameBytes);
  const key = parseAdvisoryName(name);
  if (!(options.ttlSeconds > 0)) throw new LockLensError('INVALID_ARGUMENT', 'the TTL (how soon the server ends the session of a vanished holder) must be positive');
  if (options.mode !== undefined && options.mode !== 'read' && options.mode !== 'write') {
    throw new LockLensError('INVALID_ARGUMENT', `the mode is read or write, not '${String(options.mode)}'`);
  }
  throwIfAborted(options.signal);
  // Without a mode the lock is taken exclusively: every advisory key can be taken either way, so none needs one.
  const shared = options.mode === 'read';
  const suffix = shared ? '_shared' : '';
  const args = keyArguments(key);
  const client = await ctx.openClient(options.ttlSeconds);
  try {
    const settings = keepaliveSettings(options.ttlSeconds, ctx.serverVersion);
    const setAll = settings.map((_, i) => `set_config($${2 * i + 1}, $${2 * i + 2}, false)`).join(', ');
    const [{ pid }] = (await client.query(`SELECT pg_backend_pid() AS pid, ${setAll}`, settings.flat())).rows as { pid: number }[];
    const memberKey = Buffer.from(`pid ${pid}`);
    let announced: number | undefined;
    const announce = (ahead: number) => {
      if (announced === ahead) return;
      announced = ahead;
      options.onQueue?.({ key: memberKey, ahead, fencingToken: null });
    };
    const [tried] = (await client.query(`SELECT pg_try_advisory_lock${suffix}(${args.sql}) AS ok`, args.params)).rows as { ok: boolean }[];
    if (!tried.ok) {
      if (options.tryOnly) throw new LockLensError('LOCKED', `${name} is held by ${holdersText(await ctx.readLock(key))}`);
      await waitForLock(ctx, client, pid, key, `SELECT pg_advisory_lock${suffix}(${args.sql})`, args.params, announce, options.signal);
    }
    announce(0);
    if (options.signal?.aborted) throw abortError(options.signal);
    return new ConnectionHold(
      { name: Buffer.from(name), key: memberKey, owner: String(pid), ttlSeconds: options.ttlSeconds },
      heldSession(client, pid, `SELECT pg_advisory_unlock${suffix}(${args.sql}) AS ok`, args.params),
    );
  } catch (e) {
    // Ending the session frees whatever it took.
    await client.end().catch(() => undefined);
    throw acquireError(name, e);
  }
}

/** A failure of the lock statements in words: the server's lock_timeout, someone's cancel or terminate, a deadlock. */
function acquireError(name: string, e: unknown): LockLensError {
  if (e instanceof LockLensError) return e;
  const code = (e as { code?: string }).code;
  const fail = (c: ConstructorParameters<typeof LockLensError>[0], text: string) => new LockLensError(c, `${name}: ${text}`, { cause: e });
  if (code === '55P03') return fail('LOCKED', `the server's lock_timeout ended the wait (${errorMessage(e)})`);
  if (code === '57014') return fail('CANCELLED', `someone cancelled the waiting statement (pg_cancel_backend, or the role's statement_timeout): ${errorMessage(e)}`);
  if (code === '57P01') return fail('LOCK_LOST', 'the waiting session was terminated by someone (pg_terminate_backend), or the server is shutting down');
  return fail('STORE', `the lock statement failed: ${errorMessage(e)}${code ? ` (${code})` : ''}`);
}

/** Our place: 1 for the holders (however many share it), plus the waiters that began waiting before us. */
function positionIn(lock: LockState | undefined, pid: number): number {
  if (!lock) return 0;
  const waiters = lock.waiters.map((w) => w.owner);
  const ours = waiters.indexOf(String(pid));
  return (lock.holder ? 1 : 0) + (ours < 0 ? waiters.length : ours);
}

async function waitForLock(
  ctx: AcquireContext,
  client: Client,
  pid: number,
  key: AdvisoryKey,
  sql: string,
  params: readonly string[],
  announce: (ahead: number) => void,
  signal: AbortSignal | undefined,
): Promise<void> {
  let settled = false;
  const locked = client.query(sql, params as string[]).finally(() => (settled = true));
  locked.catch(() => undefined);
  while (!settled && !signal?.aborted) {
    try {
      const ahead = positionIn(await ctx.readLock(key), pid);
      // Granted meanwhile (the read came after it): the statement's answer says so.
      if (!settled && ahead > 0) announce(ahead);
    } catch {
      // The position is for show; the lock statement decides.
    }
    await sleep(QUEUE_POLL_MS, signal, { wake: locked });
  }
  if (!settled) {
    // Cancelled, the statement ends with an error (or with the lock, if it was granted first: the session's end frees
    // it). If the cancel cannot be sent, ending the connection is what is left.
    const cancelled = await ctx.cancel(pid).then(() => true, () => false);
    if (!cancelled || !(await Promise.race([locked.then(() => true, () => true), sleep(CANCEL_WAIT_MS).then(() => false)]))) await client.end().catch(() => undefined);
    throw abortError(signal!);
  }
  await locked;
}

/** The loss of a hold, in words, from what ended its connection. */
function lossReason(pid: number, e: unknown): string {
  const code = (e as { code?: string } | undefined)?.code;
  if (code === '57P01') return `its session (pid ${pid}) was terminated by someone (pg_terminate_backend: a force release?), or the server is shutting down`;
  if (code === '57P02' || code === '57P03') return `the server ended its session (pid ${pid}): ${errorMessage(e)}`;
  return `its connection (pid ${pid}) ended${e ? `: ${errorMessage(e)}` : ''}`;
}

/** A held lock's session as the hold keeps it; see the file's comment. */
function heldSession(client: Client, pid: number, unlockSql: string, unlockParams: readonly string[]): HeldConnection {
  return {
    store: 'PostgreSQL',
    freedWhenSilent: 'the server ends a session it cannot reach within the TTL (its TCP keepalives), freeing the lock',
    onEnd: (listener) => {
      client.on('error', listener);
      client.on('end', () => listener());
    },
    lossReason: (e) => lossReason(pid, e),
    ping: async () => {
      await client.query('SELECT 1');
      return true;
    },
    unlock: async () => ((await client.query(unlockSql, unlockParams as string[])).rows as { ok: boolean }[])[0].ok,
    close: () => client.end(),
    destroy: () => void client.end().catch(() => undefined),
  };
}

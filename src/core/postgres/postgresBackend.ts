/**
 * LockLens's PostgreSQL store: the advisory locks of the connection's database, read whole from pg_locks and
 * pg_stat_activity at every poll (PostgreSQL pushes nothing about locks), on one connection of the backend's own; a
 * connection of its own for every lock taken (see acquire.ts); force release by terminating the holding session (see
 * forceRelease.ts). Members are sessions, owned by their backend pid. The database's lock tables (ShedLock, Liquibase,
 * the user's) are read with them, through the same connection, and released their library's way (sql/lockTables.ts);
 * they are not taken from LockLens.
 */
import type { AcquireOptions, ForceReleaseResult, Listing, LockBackend, LockHold, LockWatch, WatchOptions } from '../backend';
import { ConnectionScope } from '../connectionScope';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState } from '../lockState';
import type { ConnectionProfile } from '../profile';
import type { ConnectionHold } from '../sql/connectionHold';
import { LockTables } from '../sql/lockTables';
import { SqlLockWatch, listingOf, type LivingSessions, type SqlReading } from '../sql/pollingWatch';
import type { AdvisoryKey } from './advisoryKeys';
import { advisoryQuery, hiddenSessions, keyParams, locksOfRows, type AdvisoryRow } from './advisoryLocks';
import { acquire } from './acquire';
import { PgConnection, openClient, pgSpecOf } from './connect';
import { describeForceRelease, forceRelease } from './forceRelease';
import { pgSession } from './session';
import { POSTGRES_CAPABILITIES } from './capabilities';

export class PostgresBackend implements LockBackend {
  readonly kind = 'postgres' as const;
  readonly capabilities = POSTGRES_CAPABILITIES;
  /** Watches, holds and waiting acquires taken through this connection: ended when it closes. */
  private readonly scope = new ConnectionScope<ConnectionHold>('PostgreSQL', closedWhileHeld);

  /** Acquires under way: the connection stays open until they end (a waiting one is cancelled through it). */
  private readonly acquiring = new Set<Promise<unknown>>();

  private readonly tables: LockTables;

  private constructor(
    readonly connection: PgConnection,
    profile: ConnectionProfile,
  ) {
    const session = pgSession(
      (sql, params) => connection.query(sql, params),
      (sql, params) => connection.execute(sql, params),
    );
    this.tables = new LockTables(session, profile.lockTables ?? []);
  }

  /** Opens the backend's connection, or throws a LockLensError saying why not (unreachable, password, TLS, a lock table spec, …). */
  static async open(profile: ConnectionProfile): Promise<PostgresBackend> {
    const connection = await PgConnection.open(await pgSpecOf(profile));
    try {
      return new PostgresBackend(connection, profile);
    } catch (e) {
      void connection.close();
      throw e;
    }
  }

  private get label(): string {
    return this.connection.spec.url.label;
  }

  /** One whole read: every advisory lock of the database (one statement), then its lock tables. */
  private async read(): Promise<SqlReading> {
    this.scope.checkOpen();
    const rows = await this.connection.query<AdvisoryRow>(advisoryQuery(this.connection.server.version, false));
    const tables = await this.tables.read();
    const hidden = [hiddenSessions(rows, this.connection.server.currentUser), tables.hidden].filter(Boolean).join('; ');
    // Table locks are named `<table>/<row>`, advisory keys are numbers: the two never share a name.
    const locks = [...locksOfRows(rows), ...tables.locks];
    return { locks, expiries: tables.expiries, ...(hidden ? { hidden } : {}) };
  }

  /** Which of these sessions (pids) the server still has: every role sees every pid in pg_stat_activity. */
  private readonly livingSessions: LivingSessions = async (pids) => {
    const rows = await this.connection.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE pid = ANY($1::int[])', [pids.map(Number)]);
    return new Set(rows.map((r) => String(r.pid)));
  };

  private readonly readLock = async (key: AdvisoryKey): Promise<LockState | undefined> => {
    const rows = await this.connection.query<AdvisoryRow>(advisoryQuery(this.connection.server.version, true), keyParams(key));
    return locksOfRows(rows)[0];
  };

  watch(prefixes: readonly Uint8Array[], options?: WatchOptions): LockWatch {
    this.scope.checkOpen();
    return this.scope.watch(new SqlLockWatch(() => this.read(), prefixes, this.label, options, this.livingSessions));
  }

  async list(prefixes: readonly Uint8Array[]): Promise<Listing> {
    return listingOf(await this.read(), prefixes);
  }

  /** Advisory locks; a lock table's row is written by its library only. */
  acquirable(lock: LockState): boolean {
    return !this.tables.owns(lock);
  }

  async acquire(name: Uint8Array, options: AcquireOptions): Promise<LockHold> {
    this.scope.checkOpen();
    const spec = this.connection.spec;
    const acquiring = acquire(
      {
        openClient: (ttlSeconds) => openClient(spec, { keepAliveInitialDelayMillis: Math.max(1000, Math.round((ttlSeconds * 1000) / 2)) }),
        serverVersion: this.connection.server.version,
        readLock: this.readLock,
        cancel: async (pid) => void (await this.connection.query('SELECT pg_cancel_backend($1)', [pid])),
      },
      name,
      { ...options, signal: this.scope.signal(options.signal) },
    );
    this.acquiring.add(acquiring);
    try {
      return this.scope.hold(await acquiring);
    } finally {
      this.acquiring.delete(acquiring);
    }
  }

  forceRelease(lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
    this.scope.checkOpen();
    if (this.tables.owns(lock)) return this.tables.forceRelease(lock, member);
    return forceRelease(this.connection, this.readLock, lock, member);
  }

  describeForceRelease(lock: LockState, member: LockMember): string {
    return this.tables.owns(lock) ? this.tables.describeForceRelease(lock, member) : describeForceRelease(lock, member);
  }

  close(): void {
    // Closing the scope cancels the waiting acquires through the connection: it closes once they have ended.
    if (this.scope.close()) void Promise.allSettled([...this.acquiring]).then(() => this.connection.close());
  }

  dispose(): void {
    this.close();
  }
}

function closedWhileHeld(name: Buffer): LockLensError {
  return new LockLensError('LOCK_LOST', `lost ${displayKey(name)}: the PostgreSQL connection was closed while it was held (its session was ended, freeing the lock)`);
}

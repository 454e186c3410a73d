/**
 * LockLens's MySQL/MariaDB store: GET_LOCK locks (held by connections; see getLockReading.ts for what each server
 * shows) and the lock tables of the URL's database (sql/lockTables.ts), read together every poll over one connection.
 * A lock is taken on a connection of its own (acquire.ts) and force-released by killing its holder's connection
 * (forceRelease.ts).
 */
import type { AcquireOptions, ForceReleaseResult, Listing, LockBackend, LockHold, LockWatch, WatchOptions } from '../backend';
import { ConnectionScope } from '../connectionScope';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState } from '../lockState';
import type { ConnectionProfile } from '../profile';
import type { ConnectionHold } from '../sql/connectionHold';
import { LockTables } from '../sql/lockTables';
import { SqlLockWatch, listingOf, type SqlReading } from '../sql/pollingWatch';
import { SESSION_WORDS, sessionText } from '../sql/sessionText';
import { acquire } from './acquire';
import { flavorOf, openConnection, targetOf, type MysqlFlavor } from './connect';
import { describeForceRelease, forceRelease } from './forceRelease';
import { GET_LOCK_CONVENTION, GetLockReader } from './getLockReading';
import { MysqlSession } from './session';
import { MYSQL_CAPABILITIES } from './capabilities';

export class MysqlBackend implements LockBackend {
  readonly kind = 'mysql' as const;
  readonly capabilities = MYSQL_CAPABILITIES;
  private readonly scope = new ConnectionScope<ConnectionHold>('MySQL', closedWhileHeld);
  private readonly getLocks: GetLockReader;
  /** The URL's database's lock tables; none without a database. */
  private readonly tables: LockTables | undefined;

  private constructor(
    private readonly db: MysqlSession,
    readonly flavor: MysqlFlavor,
    readonly version: string,
    seesAllConnections: boolean,
    profile: ConnectionProfile,
  ) {
    this.getLocks = new GetLockReader(db, { flavor, seesAllConnections, user: String(db.target.options.user) });
    this.tables = db.target.url.database ? new LockTables(db, profile.lockTables ?? []) : undefined;
  }

  /** Connects, or throws a LockLensError saying why not (unreachable, not MySQL, access denied, TLS, …). */
  static async open(profile: ConnectionProfile): Promise<MysqlBackend> {
    const target = await targetOf(profile);
    const conn = await openConnection(target);
    try {
      const { flavor, version } = await flavorOf(conn);
      const [grants] = await conn.query("SELECT COUNT(*) AS n FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'PROCESS'");
      const seesAll = Number((grants as { n: unknown }[])[0].n) > 0;
      return new MysqlBackend(new MysqlSession(target, conn), flavor, version, seesAll, profile);
    } catch (e) {
      conn.destroy();
      throw e;
    }
  }

  private get label(): string {
    return `MySQL at ${this.db.target.url.label}`;
  }

  /** One whole read: GET_LOCK locks and lock tables. */
  private async read(): Promise<SqlReading> {
    const [getLocks, tables] = await Promise.all([this.getLocks.read(), this.tables?.read()]);
    const hidden = [...getLocks.hidden, tables?.hidden].filter(Boolean).join('; ');
    return {
      locks: [...getLocks.locks, ...(tables?.locks ?? [])],
      expiries: tables?.expiries ?? [],
      ...(hidden ? { hidden } : {}),
    };
  }

  watch(prefixes: readonly Uint8Array[], options?: WatchOptions): LockWatch {
    this.scope.checkOpen();
    return this.scope.watch(new SqlLockWatch(() => this.read(), prefixes, this.label, options, (ids) => this.getLocks.connections(ids)));
  }

  async list(prefixes: readonly Uint8Array[]): Promise<Listing> {
    this.scope.checkOpen();
    return listingOf(await this.read(), prefixes);
  }

  /** GET_LOCK locks; lock-table rows are the tables' libraries' to take. */
  acquirable(lock: LockState): boolean {
    return !this.tables?.owns(lock) && [lock.holder, ...lock.waiters].some((m) => m?.convention === GET_LOCK_CONVENTION);
  }

  async acquire(name: Uint8Array, options: AcquireOptions): Promise<LockHold> {
    this.scope.checkOpen();
    // Any text is a GET_LOCK name, a lock-table row's `<table>/<row>` too: taking it would exclude nobody.
    const rowName = await this.tables?.whyNotToTake(name);
    if (rowName) throw new LockLensError('INVALID_ARGUMENT', `${rowName} (a GET_LOCK of that name would exclude nobody); a stuck row is released with unlock --force`);
    const hold = await acquire(
      {
        flavor: this.flavor,
        open: () => openConnection(this.db.target),
        killQuery: async (id) => void (await this.db.query(`KILL QUERY ${Number(id)}`)),
        describeHolder: (n) => this.describeHolder(n),
      },
      name,
      { ...options, signal: this.scope.signal(options.signal) },
    );
    return this.scope.hold(hold);
  }

  /** The connection holding `name` in words, or undefined when the name is free by now. */
  private async describeHolder(name: string): Promise<string | undefined> {
    const holder = await this.getLocks.holderOf(name);
    return holder && sessionText(holder.owner, holder.session, SESSION_WORDS.mysql);
  }

  forceRelease(lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
    this.scope.checkOpen();
    if (this.tables?.owns(lock)) return this.tables.forceRelease(lock, member);
    return forceRelease(this.db, this.flavor, lock, member);
  }

  describeForceRelease(lock: LockState, member: LockMember): string {
    if (this.tables?.owns(lock)) return this.tables.describeForceRelease(lock, member);
    return describeForceRelease(lock, member);
  }

  close(): void {
    if (this.scope.close()) this.db.close();
  }

  dispose(): void {
    this.close();
  }
}

function closedWhileHeld(name: Buffer): LockLensError {
  return new LockLensError('LOCK_LOST', `lost ${displayKey(name)}: the MySQL connection was closed while it was held (its connection was closed, freeing the lock)`);
}

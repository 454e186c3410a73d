/**
 * Lock tables: locks kept as rows by ShedLock (JDBC), Liquibase (DATABASECHANGELOGLOCK), the seed article's `lock`
 * table, and tables the user describes (`LockTableSpec`). Shared by the PostgreSQL and MySQL/MariaDB stores, which
 * pass their session and merge `read()` into their own reading (see tableLayouts.ts for what is recognised and how).
 *
 * A row is a 'single' lock named `<table>/<row name>`; its member's key is the row's name (with, for ShedLock, the
 * run's `locked_at`: see tableRows.ts), its owner the holder column ('' where there is none), its lease the lock's
 * name where the row expires ('' where it never does: held forever if its owner died). A ShedLock row past its
 * `lock_until` is no lock at all, as a Liquibase row not LOCKED is none: free, its row kept for the next run. The
 * member's valuePreview is the row as shown, JSON of the values read as text: the release reads its guard values back
 * from there and compares them as text, so what is released is exactly the row that was shown.
 */
import type { ForceReleaseResult } from '../backend';
import { LockLensError, isLockLensError } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState } from '../lockState';
import type { LockTableSpec } from '../profile';
import type { ExpirySample } from './pollingWatch';
import type { SqlWriteSession } from './session';
import { catalogColumn, catalogQuery } from './tableCatalog';
import { LOCK_TABLE_CONVENTIONS, checkSpec, layoutsOf, type TableLayout } from './tableLayouts';
import { releaseStatement, shownValues } from './tableRelease';
import { rowLock, rowNameOf, rowsQuery } from './tableRows';
import { writerZone, type WriterZone } from './writerZone';

export { LOCK_TABLE_CONVENTIONS, type LockTableConvention } from './tableLayouts';

export interface LockTablesReading {
  readonly locks: LockState[];
  readonly expiries: ExpirySample[];
  /** What was not read and why (a spec that does not fit its table), for the store's reading's `hidden`. */
  readonly hidden?: string;
}

/**
 * Which tables exist is read from the catalog (slow on schemas of thousands of tables) on the first read, then again
 * every this many reads (a table a migration creates shows up within that many polls), and at once after any failure
 * (a table dropped or altered).
 */
const REDISCOVER_EVERY_READS = 30;

export class LockTables {
  private layouts: TableLayout[] | undefined;
  /** Why a spec is not read: its names, once; its table's columns, at each discovery. */
  private readonly specProblems: string[] = [];
  private tableProblems: string[] = [];
  private readonly custom: LockTableSpec[] = [];
  private readsSinceDiscovery = 0;
  /**
   * The TTL first seen for each expiring row of a user's table (which says nothing of when a row was written), as
   * its granted TTL; forgotten when the row's expiry changes or the row goes.
   */
  private firstTtls = new Map<string, { readonly shown: string; readonly ttl: number }>();
  /** When the last read was, and what each row said it was written at (ShedLock's locked_at) with its writer's zone. */
  private lastRead: { readonly at: number; readonly rows: ReadonlyMap<string, { readonly written: string; readonly zone?: WriterZone }> } | undefined;

  /**
   * `specs` are the user's, given to every SQL connection: a spec with names LockLens would not put in a statement is
   * not read, and said in each reading's `hidden`, never thrown (the connection's other locks are still shown).
   */
  constructor(
    private readonly db: SqlWriteSession,
    specs: readonly LockTableSpec[],
  ) {
    for (const spec of specs) {
      try {
        checkSpec(spec);
        this.custom.push(spec);
      } catch (e) {
        if (!isLockLensError(e, 'INVALID_ARGUMENT')) throw e;
        this.specProblems.push(e.message);
      }
    }
  }

  /**
   * Every table lock: the recognised tables found in the current schema(s) or database, and the user's specs. A spec
   * whose table is not in this database is skipped (it is another database's); one that does not fit its table is
   * said in `hidden`.
   */
  async read(): Promise<LockTablesReading> {
    const cached = this.layouts !== undefined && this.readsSinceDiscovery < REDISCOVER_EVERY_READS;
    try {
      return await this.readRows(await this.currentLayouts());
    } catch (e) {
      this.layouts = undefined;
      // A table dropped or altered since it was found: found again, it is read as it is now (or no longer).
      if (cached) return this.read();
      throw e;
    }
  }

  private async currentLayouts(): Promise<TableLayout[]> {
    if (this.layouts && this.readsSinceDiscovery < REDISCOVER_EVERY_READS) {
      this.readsSinceDiscovery++;
      return this.layouts;
    }
    const { sql, params } = catalogQuery(this.db.dialect, this.custom);
    const catalog = (await this.db.query(sql, params)).map(catalogColumn);
    const { layouts, problems } = layoutsOf(catalog, this.custom, this.db.dialect);
    this.layouts = layouts;
    this.tableProblems = problems;
    this.readsSinceDiscovery = 0;
    return this.layouts;
  }

  private async readRows(layouts: readonly TableLayout[]): Promise<LockTablesReading> {
    const locks: LockState[] = [];
    const expiries: ExpirySample[] = [];
    const seen = new Map<string, { name: Buffer; rows: number }>();
    const firstTtls = new Map<string, { shown: string; ttl: number }>();
    const written = new Map<string, { written: string; zone?: WriterZone }>();
    const zoned = new Map<string, string[]>();
    const readAt = Date.now();
    for (const layout of layouts) {
      for (const row of await this.db.query(rowsQuery(this.db.dialect, layout))) {
        const { lock, expiry } = rowLock(layout, row);
        // A user's name column need not be unique: one lock per name, as shown first; the others are said.
        const rows = seen.get(lock.id);
        seen.set(lock.id, { name: lock.name, rows: (rows?.rows ?? 0) + 1 });
        if (rows) continue;
        if (!expiry) {
          locks.push(lock);
          continue;
        }
        const id = lock.holder!.lease;
        let granted = expiry.granted;
        if (granted === undefined) {
          const first = this.firstTtls.get(id);
          const kept = first && first.shown === expiry.shown ? first : { shown: expiry.shown, ttl: expiry.ttl };
          firstTtls.set(id, kept);
          granted = kept.ttl;
        }
        // Seconds left on the clock its writer compares the expiry with (see tableLayouts.ts).
        let ttl = expiry.ttl;
        if (expiry.written !== undefined) {
          const zone = this.writerZone(lock, expiry.written, granted - expiry.ttl, readAt);
          written.set(id, { written: expiry.written, zone });
          if (zone) {
            zoned.set(zone.note, [...(zoned.get(zone.note) ?? []), displayKey(lock.name)]);
            ttl += zone.offset;
          }
        }
        if (layout.expiry!.freeWhenPast && ttl <= 0) continue;
        locks.push(lock);
        expiries.push({ id, ttl, grantedTtl: granted, keys: [lock.name] });
      }
    }
    this.firstTtls = firstTtls;
    this.lastRead = { at: readAt, rows: written };
    const shared = [...seen.values()]
      .filter((s) => s.rows > 1)
      .map((s) => `${displayKey(s.name)} is ${s.rows} rows: the first is shown, and force release deletes that one only`);
    const notes = [...zoned].map(
      ([off, names]) =>
        `${names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more were` : `${names.join(', ')} ${names.length > 1 ? 'were' : 'was'}`} ` +
        `written ${off} the database's UTC clock: the writer may keep its local time zone (ShedLock without usingDbTime()), whose clock ShedLock ` +
        `compares lock_until with, and the TTL is read on that clock`,
    );
    const hidden = [...[...this.specProblems, ...this.tableProblems].map((p) => `${p}, so its rows are not read`), ...shared, ...notes];
    return { locks, expiries, ...(hidden.length ? { hidden: hidden.join('; ') } : {}) };
  }

  /**
   * The zone a row's writer keeps (see writerZone.ts), from its `age` in seconds: asked as seen written since the last
   * read where it is new or its `written` changed; once told, it stays while the row does.
   */
  private writerZone(lock: LockState, written: string, age: number, readAt: number): WriterZone | undefined {
    const last = this.lastRead;
    const before = last?.rows.get(lock.holder!.lease);
    if (before?.written === written && before.zone) return before.zone;
    return writerZone(age, last && before?.written !== written ? (readAt - last.at) / 1000 : undefined);
  }

  /**
   * Why `name` is not to be taken as a lock of another kind: it is how a row of one of these tables is named
   * (`<table>/<row>`), which only the table's library writes. Undefined for any other name.
   */
  async whyNotToTake(name: Uint8Array): Promise<string | undefined> {
    const text = Buffer.from(name).toString('utf8');
    const layout = (await this.currentLayouts()).find((l) => text.startsWith(`${l.label}/`));
    if (!layout) return undefined;
    const { table, takes } = WRITERS[layout.convention];
    return `${displayKey(name)} names a row of ${table} ${layout.label}: ${takes}, not LockLens`;
  }

  /** Whether the lock is a table row read here (by its holder's convention). */
  owns(lock: LockState): boolean {
    const convention = lock.holder?.convention;
    return convention !== undefined && (LOCK_TABLE_CONVENTIONS as readonly string[]).includes(convention);
  }

  private cachedLayout(lock: LockState, member: LockMember): TableLayout | undefined {
    return this.layouts?.find((l) => l.convention === member.convention && rowNameOf(l, lock) !== undefined);
  }

  private async layoutOf(lock: LockState, member: LockMember): Promise<TableLayout> {
    if (!this.owns(lock) || !lock.holder || !lock.holder.key.equals(member.key) || lock.holder.owner !== member.owner) {
      throw new LockLensError('INVALID_ARGUMENT', `${displayKey(member.key)} is not the row holding ${displayKey(lock.name)} in a lock table`);
    }
    let layout = this.cachedLayout(lock, member);
    if (!layout) {
      this.layouts = undefined;
      await this.currentLayouts();
      layout = this.cachedLayout(lock, member);
    }
    if (!layout) throw new LockLensError('LOCK_CHANGED', `the table of ${displayKey(lock.name)} is no longer there: nothing was changed`);
    return layout;
  }

  /** The library's own release of the row, only while it is as shown; LOCK_CHANGED (nothing written) when it is not. */
  async forceRelease(lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
    const layout = await this.layoutOf(lock, member);
    const { sql, params } = releaseStatement(this.db.dialect, layout, rowNameOf(layout, lock)!, member);
    const changed = await this.db.execute(sql, params);
    if (changed === 0) {
      throw new LockLensError('LOCK_CHANGED', `${displayKey(lock.name)} is no longer the row that was shown (released, taken again or changed since): nothing was changed`);
    }
    return { keys: [lock.name], action: ACTIONS[layout.convention] };
  }

  describeForceRelease(lock: LockState, member: LockMember): string {
    const layout = this.cachedLayout(lock, member);
    const shown = shownValues(member);
    const guards = layout?.guard.map((c) => ` and ${c} ${shown[c] ?? 'NULL'}`).join('') ?? '';
    const row = `row '${layout ? rowNameOf(layout, lock)! : displayKey(member.key)}'`;
    switch (member.convention) {
      case 'shedlock':
        return (
          `Sets lock_until of ShedLock's ${row} back to its locked_at (written by the same clock, so past whatever time zone ` +
          `ShedLock writes in), only while it still has locked_by '${member.owner}'${guards}. The job can then run again on any ` +
          `node at its next schedule, lockAtLeastFor or not. ` +
          `The holder is NOT told: if the job is still running there, it goes on alongside the next run.`
        );
      case 'liquibase':
        return (
          `Clears Liquibase's changelog lock ${row} (LOCKED false, LOCKGRANTED and LOCKEDBY null), as 'liquibase releaseLocks' does, ` +
          `only while it is still held by '${member.owner}'${guards}. If that migration is in fact still running, the next ` +
          `Liquibase run can start migrating alongside it.`
        );
      case 'lock-table':
        return `Deletes the ${row} from the lock table, only while it is still as shown${guards ? ` (${guards.slice(5)})` : ''}. Its holder (the table records none) is NOT told and may go on as if it held the lock.`;
      default:
        return `Deletes the ${row} held by '${member.owner}' from the lock table${layout ? ` ${layout.label}` : ''}, only while it is still as shown${guards}. The holder is NOT told and may go on as if it held the lock.`;
    }
  }
}

/** Whose rows each kind of table holds, for messages. */
const WRITERS: Record<TableLayout['convention'], { table: string; takes: string }> = {
  shedlock: { table: "ShedLock's lock table", takes: 'ShedLock takes it' },
  liquibase: { table: "Liquibase's lock table", takes: 'Liquibase takes it' },
  'lock-table': { table: 'the lock table', takes: 'its own clients take it' },
  'custom-table': { table: 'the lock table', takes: 'its own clients take it' },
};

const ACTIONS: Record<TableLayout['convention'], string> = {
  shedlock: "set lock_until back to locked_at (ShedLock's next run takes it)",
  liquibase: "cleared LOCKED, LOCKGRANTED and LOCKEDBY (Liquibase's releaseLock)",
  'lock-table': 'deleted the row',
  'custom-table': 'deleted the row',
};

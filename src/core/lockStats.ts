import { Emitter, type Event } from './emitter';
import type { HoldEnd } from './history';
import { holdingsOf, newRecord, observeHolderLease, observeLock, type LockRecord, type Moment, type ObservedHold, type ObserveOptions } from './holdObservation';
import type { SeenHold } from './freeNameLayout';
import { keyId } from './keys';
import type { LeaseInfo } from './leaseInfo';
import { figuresOf, type LockFigures } from './lockFigures';
import type { ChangeSet } from './lockState';
import { noteRevision, timeOfRevision } from './revisionTimes';
import { loadedRecords, savedRecords, type KeptConnection, type SavedRecords } from './savedLockStats';

/**
 * What LockLens has seen of each lock while it watched, for every store: the holds (who, from when to when, how it
 * ended, how long it had waited), and figures over them. Fed the same change sets and TTL samples as the views, in
 * order; pure (no store, no timers: `now` is passed in), and kept across restarts by whoever owns it (`toJSON`,
 * `fromJSON`). Bounded: MAX_LOCKS locks a connection (the least recently active go first), MAX_HOLDS holds a lock,
 * MAX_SAMPLES samples a figure. What one lock's changes say is holdObservation.ts's; the saved format is
 * savedLockStats.ts's.
 */

export const MAX_LOCKS = 200;

interface ConnectionRecord extends KeptConnection {
  /** The leases to ask the store about: see LockStats.unsettled. */
  readonly unsettled: Set<string>;
}

/** What this instance knows of a connection's current watch (nothing of it is saved). */
interface Watching {
  /** Since when LockLens has watched without a break: the handoff rate's window starts no earlier. */
  readonly since: number;
  /** The locks its model holds now: one that changes live without a record was there before (its holder too). */
  readonly present: Set<string>;
  /** Its first full load was seen: a record's lock missing from it is gone. */
  loaded: boolean;
}

export interface LockStatsChange {
  readonly connection: string;
  readonly lockIds: readonly string[];
}

export class LockStats {
  private readonly byConnection = new Map<string, ConnectionRecord>();
  private readonly watching = new Map<string, Watching>();
  private readonly hasLeases = new Map<string, boolean>();
  private readonly changeEmitter = new Emitter<LockStatsChange>();
  readonly onDidChange: Event<LockStatsChange> = this.changeEmitter.event;

  /** Folds in one change set of `connection`'s watch; call it for every change set, in order. */
  observe(connection: string, changes: ChangeSet, options: ObserveOptions, now = Date.now()): void {
    const c = this.record(connection);
    let w = this.watching.get(connection);
    if (!w) this.watching.set(connection, (w = { since: now, present: new Set(), loaded: false }));
    this.hasLeases.set(connection, options.hasLeases);
    const exact = !changes.resynced;
    // A reload's revision is the store's last write, maybe hours old: only a change seen live dates its revision.
    const revision = options.hasRevisions && exact ? changes.revision : null;
    if (revision !== null) noteRevision(c, revision, now);
    const at: Moment = { exact, revision, now, options, unsettled: c.unsettled };
    const touched = new Set<string>();
    for (const lock of changes.changed) {
      let r = c.locks.get(lock.id);
      if (!r) c.locks.set(lock.id, (r = newRecord(now)));
      // A lock the model had without a record (dropped beyond MAX_LOCKS) was held before: nothing of it is exact.
      observeLock(r, lock, w.present.has(lock.id) && r.holds.length === 0 ? { ...at, exact: false, revision: null } : at);
      w.present.add(lock.id);
      touched.add(lock.id);
    }
    for (const id of changes.removed) {
      w.present.delete(id);
      const r = c.locks.get(id);
      if (!r) continue;
      observeLock(r, { holder: null, waiters: [] }, at);
      touched.add(id);
    }
    // What was holding or waiting when the watch began (or the records were saved) but is not in its first full load
    // is gone, at some unseen time.
    if (!w.loaded && changes.resynced) {
      w.loaded = true;
      for (const [id, r] of c.locks) {
        if (touched.has(id) || (!r.current && r.waits.size === 0)) continue;
        observeLock(r, { holder: null, waiters: [] }, { ...at, exact: false, revision: null });
        touched.add(id);
      }
    }
    pruneLocks(c);
    if (touched.size) this.changeEmitter.fire({ connection, lockIds: [...touched] });
  }

  /**
   * The connection's watch starts over (a new connection, Refresh, new prefixes): its first full load says what is
   * still there, as after a restart, and the handoff rate's window starts again.
   */
  restart(connection: string): void {
    this.watching.delete(connection);
  }

  /** Folds in TTL samples: the current holders' last samples, and stalls (a holder's TTL not being renewed). */
  observeLeases(connection: string, infos: readonly LeaseInfo[]): void {
    const c = this.byConnection.get(connection);
    if (!c || infos.length === 0) return;
    const holding = new Map<string, [string, LockRecord][]>();
    for (const [id, r] of c.locks) {
      for (const lease of new Set(holdingsOf(r).map((h) => h.lease))) if (lease) holding.set(lease, [...(holding.get(lease) ?? []), [id, r]]);
    }
    const touched: string[] = [];
    for (const info of infos) {
      for (const [id, r] of holding.get(info.id) ?? []) if (observeHolderLease(r, info)) touched.push(id);
    }
    if (touched.length) this.changeEmitter.fire({ connection, lockIds: touched });
  }

  /** Leases of ended holds whose end only the store can tell (a key deleted while its lease had time left). */
  unsettled(connection: string): string[] {
    return this.hasLeases.get(connection) ? [...(this.byConnection.get(connection)?.unsettled ?? [])] : [];
  }

  /** The store's answer for a lease of `unsettled`. */
  settle(connection: string, lease: string, end: HoldEnd): void {
    const c = this.byConnection.get(connection);
    if (!c?.unsettled.delete(lease)) return;
    const touched: string[] = [];
    for (const [id, r] of c.locks) {
      for (const h of r.holds) {
        if (h.lease === lease && h.endedAt !== null && h.end === null) {
          h.end = end;
          if (!touched.includes(id)) touched.push(id);
        }
      }
    }
    if (touched.length) this.changeEmitter.fire({ connection, lockIds: touched });
  }

  /** The holds of a lock seen so far, oldest first. */
  holds(connection: string, lockId: string): readonly ObservedHold[] {
    return this.byConnection.get(connection)?.locks.get(lockId)?.holds.map((h) => ({ ...h })) ?? [];
  }

  /**
   * The holds seen of the locks named `name`, with their layouts, for the layout a free name is taken in
   * (freeNameLayout.ts). A lock's id is its name's keyId, or that and one mark above latin1 where one name holds two
   * locks (an etcd single key and the queue under it: etcd/lockModel.ts).
   */
  holdsNamed(connection: string, name: Uint8Array): SeenHold[] {
    const id = keyId(name);
    const locks = this.byConnection.get(connection)?.locks ?? new Map<string, LockRecord>();
    return [...locks]
      .filter(([lockId]) => lockId === id || (lockId.length === id.length + 1 && lockId.startsWith(id) && lockId.charCodeAt(id.length) > 0xff))
      .flatMap(([, r]) => r.holds.flatMap((h) => (h.convention ? [{ convention: h.convention, at: h.acquiredAt }] : [])));
  }

  figures(connection: string, lockId: string, now = Date.now()): LockFigures | undefined {
    const r = this.byConnection.get(connection)?.locks.get(lockId);
    return r && figuresOf(r, this.watching.get(connection)?.since, now);
  }

  /** When `revision` happened, where LockLens saw it live (see timeOfRevision). */
  timeOfRevision(connection: string, revision: number): number | undefined {
    return timeOfRevision(this.byConnection.get(connection)?.revisionTimes ?? [], revision);
  }

  connections(): string[] {
    return [...this.byConnection.keys()];
  }

  forget(connection: string): void {
    this.byConnection.delete(connection);
    this.watching.delete(connection);
    this.hasLeases.delete(connection);
  }

  /** The records as JSON; `only` limits them to those connections. TTL samples are left out: stale by a restart. */
  toJSON(only?: ReadonlySet<string>): SavedRecords {
    return savedRecords([...this.byConnection].filter(([name]) => !only || only.has(name)));
  }

  /** Records saved by `toJSON`; throws on anything else, so that a damaged file is never half believed. */
  static fromJSON(json: unknown): LockStats {
    const stats = new LockStats();
    for (const [name, { locks, revisionTimes }] of loadedRecords(json)) {
      const unsettled = new Set<string>();
      for (const r of locks.values()) for (const h of r.holds) if (h.endedAt !== null && h.end === null && h.lease) unsettled.add(h.lease);
      stats.byConnection.set(name, { locks, revisionTimes, unsettled });
    }
    return stats;
  }

  /** Takes the records of the connections this instance has not observed from `saved` (another window's, saved since). */
  adopt(saved: LockStats): void {
    for (const [name, c] of saved.byConnection) if (!this.watching.has(name)) this.byConnection.set(name, c);
  }

  /** The connections this instance has observed, whose records it has whole. */
  observed(): Set<string> {
    return new Set(this.watching.keys());
  }

  private record(connection: string): ConnectionRecord {
    let c = this.byConnection.get(connection);
    if (!c) this.byConnection.set(connection, (c = { locks: new Map(), revisionTimes: [], unsettled: new Set() }));
    return c;
  }
}

/**
 * Beyond MAX_LOCKS, records that measured nothing go first (a lock only ever found in place by a load), then the
 * least recently active: a restart's first load of many locks never pushes out what was recorded before.
 */
function pruneLocks(c: ConnectionRecord): void {
  if (c.locks.size <= MAX_LOCKS) return;
  const measured = (r: LockRecord) => r.holdCount + r.waitCount + r.transitions > 0;
  const order = [...c.locks].sort(([, a], [, b]) => Number(measured(a)) - Number(measured(b)) || a.lastActive - b.lastActive);
  for (const [id] of order.slice(0, c.locks.size - MAX_LOCKS)) c.locks.delete(id);
}

/**
 * The diagnosis of one watched connection (issue 22), for serve and VS Code alike: the wait-for graph kept from every
 * change set of its watch, the lock orders the waits show, the deadlock detector, which reads the graph after each
 * sync of the watch so that a cycle counts only once a second synced read shows it again, and what the TTL samples of
 * each lock's holders said (for TTL fit). Pure: the caller syncs the watch and passes the time.
 */
import { displayKey } from '../keys';
import type { ObservedHold } from '../holdObservation';
import type { LeaseInfo } from '../leaseInfo';
import { isSemaphore, type ChangeSet, type LockMember, type LockState } from '../lockState';
import type { Cycle } from './cycle';
import { DeadlockDetector, type ConfirmedCycle, type DeadlockReport } from './detector';
import { LockOrder, type Inversion } from './inversions';
import { ttlFit, TtlRenewals, type TtlFit } from './ttlFit';
import { WaitForGraph } from './waitFor';

/** How often the graph is read after a sync of the watch: a deadlock is confirmed within two of these. */
export const DIAGNOSE_INTERVAL_MS = 5000;

export class ConnectionDiagnosis {
  private readonly graph = new WaitForGraph();
  private readonly detector = new DeadlockDetector();
  private readonly order = new LockOrder();
  private readonly renewals = new TtlRenewals();
  /** A holder's lease → the locks it holds, and since when: where a TTL sample belongs. */
  private readonly holdsOfLease = new Map<string, Map<string, number>>();
  private readonly leasesOfLock = new Map<string, string[]>();

  /**
   * Every change set of the watch, in order; `heldSince` says since when a holder holds the lock (a semaphore's
   * holders each since they took their permit).
   */
  observe(changes: ChangeSet, now: number, heldSince?: (lock: LockState, holder: LockMember) => number | undefined): void {
    this.order.observe(this.graph.apply(changes), now);
    if (heldSince) this.indexLeases(changes, heldSince);
  }

  /** TTL samples of the watch: those of a lock's holder count for its TTL fit. */
  observeLeases(infos: readonly LeaseInfo[]): void {
    for (const info of infos) for (const [lockId, since] of this.holdsOfLease.get(info.id) ?? []) this.renewals.observe(lockId, since, info);
  }

  /** A read of the graph, made right after the watch was synced with the store. */
  check(now: number): DeadlockReport {
    return this.detector.read(this.graph.cycles(), now);
  }

  /** Whether a synced read can tell anything: the graph has cycles to confirm, or confirmed ones to clear. */
  get unsettled(): boolean {
    return this.detector.confirmed.length > 0 || this.graph.cycles().length > 0;
  }

  /** The graph has cycles the detector has not confirmed yet: another synced read will. */
  get pending(): boolean {
    const confirmed = new Set(this.detector.confirmed.map((c) => c.id));
    return this.graph.cycles().some((c) => !confirmed.has(c.id));
  }

  /** A new watch begins: its first change set is the whole model again. Lock orders seen before still count. */
  restart(): void {
    this.graph.clear();
    this.detector.reset();
    this.holdsOfLease.clear();
    this.leasesOfLock.clear();
  }

  /** Confirmed deadlocks now. */
  get deadlocks(): number {
    return this.detector.confirmed.length;
  }

  get cycles(): readonly ConfirmedCycle[] {
    return this.detector.confirmed;
  }

  /** The confirmed cycles that hold or wait in this lock. */
  cyclesOf(lockId: string): ConfirmedCycle[] {
    return this.detector.confirmed.filter((c) => cycleTouches(c, lockId));
  }

  /** Lock pairs seen taken in both orders within the window, but for a confirmed deadlock's own (see inversionList). */
  inversions(now: number): number {
    return this.inversionList(now).length;
  }

  /** The inversions seen within the window that are not a confirmed deadlock's own (which says more). */
  inversionList(now: number): Inversion[] {
    const cycles = this.detector.confirmed;
    return this.order.inversions(now).filter((i) => !cycles.some((c) => cycleTouches(c, i.locks[0].id) && cycleTouches(c, i.locks[1].id)));
  }

  /** Whether the lock's holds outrun a TTL nothing renews, from its holds measured (LockStats) and its TTL samples. */
  ttlFit(lock: LockState, holds: readonly ObservedHold[]): TtlFit | undefined {
    const ttl = this.renewals.of(lock.id);
    return ttl && ttlFit({ id: lock.id, name: displayKey(lock.name) }, ttl.ttlSeconds, ttl.renewal, holds);
  }

  private indexLeases(changes: ChangeSet, heldSince: (lock: LockState, holder: LockMember) => number | undefined): void {
    const gone = (id: string) => {
      for (const lease of this.leasesOfLock.get(id) ?? []) {
        const locks = this.holdsOfLease.get(lease);
        locks?.delete(id);
        if (locks?.size === 0) this.holdsOfLease.delete(lease);
      }
      this.leasesOfLock.delete(id);
    };
    for (const id of changes.removed) gone(id);
    for (const lock of changes.changed) {
      gone(lock.id);
      // A semaphore's holds are every permit holder's (holdObservation.ts): so is the evidence of their renewal.
      const holders = lock.holder && isSemaphore(lock) ? [lock.holder, ...(lock.sharedWith ?? [])] : lock.holder ? [lock.holder] : [];
      for (const holder of holders) {
        const since = heldSince(lock, holder);
        if (!holder.lease || since === undefined) continue;
        let locks = this.holdsOfLease.get(holder.lease);
        if (!locks) this.holdsOfLease.set(holder.lease, (locks = new Map()));
        locks.set(lock.id, since);
        this.leasesOfLock.set(lock.id, [...(this.leasesOfLock.get(lock.id) ?? []), holder.lease]);
      }
    }
  }
}

function cycleTouches(cycle: Cycle, lockId: string): boolean {
  return cycle.members.some((m) => m.holds.id === lockId || m.waitsIn.id === lockId);
}

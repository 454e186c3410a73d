/**
 * The events of one connection's watch (lockEventTypes.ts): what each change set and TTL sample says began or ended.
 * What a hold is, and how it ended, is holdObservation.ts's, as for VS Code's statistics; this keeps, per lock, only
 * what the next change needs (the open hold, the members queued), never the past, so that a watch of 10,000 locks
 * stays small. Pure: no store, no timers (`now` is passed in).
 */
import { displayKey } from './keys';
import { holdingCount, holdingsOf, identityOf, newRecord, NO_SAMPLES, observeHolderLease, observeLock, openHoldAt, openHolds, type LockRecord, type Moment, type ObservedHold, type ObserveOptions } from './holdObservation';
import type { LeaseInfo } from './leaseInfo';
import type { EventMember, HoldEnded, LockEvent } from './lockEventTypes';
import { holderCount, members, type ChangeSet, type LockKind, type LockState } from './lockState';

/** A hold that ended without the store saying how (an etcd key deleted while its lease had time left): ask about `lease`. */
export interface Unsettled {
  readonly event: HoldEnded;
  readonly lease: string;
}

export interface Observed {
  readonly events: LockEvent[];
  readonly unsettled: Unsettled[];
}

/** What is in place now at a lock, for gauges. */
export interface LockNow {
  /** When its holder began holding (or was found holding), epoch ms. */
  readonly heldSince: number | null;
  /** When its longest-queued member began waiting (or was found waiting), epoch ms. */
  readonly waitingSince: number | null;
}

interface Tracked {
  readonly name: string;
  readonly kind: LockKind;
  readonly record: LockRecord;
  /**
   * Who waits, by identity: a member that leaves the queue is no longer in the lock to say who it was. Made at the first
   * waiter, undefined again once the queue empties: most locks never have one.
   */
  waiters: Map<string, EventMember> | undefined;
}

export class LockEvents {
  /** Locks with a holder or members queued: a free lock keeps nothing. */
  private readonly locks = new Map<string, Tracked>();
  /**
   * The current holders' leases, and the lock or locks each holds: TTL samples are about leases. A lease holding one
   * lock (a Redis key, a lease per lock) keeps that lock's id rather than a Set of one.
   */
  private readonly holding = new Map<string, string | Set<string>>();
  /** The watch's first full read was seen: what was tracked before it and is not in it is gone. */
  private loaded = false;

  constructor(private readonly connection: string) {}

  /** Folds in one change set of the watch; call it for every change set, in order. */
  observe(changes: ChangeSet, options: ObserveOptions, now: number): Observed {
    // Leases to ask about are told with the events (`unsettled`), not kept.
    const at: Moment = { exact: !changes.resynced, revision: null, now, options, unsettled: new Set() };
    const out: Observed = { events: [], unsettled: [] };
    const touched = new Set<string>();
    for (const lock of changes.changed) {
      this.step(lock.id, lock, at, out);
      touched.add(lock.id);
    }
    for (const id of changes.removed) {
      this.step(id, undefined, at, out);
      touched.add(id);
    }
    if (!this.loaded && changes.resynced) {
      this.loaded = true;
      const found: Moment = { ...at, exact: false };
      for (const id of [...this.locks.keys()]) if (!touched.has(id)) this.step(id, undefined, found, out);
    }
    return out;
  }

  /** Folds in TTL samples: what the current holders expire with, which tells an expiry from a release. */
  observeLeases(infos: readonly LeaseInfo[]): void {
    for (const info of infos) {
      const held = this.holding.get(info.id);
      if (typeof held === 'string') observeHolderLease(this.locks.get(held)!.record, info);
      else for (const id of held ?? []) observeHolderLease(this.locks.get(id)!.record, info);
    }
  }

  /** A new watch of the connection begins (after a reconnect): its first full read says what is still there. */
  restart(): void {
    this.loaded = false;
  }

  now(lockId: string): LockNow | undefined {
    const t = this.locks.get(lockId);
    if (!t) return undefined;
    const r = t.record;
    let waitingSince: number | null = null;
    for (const w of r.waits.values()) waitingSince = Math.min(waitingSince ?? w.since, w.since);
    return { heldSince: openHoldAt(r, 0)?.acquiredAt ?? null, waitingSince };
  }

  /** How many locks have a holder or a queue (what this keeps). */
  get size(): number {
    return this.locks.size;
  }

  /** One lock's new state (undefined: gone), as seen `at`. */
  private step(id: string, lock: LockState | undefined, at: Moment, out: Observed): void {
    let t = this.locks.get(id);
    if (!t) {
      if (!lock || (!lock.holder && lock.waiters.length === 0)) return;
      t = { name: displayKey(lock.name), kind: lock.kind, record: newRecord(at.now), waiters: undefined };
      this.locks.set(id, t);
    }
    const r = t.record;
    const open = openHolds(r).filter((h) => h !== undefined);
    const leases = leasesOf(r);
    // The queue before: observeLock replaces the record's, never changes it.
    const queued = r.waits;
    observeLock(r, lock ?? { holder: null, waiters: [] }, at);
    const base = (member: EventMember, when: number, exact: boolean) => ({ connection: this.connection, lockId: id, lock: t.name, kind: t.kind, member, at: when, exact });

    const ended = open.filter((h) => h.endedAt !== null);
    for (const h of ended) {
      const event: HoldEnded = { ...base(memberOf(h), h.endedAt!, h.endedExact), type: 'holdEnded', how: h.end, heldMs: heldMs(h) };
      out.events.push(event);
      if (h.end === null && h.lease && at.options.hasLeases) out.unsettled.push({ event, lease: h.lease });
    }
    const holds = openHolds(r);
    const started = holdingsOf(r).flatMap(({ member }, i) => (holds[i] && !open.includes(holds[i]) ? [{ hold: holds[i], member }] : []));
    for (const [identity, wait] of queued) {
      if (r.waits.has(identity)) continue;
      const member = t.waiters!.get(identity)!;
      t.waiters!.delete(identity);
      const granted = started.some((s) => s.member === identity) || (lock !== undefined && holdsNow(lock, identity));
      out.events.push({ ...base(member, at.now, at.exact), type: 'waitEnded', granted, waitedMs: wait.exact && at.exact ? at.now - wait.since : null });
    }
    for (const { hold: h, member } of started) {
      // A handoff: a member seen queued takes the lock (a permit) as another's hold ends.
      const handoff = ended.length > 0 && at.exact && queued.has(member);
      out.events.push({ ...base(memberOf(h), h.acquiredAt, h.acquiredExact), type: 'holdStarted', waitedMs: h.waitedMs, handoff });
    }
    for (const w of lock?.waiters ?? []) {
      const identity = identityOf(w);
      if (queued.has(identity) || !r.waits.has(identity)) continue;
      const member = { key: displayKey(w.key), owner: w.owner, token: w.token };
      (t.waiters ??= new Map()).set(identity, member);
      out.events.push({ ...base(member, at.now, at.exact), type: 'waitStarted' });
    }
    this.noteLeases(id, leases, leasesOf(r));
    forgetThePast(r);
    if (t.waiters?.size === 0) t.waiters = undefined;
    if (!r.current && r.waits.size === 0) this.locks.delete(id);
  }

  private noteLeases(id: string, before: ReadonlySet<string>, after: ReadonlySet<string>): void {
    for (const lease of before) {
      if (after.has(lease)) continue;
      const held = this.holding.get(lease);
      if (held === id) this.holding.delete(lease);
      else if (typeof held === 'object') {
        held.delete(id);
        if (held.size === 1) this.holding.set(lease, held.values().next().value!);
      }
    }
    for (const lease of after) {
      const held = this.holding.get(lease);
      if (held === undefined) this.holding.set(lease, id);
      else if (typeof held === 'string') {
        if (held !== id) this.holding.set(lease, new Set([held, id]));
      } else held.add(id);
    }
  }
}

/** What the holders expire with. */
function leasesOf(r: LockRecord): Set<string> {
  return new Set(holdingsOf(r).flatMap((h) => (h.lease ? [h.lease] : [])));
}

/** Whether the member `identity` holds the lock now (a reader joining a shared hold is not the holder a record follows). */
function holdsNow(lock: LockState, identity: string): boolean {
  return members(lock).slice(0, holderCount(lock)).some((m) => identityOf(m) === identity);
}

function memberOf(h: ObservedHold): EventMember {
  return { key: h.key, owner: h.owner, token: h.token };
}

function heldMs(h: ObservedHold): number | null {
  return h.acquiredExact && h.endedExact ? h.endedAt! - h.acquiredAt : null;
}

/**
 * Keeps of the record only the open holds: the figures over past holds are VS Code's statistics', not the events'.
 * What is already empty, or holds only open holds, is left as it is rather than made again at every change.
 */
function forgetThePast(r: LockRecord): void {
  // Sliced: a filtered array has room for 17 holds, and this is kept for every lock held.
  if (r.holds.length !== holdingCount(r) || r.holds.some((h) => h.endedAt !== null)) r.holds = openHolds(r).filter((h) => h !== undefined).slice();
  r.holdMs = NO_SAMPLES;
  r.waitMs = NO_SAMPLES;
  if (r.handoffs.length) r.handoffs = [];
}

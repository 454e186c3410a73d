/**
 * What one lock's change sets and TTL samples say about its holds and waits: who held, from when to when, how it
 * ended, how long it had waited. Pure (no store, no timers: `now` is passed in); LockStats keeps a record per lock of
 * each connection and feeds it in order. A semaphore's record follows every permit holder at once: each permit taken
 * is a hold, from when its holder was first seen holding to when that member went.
 *
 * Only what was seen from its start counts as a sample: a hold or a wait already in place when LockLens looked (the
 * first read, a resync after a disconnection, a new watch) is recorded as inexact, and so is an end found by a reload;
 * neither is measured, so no figure is made up.
 */
import type { HoldEnd } from './history';
import { endOfGone, fellBelow, type EndEvidence } from './holdEndEvidence';
import { displayKey, keyId } from './keys';
import type { LeaseInfo } from './leaseInfo';
import { endsWithOwner, isSemaphore, members, type LockMember, type LockState } from './lockState';
import type { Mutable } from '../shared/mutable';

/** One hold as LockLens saw it. Plain data (JSON as it is): the records are saved as they are. */
export interface ObservedHold {
  /** The member that held, as display text. */
  readonly key: string;
  /** Its layout (`LockMember.convention`); absent in records saved before it was kept. */
  readonly convention?: string;
  readonly owner: string;
  /** What it expired with (an etcd lease in hex, a Redis key), '' for nothing. */
  readonly lease: string;
  readonly token: number | null;
  /** Epoch ms it was seen to become the holder; with `acquiredExact` false, when it was found holding. */
  readonly acquiredAt: number;
  readonly acquiredExact: boolean;
  /** The store revision it was seen holding at, where the store has revisions. */
  readonly acquiredRevision: number | null;
  /** How long it had waited in the queue before it held, when LockLens saw it queue. */
  readonly waitedMs: number | null;
  /** Epoch ms it was seen to end; with `endedExact` false, when a reload found it gone (it ended earlier). */
  readonly endedAt: number | null;
  readonly endedExact: boolean;
  /** The revision of the change that ended it, where the store has revisions and the end was seen live. */
  readonly endedRevision: number | null;
  /** How it ended (see HoldEnd); null while it holds, and while the store has not yet said (see `unsettled`). */
  readonly end: HoldEnd | null;
  /** Its TTL was seen not being renewed while it held. */
  readonly stalled: boolean;
}


export interface Longest {
  readonly ms: number;
  /** Its owner, or its key where it has none. */
  readonly who: string;
}

export interface ObserveOptions {
  /** Members' leases outlive their keys and can be revoked (etcd): how a deleted key ended is the store's to say. */
  readonly hasLeases: boolean;
  /** Change sets carry the store's revision (etcd), not a count of reads. */
  readonly hasRevisions: boolean;
  /**
   * What members expire with has a TTL that is sampled (etcd leases, Redis keys); without (a ZooKeeper session, whose
   * time left cannot be read) a member that went is not known to have been released rather than expired.
   */
  readonly sampledTtls: boolean;
  /** The last TTL sample of what a member expires with. */
  readonly lease: (id: string) => LeaseInfo | undefined;
  /** LockLens itself ended the member with this lease or owner (ownEnds.ts): its end is `forceReleased`. */
  readonly ownEnd?: (lease: string, owner: string) => boolean;
  /** Whether a session or connection lived at the watch's last read (`LockWatch.ownerLives`). */
  readonly ownerLives?: (id: string) => boolean | undefined;
}

export const MAX_HOLDS = 50;
const MAX_SAMPLES = 256;
/** Handoff times kept: the window's worth, bounded for a lock handing off thousands of times a minute. */
const MAX_HANDOFFS = 10_000;
/** What the handoff rate is over. */
export const HANDOFF_WINDOW_MS = 10 * 60_000;
/** What the last TTL samples of the current holder's lease say, enough to tell an expiry. */
interface TtlSample {
  /** The last sample that found it alive: seconds left, and when. */
  readonly ttl: number;
  readonly observedAt: number;
  /** A later sample found it gone (an etcd lease revoked or expired; a Redis key no longer there). */
  readonly gone: boolean;
  readonly stalled: boolean;
  /** The store sends expiry events for it (see LeaseInfo), and whether it sent one. */
  readonly expiryEvents: boolean;
  readonly expiryTold: boolean;
  /** A sample of this hold found the TTL moved earlier (holdEndEvidence.ts's `fellBelow`). */
  readonly shortened: boolean;
}

export interface Wait {
  readonly since: number;
  readonly exact: boolean;
  readonly who: string;
}

/** A member holding now: who it is (see identityOf), its lease, and its last TTL sample (not saved: stale by a restart). */
export interface Holding {
  member: string;
  lease: string;
  endsWithOwner?: boolean;
  sample: TtlSample | null;
}

/** What LockLens keeps of one lock. */
export interface LockRecord {
  since: number;
  /** When it last changed live (a reload is no activity): which records go first beyond MAX_LOCKS. */
  lastActive: number;
  /** Oldest first; the open ones are the holders' now (see openHolds). */
  holds: Mutable<ObservedHold>[];
  /** The holder now (a semaphore's first permit holder): see Holding. */
  current: Holding | null;
  /**
   * A semaphore's other permit holders now, in the order they began; absent while there are none (and in records saved
   * before it was kept). Each has a hold of its own: the open holds are theirs, oldest first, `current`'s the oldest.
   */
  otherHolders?: Holding[];
  /** Members queued now, by identity: replaced as it changes, never written to (NO_WAITS is every empty one). */
  waits: ReadonlyMap<string, Wait>;
  holdMs: readonly number[];
  waitMs: readonly number[];
  holdsSeen: number;
  holdCount: number;
  waitCount: number;
  transitions: number;
  /** When handoffs happened (epoch ms), those of the last HANDOFF_WINDOW_MS. */
  handoffs: number[];
  longestHold: Longest | null;
  longestWait: Longest | null;
  stalls: number;
}

/** When and how a change set was seen, for every lock it touches. */
export interface Moment {
  /** Seen as it happened (a watch event), not found so by a (re)load. */
  readonly exact: boolean;
  readonly revision: number | null;
  readonly now: number;
  readonly options: ObserveOptions;
  /** The connection's leases to ask the store about. */
  readonly unsettled: Set<string>;
}

/**
 * What a record has none of: shared by every record until it has some (serve keeps a record for each of 10,000 locks
 * held, most with no queue and no samples). Each is replaced, never written to, as the record changes (frozen, the
 * array throws if it ever is, rather than fill every record).
 */
const NO_WAITS: ReadonlyMap<string, Wait> = new Map();
export const NO_SAMPLES: readonly number[] = Object.freeze([]);

export function newRecord(now: number): LockRecord {
  return {
    since: now,
    lastActive: now,
    holds: [],
    current: null,
    waits: NO_WAITS,
    holdMs: NO_SAMPLES,
    waitMs: NO_SAMPLES,
    holdsSeen: 0,
    holdCount: 0,
    waitCount: 0,
    transitions: 0,
    handoffs: [],
    longestHold: null,
    longestWait: null,
    stalls: 0,
  };
}

/** Folds in one state of the lock (its holders and waiters now), as seen `at`. */
export function observeLock(r: LockRecord, lock: Pick<LockState, 'holder' | 'waiters'> & Partial<Pick<LockState, 'kind' | 'sharedWith'>>, at: Moment): void {
  if (at.exact) r.lastActive = at.now;
  const present = new Set(members(lock as LockState).map(identityOf));
  const semaphore = lock.kind !== undefined && isSemaphore(lock as LockState);
  // Each of a semaphore's holders has a permit, and a hold, of its own; another lock's shared holders are not followed.
  const holders = semaphore ? permitHolders(lock) : lock.holder ? [lock.holder] : [];
  const holderIds = holders.map(identityOf);
  const holding = holdingsOf(r);
  const opens = openHolds(r);
  holding.forEach((h, i) => {
    if (holderIds.includes(h.member)) return;
    // An end found by a (re)load happened at some unseen time: no TTL sample can say how (but LockLens knows its own).
    const open = opens[i];
    const own = open && at.options.ownEnd?.(open.lease, open.owner);
    const end = present.has(h.member) ? 'released' : own ? 'forceReleased' : at.exact ? endOfGone(evidenceOf(h, at), at.options) : null;
    endHold(open, r, at, end);
  });
  const staying = holding.filter((h) => holderIds.includes(h.member));
  const held = new Set(staying.map((h) => h.member));
  setHoldings(r, staying);
  holders.forEach((holder, i) => {
    if (!held.has(holderIds[i])) startHold(r, holder, holderIds[i], at);
  });
  if (r.waits.size === 0 && lock.waiters.length === 0) return;
  // A wait that ends without holding (given up, expired) is a wait all the same. A semaphore's waiter that took a
  // permit ended its wait as it began its hold.
  const queued = semaphore ? new Set(lock.waiters.map(identityOf)) : present;
  const waits = new Map<string, Wait>();
  for (const [id, wait] of r.waits) {
    if (queued.has(id)) waits.set(id, wait);
    else if (wait.exact && at.exact) sampleWait(r, at.now - wait.since, wait.who);
  }
  for (const w of lock.waiters) {
    const id = identityOf(w);
    if (!waits.has(id)) waits.set(id, { since: at.now, exact: at.exact, who: whoOf(w) });
  }
  r.waits = waits.size ? waits : NO_WAITS;
}

function withoutWait(waits: ReadonlyMap<string, Wait>, id: string): ReadonlyMap<string, Wait> {
  if (waits.size === 1) return NO_WAITS;
  const rest = new Map(waits);
  rest.delete(id);
  return rest;
}

function permitHolders(lock: Pick<LockState, 'holder'> & Partial<Pick<LockState, 'sharedWith'>>): LockMember[] {
  return lock.holder ? [lock.holder, ...(lock.sharedWith ?? [])] : [];
}

/** Who holds now, oldest hold first. */
export function holdingsOf(r: LockRecord): Holding[] {
  return r.current ? [r.current, ...(r.otherHolders ?? [])] : [];
}

function setHoldings(r: LockRecord, holding: Holding[]): void {
  r.current = holding[0] ?? null;
  if (holding.length > 1) r.otherHolders = holding.slice(1);
  else delete r.otherHolders;
}

/**
 * The open hold of each holder (holdingsOf's order): the open holds are theirs in the same order, since a hold ends as
 * its holder goes and pruning keeps open holds.
 */
export function openHolds(r: LockRecord): (Mutable<ObservedHold> | undefined)[] {
  return holdingsOf(r).map((_, i) => openHoldAt(r, i));
}

/**
 * The open hold of the `i`th holder (openHolds' `[i]`), found without building arrays: serve asks it of every lock at
 * every scrape and of every holder at every TTL sample.
 */
export function openHoldAt(r: LockRecord, i: number): Mutable<ObservedHold> | undefined {
  const holders = holdingCount(r);
  let open = 0;
  for (const h of r.holds) if (h.endedAt === null) open++;
  let k = open - holders + i;
  if (i >= holders || k < 0) return undefined;
  for (const h of r.holds) if (h.endedAt === null && k-- === 0) return h;
  return undefined;
}

/** How many hold now (holdingsOf's length). */
export function holdingCount(r: LockRecord): number {
  return r.current ? 1 + (r.otherHolders?.length ?? 0) : 0;
}

/**
 * Who a member is: its key, fencing token and owner. A key alone is not enough: a Redis token lock's one key, an etcd
 * single key re-created, or a Go session locking again within one coalesced change set are new holds on the same key.
 */
export function identityOf(m: LockMember): string {
  return JSON.stringify([keyId(m.key), m.token, m.owner]);
}

function startHold(r: LockRecord, holder: LockMember, holderId: string, at: Moment): void {
  const wait = r.waits.get(holderId);
  if (wait) r.waits = withoutWait(r.waits, holderId);
  const waitedMs = wait?.exact && at.exact ? at.now - wait.since : null;
  if (waitedMs !== null) sampleWait(r, waitedMs, wait!.who);
  if (at.exact) {
    r.transitions++;
    if (wait) {
      r.handoffs.push(at.now);
      const inWindow = r.handoffs.findIndex((t) => at.now - t <= HANDOFF_WINDOW_MS);
      r.handoffs.splice(0, Math.max(inWindow, r.handoffs.length - MAX_HANDOFFS));
    }
  }
  r.holdsSeen++;
  // Concatenated, not pushed or spread: V8 gives those room for 17 holds, and serve keeps an array per lock held.
  r.holds = r.holds.concat([{
    key: displayKey(holder.key),
    convention: holder.convention,
    owner: holder.owner,
    lease: holder.lease,
    token: holder.token,
    acquiredAt: at.now,
    acquiredExact: at.exact,
    acquiredRevision: at.revision,
    waitedMs,
    endedAt: null,
    endedExact: false,
    endedRevision: null,
    end: null,
    stalled: false,
  }]);
  pruneHolds(r);
  const info = holder.lease ? at.options.lease(holder.lease) : undefined;
  setHoldings(r, [...holdingsOf(r), { member: holderId, lease: holder.lease, endsWithOwner: endsWithOwner(holder), sample: info ? sampleOf(info, null) : null }]);
}

/** Beyond MAX_HOLDS the oldest ended holds go: an open one is its holder's until it ends, however long that is. */
function pruneHolds(r: LockRecord): void {
  let excess = r.holds.length - MAX_HOLDS;
  if (excess > 0) r.holds = r.holds.filter((h) => h.endedAt === null || excess-- <= 0);
}

/** Folds in a TTL sample of a lease: true when it shows a holder with that lease newly stalled. */
export function observeHolderLease(r: LockRecord, info: LeaseInfo): boolean {
  let stalled = false;
  // Walked in place, as it runs for every holder's every TTL sample (2,000 Redis keys every 2 s in serve's bench).
  for (let i = 0; i < holdingCount(r); i++) {
    const h = i === 0 ? r.current! : r.otherHolders![i - 1];
    if (h.lease !== info.id) continue;
    const wasStalled = h.sample?.stalled ?? false;
    h.sample = sampleOf(info, h.sample);
    if (!info.stalled || wasStalled) continue;
    r.stalls++;
    const hold = openHoldAt(r, i);
    if (hold) hold.stalled = true;
    stalled = true;
  }
  return stalled;
}

/** A gone sample keeps the countdown of the last one that found the lease alive: that tells an expiry from a delete. */
function sampleOf(info: LeaseInfo, previous: TtlSample | null): TtlSample | null {
  const expiryEvents = info.expiryEvents ?? false;
  const expiryTold = info.expiryTold ?? false;
  if (info.state === 'alive') {
    const shortened = (previous?.shortened ?? false) || (previous !== null && !previous.gone && fellBelow(previous, info.ttl, info.observedAt));
    return { ttl: info.ttl, observedAt: info.observedAt, gone: false, stalled: info.stalled, expiryEvents, expiryTold, shortened };
  }
  if (previous) return { ...previous, gone: true, expiryTold: previous.expiryTold || expiryTold };
  return expiryTold ? { ttl: 0, observedAt: info.observedAt, gone: true, stalled: false, expiryEvents, expiryTold, shortened: false } : null;
}

function endHold(hold: Mutable<ObservedHold> | undefined, r: LockRecord, at: Moment, end: HoldEnd | null): void {
  if (!hold || hold.endedAt !== null) return;
  hold.endedAt = at.now;
  hold.endedExact = at.exact;
  hold.endedRevision = at.revision;
  hold.end = end;
  if (end === null && hold.lease) at.unsettled.add(hold.lease);
  if (!hold.acquiredExact || !at.exact) return;
  const ms = at.now - hold.acquiredAt;
  const who = hold.owner || hold.key;
  r.holdMs = [...r.holdMs, ms].slice(-MAX_SAMPLES);
  r.holdCount++;
  if (!r.longestHold || ms > r.longestHold.ms) r.longestHold = { ms, who };
}

function sampleWait(r: LockRecord, ms: number, who: string): void {
  r.waitMs = [...r.waitMs, ms].slice(-MAX_SAMPLES);
  r.waitCount++;
  if (!r.longestWait || ms > r.longestWait.ms) r.longestWait = { ms, who };
}

/** What the TTL samples of a holder whose key just went, or its owner's session, say of its end (holdEndEvidence.ts decides). */
function evidenceOf({ lease, endsWithOwner: withOwner, sample: s }: Holding, { now, options }: Moment): EndEvidence {
  return {
    endsWithOwner: withOwner ?? false,
    ownerLives: withOwner ? options.ownerLives?.(lease) : undefined,
    lease,
    secondsLeft: s ? s.ttl - (now - s.observedAt) / 1000 : undefined,
    leaseGone: s?.gone ?? false,
    expiryEvents: s?.expiryEvents ?? false,
    expiryTold: s?.expiryTold ?? false,
    shortened: s?.shortened ?? false,
  };
}

function whoOf(m: LockMember): string {
  return m.owner || displayKey(m.key);
}

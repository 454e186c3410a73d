import { Emitter, type Event } from './emitter';
import { HOLD_ENDS, type HoldEnd } from './history';
import { displayKey, keyId } from './keys';
import type { LeaseInfo } from './leaseInfo';
import { members, type ChangeSet, type LockMember, type LockState } from './lockState';
import { percentile } from './percentile';

/**
 * What LockLens has seen of each lock while it watched, for every store: the holds (who, from when to when, how it
 * ended, how long it had waited), and figures over them. Fed the same change sets and TTL samples as the views, in
 * order; pure (no store, no timers: `now` is passed in), and kept across restarts by whoever owns it (`toJSON`,
 * `fromJSON`). Bounded: MAX_LOCKS locks a connection (the least recently active go first), MAX_HOLDS holds a lock,
 * MAX_SAMPLES samples a figure.
 *
 * Only what was seen from its start counts as a sample: a hold or a wait already in place when LockLens looked (the
 * first read, a resync after a disconnection, a new watch) is recorded as inexact, and so is an end found by a reload;
 * neither is measured, so no figure is made up.
 */

/** One hold as LockLens saw it. Plain data (JSON as it is): the records are saved as they are. */
export interface ObservedHold {
  /** The member that held, as display text. */
  readonly key: string;
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

/** Samples of a duration: percentiles over the most recent MAX_SAMPLES, the maximum and count over all seen. */
export interface Spread {
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  readonly count: number;
}

export interface Longest {
  readonly ms: number;
  /** Its owner, or its key where it has none. */
  readonly who: string;
}

/**
 * How far a hold's shown duration (acquired to ended, or to now) can be trusted: exactly (''), at least ('≥ ': it was
 * found holding), at most ('≤ ': a reload found it gone), or not at all (null: both ends unseen).
 */
export function holdBound(h: ObservedHold): '' | '≥ ' | '≤ ' | null {
  const endSeen = h.endedAt === null || h.endedExact;
  if (h.acquiredExact) return endSeen ? '' : '≤ ';
  return endSeen ? '≥ ' : null;
}

export interface LockFigures {
  /** Epoch ms LockLens first saw the lock. */
  readonly since: number;
  /** Holds seen, found in place or seen from their start. */
  readonly holds: number;
  /** Holds seen from start to end; null before the first. */
  readonly hold: Spread | null;
  /** Waits seen from start to end (whether they ended holding or leaving); null before the first. */
  readonly wait: Spread | null;
  /** Handoffs (a waiter taking over) per minute, over the last HANDOFF_WINDOW_MS that LockLens watched. */
  readonly handoffsPerMinute: number;
  /** Times the holder changed while LockLens watched. */
  readonly transitions: number;
  readonly longestHold: Longest | null;
  readonly longestWait: Longest | null;
  /** Holds whose TTL was seen not being renewed. */
  readonly stalls: number;
}

export interface ObserveOptions {
  /** Members' leases outlive their keys and can be revoked (etcd): how a deleted key ended is the store's to say. */
  readonly revocableLeases: boolean;
  /** Change sets carry the store's revision (etcd), not a count of reads. */
  readonly hasRevisions: boolean;
  /**
   * What members expire with has a TTL that is sampled (etcd leases, Redis keys); without (a ZooKeeper session, whose
   * time left cannot be read) a member that went is not known to have been released rather than expired.
   */
  readonly sampledTtls: boolean;
  /** The last TTL sample of what a member expires with. */
  readonly lease: (id: string) => LeaseInfo | undefined;
}

export const MAX_LOCKS = 200;
export const MAX_HOLDS = 50;
export const MAX_SAMPLES = 256;
/** Handoff times kept: the window's worth, bounded for a lock handing off thousands of times a minute. */
const MAX_HANDOFFS = 10_000;
const MAX_REVISION_TIMES = 4096;
const HANDOFF_WINDOW_MS = 10 * 60_000;
/**
 * Two change sets at most this far apart bracket the time of every revision between them: the watch delivers within
 * milliseconds, so an unseen revision in between happened in that interval (placed at its end).
 */
const REVISION_BRACKET_MS = 1000;
const FORMAT = 1;
/**
 * A key that goes this close to its countdown's end ran out: a Redis key's expiry is reported when the server evicts
 * it, a few milliseconds either side of the PTTL sample's countdown.
 */
const EXPIRY_SLACK_S = 0.25;

/** What the last TTL samples of the current holder's lease say, enough to tell an expiry. */
interface TtlSample {
  /** The last sample that found it alive: seconds left, and when. */
  readonly ttl: number;
  readonly observedAt: number;
  /** A later sample found it gone (an etcd lease revoked or expired; a Redis key no longer there). */
  readonly gone: boolean;
  readonly stalled: boolean;
}

interface Wait {
  readonly since: number;
  readonly exact: boolean;
  readonly who: string;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

interface LockRecord {
  since: number;
  /** When it last changed live (a reload is no activity): which records go first beyond MAX_LOCKS. */
  lastActive: number;
  /** Oldest first; the last is open while `current` is set. */
  holds: Mutable<ObservedHold>[];
  /** The holder now: who it is (see identityOf), its lease, and its last TTL sample (not saved: stale by a restart). */
  current: { member: string; lease: string; sample: TtlSample | null } | null;
  /** Members queued now, by identity. */
  waits: Map<string, Wait>;
  holdMs: number[];
  waitMs: number[];
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

interface ConnectionRecord {
  readonly locks: Map<string, LockRecord>;
  /** [revision, epoch ms] pairs seen live, in revision order. */
  revisionTimes: [number, number][];
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
  private readonly revocable = new Map<string, boolean>();
  private readonly changeEmitter = new Emitter<LockStatsChange>();
  readonly onDidChange: Event<LockStatsChange> = this.changeEmitter.event;

  /** Folds in one change set of `connection`'s watch; call it for every change set, in order. */
  observe(connection: string, changes: ChangeSet, options: ObserveOptions, now = Date.now()): void {
    const c = this.record(connection);
    let w = this.watching.get(connection);
    if (!w) this.watching.set(connection, (w = { since: now, present: new Set(), loaded: false }));
    this.revocable.set(connection, options.revocableLeases);
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
      if (r.current?.lease) holding.set(r.current.lease, [...(holding.get(r.current.lease) ?? []), [id, r]]);
    }
    const touched: string[] = [];
    for (const info of infos) {
      for (const [id, r] of holding.get(info.id) ?? []) {
        const wasStalled = r.current!.sample?.stalled ?? false;
        r.current!.sample = sampleOf(info, r.current!.sample);
        if (info.stalled && !wasStalled) {
          r.stalls++;
          r.holds[r.holds.length - 1].stalled = true;
          touched.push(id);
        }
      }
    }
    if (touched.length) this.changeEmitter.fire({ connection, lockIds: touched });
  }

  /** Leases of ended holds whose end only the store can tell (a key deleted while its lease had time left). */
  unsettled(connection: string): string[] {
    return this.revocable.get(connection) ? [...(this.byConnection.get(connection)?.unsettled ?? [])] : [];
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

  figures(connection: string, lockId: string, now = Date.now()): LockFigures | undefined {
    const r = this.byConnection.get(connection)?.locks.get(lockId);
    if (!r) return undefined;
    // Over the part of the window LockLens watched: a minute after a restart, that minute's handoffs over a minute.
    const from = Math.max(now - HANDOFF_WINDOW_MS, this.watching.get(connection)?.since ?? now);
    const recent = r.handoffs.filter((t) => t >= from).length;
    const minutes = Math.max(1, (now - from) / 60_000);
    return {
      since: r.since,
      holds: r.holdsSeen,
      hold: spread(r.holdMs, r.holdCount, r.longestHold),
      wait: spread(r.waitMs, r.waitCount, r.longestWait),
      handoffsPerMinute: recent / minutes,
      transitions: r.transitions,
      longestHold: r.longestHold,
      longestWait: r.longestWait,
      stalls: r.stalls,
    };
  }

  /**
   * When `revision` happened, where LockLens saw it live: a change set at that revision, or two change sets close
   * enough together around it. Undefined otherwise: the store keeps no time.
   */
  timeOfRevision(connection: string, revision: number): number | undefined {
    const times = this.byConnection.get(connection)?.revisionTimes ?? [];
    // The first pair at or after `revision` (they are in revision order).
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (times[mid][0] < revision) lo = mid + 1;
      else hi = mid;
    }
    const i = lo;
    if (i === times.length) return undefined;
    const [r, at] = times[i];
    if (r === revision) return at;
    return i > 0 && at - times[i - 1][1] <= REVISION_BRACKET_MS ? at : undefined;
  }

  connections(): string[] {
    return [...this.byConnection.keys()];
  }

  forget(connection: string): void {
    this.byConnection.delete(connection);
    this.watching.delete(connection);
    this.revocable.delete(connection);
  }

  /** The records as JSON; `only` limits them to those connections. TTL samples are left out: stale by a restart. */
  toJSON(only?: ReadonlySet<string>): SavedRecords {
    const connections: Record<string, SavedConnection> = {};
    for (const [name, c] of this.byConnection) {
      if (only && !only.has(name)) continue;
      const locks = [...c.locks].map(([id, r]): [string, SavedLock] => [id, { ...r, current: r.current && { ...r.current, sample: null }, waits: [...r.waits] }]);
      connections[name] = { locks, revisionTimes: c.revisionTimes };
    }
    return { format: FORMAT, connections };
  }

  /** Records saved by `toJSON`; throws on anything else, so that a damaged file is never half believed. */
  static fromJSON(json: unknown): LockStats {
    if (!isObj(json) || json.format !== FORMAT || !isObj(json.connections)) throw new Error('not LockLens lock records');
    const stats = new LockStats();
    for (const [name, c] of Object.entries(json.connections)) {
      if (!isObj(c) || !Array.isArray(c.locks) || !isRevisionTimes(c.revisionTimes)) throw new Error(`damaged records of ${name}`);
      const record: ConnectionRecord = { locks: new Map(), revisionTimes: c.revisionTimes, unsettled: new Set() };
      for (const entry of c.locks) {
        if (!Array.isArray(entry) || typeof entry[0] !== 'string' || !isSavedLock(entry[1])) throw new Error(`damaged lock record in ${name}`);
        const r: LockRecord = { ...entry[1], waits: new Map(entry[1].waits) };
        record.locks.set(entry[0], r);
        for (const h of r.holds) if (h.endedAt !== null && h.end === null && h.lease) record.unsettled.add(h.lease);
      }
      stats.byConnection.set(name, record);
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

interface Moment {
  /** Seen as it happened (a watch event), not found so by a (re)load. */
  readonly exact: boolean;
  readonly revision: number | null;
  readonly now: number;
  readonly options: ObserveOptions;
  /** The connection's leases to ask the store about. */
  readonly unsettled: Set<string>;
}

function newRecord(now: number): LockRecord {
  return {
    since: now,
    lastActive: now,
    holds: [],
    current: null,
    waits: new Map(),
    holdMs: [],
    waitMs: [],
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

function observeLock(r: LockRecord, lock: Pick<LockState, 'holder' | 'waiters'>, at: Moment): void {
  if (at.exact) r.lastActive = at.now;
  const present = new Set(members(lock as LockState).map(identityOf));
  const holder = lock.holder;
  const holderId = holder && identityOf(holder);
  if (r.current && r.current.member !== holderId) {
    // An end found by a (re)load happened at some unseen time: no TTL sample can say how.
    const end = present.has(r.current.member) ? 'released' : at.exact ? endOfGone(r.current, at.options, at.now) : null;
    endHold(r, at, end);
  }
  if (holder && holderId && !r.current) startHold(r, holder, holderId, at);
  for (const w of lock.waiters) {
    const id = identityOf(w);
    if (!r.waits.has(id)) r.waits.set(id, { since: at.now, exact: at.exact, who: whoOf(w) });
  }
  // A wait that ends without holding (given up, expired) is a wait all the same.
  for (const [id, wait] of r.waits) {
    if (present.has(id)) continue;
    r.waits.delete(id);
    if (wait.exact && at.exact) sampleWait(r, at.now - wait.since, wait.who);
  }
}

/**
 * Who a member is: its key, fencing token and owner. A key alone is not enough: a Redis token lock's one key, an etcd
 * single key re-created, or a Go session locking again within one coalesced change set are new holds on the same key.
 */
function identityOf(m: LockMember): string {
  return JSON.stringify([keyId(m.key), m.token, m.owner]);
}

function startHold(r: LockRecord, holder: LockMember, holderId: string, at: Moment): void {
  const wait = r.waits.get(holderId);
  r.waits.delete(holderId);
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
  r.holds.push({
    key: displayKey(holder.key),
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
  });
  if (r.holds.length > MAX_HOLDS) r.holds.splice(0, r.holds.length - MAX_HOLDS);
  const info = holder.lease ? at.options.lease(holder.lease) : undefined;
  r.current = { member: holderId, lease: holder.lease, sample: info ? sampleOf(info, null) : null };
}

/** A gone sample keeps the countdown of the last one that found the lease alive: that tells an expiry from a delete. */
function sampleOf(info: LeaseInfo, previous: TtlSample | null): TtlSample | null {
  if (info.state === 'alive') return { ttl: info.ttl, observedAt: info.observedAt, gone: false, stalled: info.stalled };
  return previous && { ...previous, gone: true };
}

function endHold(r: LockRecord, at: Moment, end: HoldEnd | null): void {
  const hold = r.holds[r.holds.length - 1];
  r.current = null;
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

/**
 * How a holder whose key just went ended, from the TTL samples of what it expired with: a key without one was deleted;
 * its countdown seen running out is an expiry. Otherwise, where leases outlive keys (etcd), a key deleted while its
 * lease had time left went with its lease if a sample found the lease gone, and else only the store can tell whether
 * the lease lives on (null: ask it, see `unsettled`); a key that carried its own TTL (Redis) and went with time left
 * was deleted: released, or force-released. Without samples (a ZooKeeper session) nothing tells (null).
 */
function endOfGone(current: NonNullable<LockRecord['current']>, { revocableLeases, sampledTtls }: ObserveOptions, now: number): HoldEnd | null {
  if (!current.lease) return 'released';
  const s = current.sample;
  if (!s) return revocableLeases || !sampledTtls ? null : 'released';
  if (s.ttl - (now - s.observedAt) / 1000 <= EXPIRY_SLACK_S) return 'expired';
  if (revocableLeases) return s.gone ? 'revokedOrExpired' : null;
  return 'released';
}

function whoOf(m: LockMember): string {
  return m.owner || displayKey(m.key);
}

function spread(recent: readonly number[], count: number, longest: Longest | null): Spread | null {
  if (count === 0 || !longest) return null;
  return { p50: percentile(recent, 50), p95: percentile(recent, 95), max: longest.ms, count };
}

function noteRevision(c: ConnectionRecord, revision: number, now: number): void {
  const last = c.revisionTimes[c.revisionTimes.length - 1];
  if (last && last[0] === revision) return;
  // Revisions going back: the store was wiped or restored, and its old revisions name other events now.
  if (last && last[0] > revision) c.revisionTimes = c.revisionTimes.filter(([r]) => r < revision);
  c.revisionTimes.push([revision, now]);
  if (c.revisionTimes.length > MAX_REVISION_TIMES) c.revisionTimes.splice(0, c.revisionTimes.length - MAX_REVISION_TIMES);
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

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isNumOrNull = (v: unknown) => v === null || isNum(v);
const isNums = (v: unknown) => Array.isArray(v) && v.every(isNum);
const isLongest = (v: unknown) => v === null || (isObj(v) && isNum(v.ms) && typeof v.who === 'string');

function isRevisionTimes(v: unknown): v is [number, number][] {
  return Array.isArray(v) && v.every((p) => Array.isArray(p) && p.length === 2 && isNum(p[0]) && isNum(p[1]));
}

function isSample(v: unknown): boolean {
  return isObj(v) && isNum(v.ttl) && isNum(v.observedAt) && typeof v.gone === 'boolean' && typeof v.stalled === 'boolean';
}

function isHold(v: unknown): boolean {
  return (
    isObj(v) &&
    typeof v.key === 'string' &&
    typeof v.owner === 'string' &&
    typeof v.lease === 'string' &&
    isNumOrNull(v.token) &&
    isNum(v.acquiredAt) &&
    typeof v.acquiredExact === 'boolean' &&
    isNumOrNull(v.acquiredRevision) &&
    isNumOrNull(v.waitedMs) &&
    isNumOrNull(v.endedAt) &&
    typeof v.endedExact === 'boolean' &&
    isNumOrNull(v.endedRevision) &&
    (v.end === null || (HOLD_ENDS as readonly unknown[]).includes(v.end)) &&
    typeof v.stalled === 'boolean'
  );
}

/** A lock record as saved: its waits as [identity, wait] pairs. */
type SavedLock = Omit<LockRecord, 'waits'> & { readonly waits: [string, Wait][] };
interface SavedConnection {
  readonly locks: [string, SavedLock][];
  readonly revisionTimes: [number, number][];
}
export interface SavedRecords {
  readonly format: number;
  readonly connections: Record<string, SavedConnection>;
}

function isWait(v: unknown): boolean {
  return Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && isObj(v[1]) && isNum(v[1].since) && typeof v[1].exact === 'boolean' && typeof v[1].who === 'string';
}

function isSavedLock(v: unknown): v is SavedLock {
  if (!isObj(v) || !Array.isArray(v.holds) || !v.holds.every(isHold) || !Array.isArray(v.waits) || !v.waits.every(isWait)) return false;
  const current = v.current;
  const last = v.holds[v.holds.length - 1] as { endedAt: unknown } | undefined;
  // A current holder is the last hold, still open: anything else would be read as a hold that never ends.
  const currentOk =
    current === null ||
    (isObj(current) && typeof current.member === 'string' && typeof current.lease === 'string' && (current.sample === null || isSample(current.sample)) && last?.endedAt === null);
  return (
    currentOk &&
    [v.since, v.lastActive, v.holdsSeen, v.holdCount, v.waitCount, v.transitions, v.stalls].every(isNum) &&
    [v.holdMs, v.waitMs, v.handoffs].every(isNums) &&
    isLongest(v.longestHold) &&
    isLongest(v.longestWait)
  );
}

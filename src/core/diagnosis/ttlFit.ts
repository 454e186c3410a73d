/**
 * A TTL shorter than the work: a lock that expires by itself unless renewed (a redis-py `Lock(timeout=8)`, a ShedLock
 * row's `lockAtMostFor`), whose holds run close to or past its TTL, lets a second holder in while the first still
 * works. Built on what LockLens already measures: the holds of a lock (holdObservation.ts, as LockStats keeps them,
 * with how each ended) and the TTL samples of what its holders expire with (leaseInfo.ts). Pure: `now` is passed in.
 *
 * How "not renewed" is told. A renewal shows as a TTL that goes back up while the same hold lasts (LeaseInfo's
 * `refreshes`: a sample higher than the last one counted down). A hold is known renewed when such a rise comes after
 * the hold's first sample and a later sample of the same hold follows it: a Redis key set anew by the next holder
 * rises the same way, and the sampler can read it before the watch reports the new holder. Known not renewed when a
 * sample found it below its stall line with no rise since it began (observeLease: the line is where a renewing holder
 * never goes, half the TTL for Go, etcdctl and Redisson, which renew every third of it, a tenth for redis-semaphore,
 * which renews at four fifths; a lock-table row has none, and counts once a third of its TTL went by), or when it
 * ended by expiring. A lock whose holds were never seen renewed, and some seen not renewed, expires by itself.
 */
import type { ObservedHold } from '../holdObservation';
import { belowStallLine, DEFAULT_STALL_FRACTION, remainingTtl, type LeaseInfo } from '../leaseInfo';
import { percentile } from '../percentile';
import type { LockRef } from './cycle';

export type Renewal = 'renewed' | 'none' | 'unknown';

/** Holds whose p95 reaches this share of the TTL are flagged as close to it. */
export const APPROACH = 0.8;

export interface TtlFit {
  readonly lock: LockRef;
  readonly ttlSeconds: number;
  /** Over the holds measured from start to end. */
  readonly p95Seconds: number;
  readonly maxSeconds: number;
  readonly holds: number;
  /** Of those, how many ended by the TTL running out. */
  readonly expired: number;
  /** 'exceeds': holds already ran out their TTL; 'approaches': they come within APPROACH of it. */
  readonly level: 'exceeds' | 'approaches';
  readonly text: string;
}

/**
 * Where a store's holders are never told stalled (stallFraction 0: a lock-table row, which nothing renews but ShedLock's
 * KeepAliveLockProvider, whose extensions show as rises), the line for TTL fit: a third of the TTL gone, by when Go,
 * etcdctl and Redisson would have renewed.
 */
const NO_STALL_LINE = 2 / 3;

function renewalLine(info: LeaseInfo): number {
  const fraction = info.stallFraction ?? DEFAULT_STALL_FRACTION;
  return fraction > 0 ? fraction : NO_STALL_LINE;
}

/** A semaphore's permit holders whose holds are told apart at once (see TtlRenewals), beyond which the oldest go. */
const MAX_HOLDS_APART = 16;

/**
 * Per lock, what the TTL samples of its holders said while they held. Bounded by `maxLocks` (oldest dropped). Each
 * hold is known by its lease: a semaphore's permit holders hold at once, each its own lease sampled in turn.
 */
export class TtlRenewals {
  private readonly locks = new Map<string, { ttl: number; renewed: boolean; unrenewed: boolean; holds: Map<string, { since: number; firstAt: number }> }>();

  constructor(private readonly maxLocks = 10_000) {}

  /** A sample of what the holder of `lockId` (holding since `heldSince`) expires with. */
  observe(lockId: string, heldSince: number, info: LeaseInfo): void {
    if (info.state !== 'alive') return;
    const r = this.locks.get(lockId) ?? { ttl: 0, renewed: false, unrenewed: false, holds: new Map() };
    this.locks.delete(lockId);
    this.locks.set(lockId, r);
    let hold = r.holds.get(info.id);
    if (hold?.since !== heldSince) {
      r.holds.delete(info.id);
      r.holds.set(info.id, (hold = { since: heldSince, firstAt: info.observedAt }));
      if (r.holds.size > MAX_HOLDS_APART) r.holds.delete(r.holds.keys().next().value!);
    }
    const firstAt = hold.firstAt;
    r.ttl = Math.max(r.ttl, info.grantedTtl);
    const rises = info.refreshes.filter((t) => t > firstAt);
    if (rises.some((t) => t < info.observedAt)) r.renewed = true;
    else if (rises.length === 0 && belowStallLine(info.ttl, info.grantedTtl, renewalLine(info))) r.unrenewed = true;
    if (this.locks.size > this.maxLocks) this.locks.delete(this.locks.keys().next().value!);
  }

  /** The longest TTL granted while held, and whether holds were renewed; undefined before any sample. */
  of(lockId: string): { readonly ttlSeconds: number; readonly renewal: Renewal } | undefined {
    const r = this.locks.get(lockId);
    if (!r || r.ttl <= 0) return undefined;
    return { ttlSeconds: r.ttl, renewal: r.renewed ? 'renewed' : r.unrenewed ? 'none' : 'unknown' };
  }

  forget(lockId: string): void {
    this.locks.delete(lockId);
  }
}

/**
 * Whether the holds of a lock outrun its TTL: flagged when nothing renewed them, some hold was seen not renewed (or
 * ended by expiring), and the p95 of the holds measured reaches APPROACH of the TTL.
 */
export function ttlFit(lock: LockRef, ttlSeconds: number, renewal: Renewal, holds: readonly ObservedHold[]): TtlFit | undefined {
  const measured = holds.filter((h) => h.acquiredExact && h.endedExact && h.endedAt !== null);
  if (renewal === 'renewed' || ttlSeconds <= 0 || measured.length === 0) return undefined;
  const seconds = measured.map((h) => (h.endedAt! - h.acquiredAt) / 1000);
  const expired = measured.filter((h) => h.end === 'expired').length;
  if (renewal !== 'none' && expired === 0) return undefined;
  const p95 = percentile(seconds, 95);
  const max = Math.max(...seconds);
  if (p95 < APPROACH * ttlSeconds) return undefined;
  const level = expired > 0 || p95 >= ttlSeconds ? 'exceeds' : 'approaches';
  const ran = expired > 0 ? `; ${expired} of ${measured.length} holds ran until it expired` : '';
  const text =
    `holds run up to ${secondsText(max)} (p95 ${secondsText(p95)}); the lock expires after ${secondsText(ttlSeconds)} with nothing ` +
    `renewing it${ran}: ${level === 'exceeds' ? 'a second holder can get in' : 'a longer hold lets a second holder in'}`;
  return { lock, ttlSeconds, p95Seconds: p95, maxSeconds: max, holds: measured.length, expired, level, text };
}

/** Seen in two reads `first` then `second` of the same holder's TTL: the one hold in place now, by itself. */
export interface RunningHoldFit {
  readonly lock: LockRef;
  readonly ttlSeconds: number;
  /** How long it has held, told from its TTL: the granted TTL less what is left (no renewal came between). */
  readonly heldSeconds: number;
  readonly remainingSeconds: number;
  readonly text: string;
}

/**
 * A hold in place now that has run APPROACH of the TTL it was granted with nothing renewing it between two reads: a
 * ShedLock row's `lock_until − locked_at` (the granted TTL is counted from when the row was written), or any TTL
 * counting down unrenewed. Where the store does not say what was granted (Redis, whose first PTTL is all it knows),
 * nothing is told from two reads.
 */
export function runningHoldFit(lock: LockRef, first: LeaseInfo | undefined, second: LeaseInfo | undefined, now: number): RunningHoldFit | undefined {
  if (!first || !second || first.state !== 'alive' || second.state !== 'alive' || second.grantedTtl <= 0) return undefined;
  const rose = second.ttl > remainingTtl(first, second.observedAt) + 1;
  const remaining = remainingTtl(second, now);
  const held = second.grantedTtl - remaining;
  if (rose || held < APPROACH * second.grantedTtl) return undefined;
  const text =
    `this hold has run ${secondsText(held)} of the ${secondsText(second.grantedTtl)} it was granted, with nothing renewing it between two ` +
    `reads: it expires in ${secondsText(remaining)}, and a second holder can get in while it still works`;
  return { lock, ttlSeconds: second.grantedTtl, heldSeconds: held, remainingSeconds: remaining, text };
}

export function secondsText(s: number): string {
  return `${s >= 10 ? Math.round(s) : Math.round(s * 10) / 10} s`;
}

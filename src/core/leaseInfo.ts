/**
 * The life of whatever a lock member expires with (an etcd lease, a Redis key's PX), as LockLens samples it: stores
 * never push TTLs (etcd watchers do not see keepalives; Redis has no event for PEXPIRE unless notifications are on), so
 * refreshes and stalls are read off successive samples. Pure: no store, no timers.
 */

/** What LockLens knows of one lease (or key TTL). */
export interface LeaseInfo {
  /** The id members refer to it by (`LockMember.lease`): a lease in lowercase hex, a Redis key. */
  readonly id: string;
  readonly state: 'alive' | 'expired';
  readonly grantedTtl: number;
  /** Remaining seconds when sampled at `observedAt`; count down with `remainingTtl`. */
  readonly ttl: number;
  readonly observedAt: number;
  readonly firstSeenAt: number;
  /** When refreshes (keepalives) were detected, newest last, at most MAX_REFRESH_MARKS. */
  readonly refreshes: readonly number[];
  /** The holder is not renewing: the remaining TTL fell below `stallFraction` of the granted TTL. */
  readonly stalled: boolean;
  /**
   * The share of the granted TTL below which it is told stalled: where this store's renewing holders never go (0: the
   * store's holders are never stalled, a lock-table row's). Undefined: DEFAULT_STALL_FRACTION.
   */
  readonly stallFraction?: number;
  readonly keys: readonly Buffer[];
  /** The store sends an event when it expires (a Redis server with `expired` keyspace events): its silence is news. */
  readonly expiryEvents?: boolean;
  /** The store said it expired (not only that it is gone). */
  readonly expiryTold?: boolean;
}

export interface LeaseSample {
  readonly ttl: number;
  readonly grantedTtl: number;
  readonly keys: readonly Buffer[];
  readonly at: number;
}

export const MAX_REFRESH_MARKS = 32;

/** Go, etcdctl and Redisson renew every third of the TTL: a holder below half of it is not renewing (observeLease). */
export const DEFAULT_STALL_FRACTION = 0.5;

/**
 * Folds a new sample into what was known. A refresh is a TTL higher than the previous sample counted down (one second
 * of slack: etcd reports whole seconds). Stalled: Go, etcdctl and the etcd3 client renew every TTL/3, so a healthy
 * lease never drops below 2/3 of its granted TTL; below `stallFraction` (default 1/2) nobody is renewing it.
 */
export function observeLease(previous: LeaseInfo | undefined, id: string, sample: LeaseSample, stallFraction = DEFAULT_STALL_FRACTION): LeaseInfo {
  const expired = sample.ttl < 0;
  let refreshes = previous?.refreshes ?? [];
  if (previous && previous.state === 'alive' && !expired) {
    const expected = previous.ttl - (sample.at - previous.observedAt) / 1000;
    if (sample.ttl > expected + 1) refreshes = [...refreshes, sample.at].slice(-MAX_REFRESH_MARKS);
  }
  return {
    id,
    state: expired ? 'expired' : 'alive',
    grantedTtl: sample.grantedTtl,
    ttl: expired ? 0 : sample.ttl,
    observedAt: sample.at,
    firstSeenAt: previous?.firstSeenAt ?? sample.at,
    refreshes,
    stalled: !expired && belowStallLine(sample.ttl, sample.grantedTtl, stallFraction),
    stallFraction,
    keys: sample.keys,
  };
}

/** Whether `ttl` seconds left of `grantedTtl` means nobody is renewing (see observeLease); a TTL granted 0 never is. */
export function belowStallLine(ttl: number, grantedTtl: number, stallFraction = DEFAULT_STALL_FRACTION): boolean {
  return grantedTtl > 0 && ttl < grantedTtl * stallFraction;
}

/** Seconds left at `now`, counting down from the last sample. */
export function remainingTtl(info: LeaseInfo, now = Date.now()): number {
  if (info.state === 'expired') return 0;
  return Math.max(0, info.ttl - (now - info.observedAt) / 1000);
}

/** A second of slack either way: etcd reports whole seconds (see observeLease). */
const SAMPLE_SLACK_S = 1;

/**
 * Whether a lease known as `info` must be sampled `now` to tell what observeLease would: a stalled or expired one
 * always; an alive one once its countdown comes within a second of the stall line (below it, a sample that found no
 * refresh marks it stalled), not before. A refresh before then is seen at that sample, not at once: for whom refresh
 * marks matter (VS Code's TTL fit) every sample counts (`WatchOptions.countdowns`).
 */
export function sampleDue(info: LeaseInfo | undefined, now: number, stallFraction = DEFAULT_STALL_FRACTION): boolean {
  if (!info || info.state !== 'alive' || info.stalled) return true;
  return remainingTtl(info, now) <= info.grantedTtl * stallFraction + SAMPLE_SLACK_S;
}

/** Whether `next` (observeLease of `previous` and a sample) tells more than `previous` counted down: anything but the countdown moved. */
export function tellsNews(previous: LeaseInfo | undefined, next: LeaseInfo): boolean {
  return (
    !previous ||
    previous.state !== next.state ||
    previous.stalled !== next.stalled ||
    previous.grantedTtl !== next.grantedTtl ||
    previous.refreshes !== next.refreshes ||
    previous.expiryEvents !== next.expiryEvents ||
    previous.expiryTold !== next.expiryTold
  );
}

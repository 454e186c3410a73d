import { LockLensError } from './errors';
import { holderCount, type LockState } from './lockState';

/**
 * A semaphore's permits as views count them: held, of how many, how many free, each null where neither the store nor
 * the other figures tell it (a redis-semaphore's limit; an RSemaphore's holders, when its limit is unknown too).
 */
export interface PermitCount {
  readonly held: number | null;
  readonly limit: number | null;
  readonly free: number | null;
  /** Whether the holders are the members shown (see Permits.holdersRecorded). */
  readonly holdersRecorded: boolean;
}

/** The count of a semaphore's permits; undefined for any other lock. */
export function permitCount(lock: LockState): PermitCount | undefined {
  const p = lock.permits;
  if (!p) return undefined;
  const { limit, holdersRecorded } = p;
  const held = holdersRecorded ? holderCount(lock) : limit !== null && p.free !== null ? Math.max(0, limit - p.free) : null;
  const free = p.free ?? (limit !== null && held !== null ? Math.max(0, limit - held) : null);
  return { held, limit, free, holdersRecorded };
}

/** "2/3 permits held", "2 permits held (limit not recorded)", "1 permit free, holders not recorded": in English. */
export function permitsSummary(p: PermitCount): string {
  const permits = (n: number) => (n === 1 ? '1 permit' : `${n} permits`);
  if (!p.holdersRecorded) return `${p.free === null ? 'free permits unknown' : `${permits(p.free)} free`}, holders not recorded`;
  const held = p.held ?? 0;
  return p.limit === null ? `${permits(held)} held (limit not recorded)` : `${held}/${p.limit} permits held`;
}

/** A permit limit a caller gave (`AcquireOptions.permitLimit`), checked alike for every store: a whole number, at least 1. */
export function checkedPermitLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new LockLensError('INVALID_ARGUMENT', `a semaphore has a whole number of permits, at least 1, not ${limit}`);
  return limit;
}

import { keyId } from '../../src/core/keys';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import type { LockKind, LockMember, LockState, Permits } from '../../src/core/lockState';

/**
 * LockStates (and lease samples) for unit tests and the benchmark, as a store's reader would make them: a member's key
 * is `<lock>/<owner>` (a Go Mutex's key under its lease, named by its owner), its token a number that is new when it
 * holds or queues again.
 */
export function member(lock: string, owner: string, token = 1, mode?: 'read' | 'write'): LockMember {
  return {
    key: Buffer.from(`${lock}/${owner}`),
    convention: 'go-mutex',
    owner,
    expiresWith: owner ? 'lease' : 'nothing',
    lease: owner,
    token,
    holds: null,
    ...(mode ? { mode } : {}),
    valuePreview: Buffer.alloc(0),
    valueSize: 0,
  };
}

/** A lock `name` held by `holder` (none: null) with `waiters` queued in order; `tokens` gives members' tokens by owner. */
export function lockOf(name: string, holder: string | null, waiters: readonly string[] = [], options: { kind?: LockKind; tokens?: Record<string, number> } = {}): LockState {
  const token = (owner: string) => options.tokens?.[owner] ?? 1;
  return {
    id: keyId(Buffer.from(name)),
    name: Buffer.from(name),
    kind: options.kind ?? 'queue',
    holder: holder === null ? null : member(name, holder, token(holder)),
    waiters: waiters.map((w) => member(name, w, token(w))),
  };
}

/** A semaphore `name` whose permits `holders` hold, with `waiters` in order. */
export function semaphore(name: string, holders: readonly string[], waiters: readonly string[] = [], permits: Permits = { limit: holders.length, free: 0, holdersRecorded: true }): LockState {
  const [first, ...rest] = holders.map((h) => member(name, h));
  return { id: keyId(Buffer.from(name)), name: Buffer.from(name), kind: 'semaphore', holder: first ?? null, sharedWith: rest, waiters: waiters.map((w) => member(name, w)), permits };
}

/** A TTL sample of the lease `id` (a member's lease is its owner), alive with `ttl` seconds left at `observedAt`. */
export function leaseSample(id: string, ttl: number, observedAt: number, o: Partial<LeaseInfo> = {}): LeaseInfo {
  return { id, state: 'alive', grantedTtl: 10, ttl, observedAt, firstSeenAt: 0, refreshes: [], stalled: false, keys: [], ...o };
}

import { keyId } from './keys';
import { members, type LockMember, type LockState } from './lockState';

/** What revoking an owner (an etcd lease) does to one of the locks its keys are in. */
export interface RevokeEffect {
  readonly lock: LockState;
  /** The lease's keys in this lock, and where they stood (0: holder). */
  readonly positions: readonly number[];
  /** Whether the lock changes hands: the lease holds it now. */
  readonly frees: boolean;
  /** Who holds the lock after the revoke (the first member on another lease), or null if nobody is left. */
  readonly nextHolder: LockMember | null;
}

/**
 * The locks a revoke of `keys` (one lease's keys, deleted in one revision) affects, as the model shows them: for the
 * confirmation, so that the user sees which locks are freed and who gets them before anything is deleted.
 */
export function revokeEffects(keys: readonly Uint8Array[], lockOfKey: (key: Uint8Array) => LockState | undefined): RevokeEffect[] {
  const revoked = new Set(keys.map((k) => keyId(k)));
  const locks = new Map<string, LockState>();
  for (const key of keys) {
    const lock = lockOfKey(key);
    if (lock) locks.set(lock.id, lock);
  }
  return [...locks.values()].map((lock) => {
    const all = members(lock);
    const positions = all.flatMap((m, i) => (revoked.has(keyId(m.key)) ? [i] : []));
    return { lock, positions, frees: positions[0] === 0, nextHolder: all.find((m) => !revoked.has(keyId(m.key))) ?? null };
  });
}

import { call, type EtcdConnection } from './connection';
import { LockLensError } from '../errors';
import { keyId, leaseDecimal } from '../keys';
import { members, type LockMember, type LockState } from '../lockState';
import { sampleLease } from './leases';

export interface RevokeResult {
  /** The keys the lease held (deleted by the revoke, in one revision). */
  readonly keys: readonly Buffer[];
  readonly revision: number;
}

/** Revokes a lease; every key attached to it is deleted in the same revision. */
export async function revokeLease(conn: EtcdConnection, id: string): Promise<RevokeResult> {
  const sample = await sampleLease(conn, id);
  if (sample.ttl < 0) throw new LockLensError('LEASE_NOT_FOUND', `lease ${id} does not exist (expired or already revoked)`);
  const res = await call(conn.client.leaseClient.leaseRevoke({ ID: leaseDecimal(id) }));
  return { keys: sample.keys, revision: Number(res.header.revision) };
}

/** What revoking a lease does to one of its keys' locks. */
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

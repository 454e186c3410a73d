import { call, type EtcdConnection } from './connect';
import { LockLensError } from '../errors';
import { leaseDecimal } from '../keys';
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

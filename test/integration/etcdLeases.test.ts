import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep } from '../harness/etcd';
import { etcdSuite } from '../harness/suite';
import { LeaseTracker, leaseLives, sampleLease } from '../../src/core/etcd/leases';
import { revokeLease } from '../../src/core/etcd/revoke';
import { isLockLensError } from '../../src/core/errors';
import { leaseHex } from '../../src/core/keys';

describe('lease tracking and revoke against a real etcd', () => {
  const t = etcdSuite();

  async function grant(ttl: number, keys: string[] = []): Promise<string> {
    const res = await t.conn.client.leaseClient.leaseGrant({ TTL: ttl });
    for (const key of keys) await t.conn.client.kv.put({ key: Buffer.from(key), value: Buffer.alloc(0), lease: res.ID });
    return leaseHex(res.ID);
  }

  test('a sample gives remaining TTL, granted TTL and the attached keys', async () => {
    const id = await grant(30, ['lt/a/x', 'lt/b/y']);
    const s = await sampleLease(t.conn, id);
    assert.equal(s.grantedTtl, 30);
    assert.ok(s.ttl > 0 && s.ttl <= 30);
    assert.deepEqual(s.keys.map(String).sort(), ['lt/a/x', 'lt/b/y']);
  });

  test('an expired or revoked lease samples as TTL -1, does not live, and the tracker says expired', async () => {
    const id = await grant(30, ['lt/c/z']);
    assert.equal(await leaseLives(t.conn, id), true);
    await t.conn.client.leaseClient.leaseRevoke({ ID: BigInt('0x' + id).toString() });
    assert.equal((await sampleLease(t.conn, id)).ttl, -1);
    assert.equal(await leaseLives(t.conn, id), false);
    const tracker = new LeaseTracker(t.conn);
    await tracker.sweep([id]);
    assert.equal(tracker.get(id)?.state, 'expired');
  });

  test('a keepalive between two sweeps is detected as a refresh', async () => {
    const lease = t.conn.client.lease(10, { autoKeepAlive: false });
    const id = leaseHex(await lease.grant());
    t.scope.defer(() => lease.revoke().catch(() => undefined));
    const tracker = new LeaseTracker(t.conn);
    await tracker.sweep([id]);
    await sleep(2100); // etcd reports whole seconds: let the TTL visibly fall before renewing
    await lease.keepaliveOnce();
    await tracker.sweep([id]);
    assert.equal(tracker.get(id)!.refreshes.length, 1);
    assert.equal(tracker.get(id)!.stalled, false);
  });

  test('a lease nobody renews is flagged stalled once below half its TTL', async () => {
    const id = await grant(4);
    const tracker = new LeaseTracker(t.conn);
    await tracker.sweep([id]);
    assert.equal(tracker.get(id)!.stalled, false);
    await sleep(2600);
    await tracker.sweep([id]);
    assert.equal(tracker.get(id)!.stalled, true);
    assert.equal(tracker.get(id)!.refreshes.length, 0);
  });

  test('a sweep of 300 leases samples every one and forgets those no longer asked for', async () => {
    const ids = await Promise.all(Array.from({ length: 300 }, () => grant(60)));
    const tracker = new LeaseTracker(t.conn, { concurrency: 16 });
    const changed: number[] = [];
    tracker.onDidChange((infos) => changed.push(infos.length));
    await tracker.sweep(ids);
    assert.equal(tracker.all().length, 300);
    assert.deepEqual(changed, [300], 'one notification per sweep');
    await tracker.sweep(ids.slice(0, 10));
    assert.equal(tracker.all().length, 10);
  });

  test('revoke returns the keys it deleted; a second revoke says the lease is gone', async () => {
    const id = await grant(60, ['rv/job/1', 'rv/job/2']);
    const result = await revokeLease(t.conn, id);
    assert.deepEqual(result.keys.map(String).sort(), ['rv/job/1', 'rv/job/2']);
    assert.equal((await t.conn.client.getAll().prefix('rv/').keys()).length, 0);
    await assert.rejects(revokeLease(t.conn, id), (e) => isLockLensError(e, 'LEASE_NOT_FOUND'));
  });
});

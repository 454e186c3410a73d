import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdLockWatch } from '../../src/core/etcd/liveWatch';
import { leaseHex } from '../../src/core/keys';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import { eventually } from '../harness/etcd';
import { etcdSuite } from '../harness/suite';

describe('EtcdLockWatch against a real etcd', () => {
  const t = etcdSuite();

  /** A Go-mutex key `<name>/<lease hex>` on a new lease; returns the lease. */
  async function goKey(name: string, ttl: number): Promise<string> {
    const res = await t.conn.client.leaseClient.leaseGrant({ TTL: ttl });
    const lease = leaseHex(res.ID);
    await t.conn.client.kv.put({ key: Buffer.from(`${name}/${lease}`), value: Buffer.alloc(0), lease: res.ID });
    return lease;
  }

  test('a lock that appears after start has its lease sampled without waiting for the next sweep', async () => {
    const watch = new EtcdLockWatch(t.conn, [Buffer.from('cw1/')], { leaseSampleIntervalMs: 60_000 });
    t.scope.defer(() => watch.dispose());
    const seen: LeaseInfo[] = [];
    watch.onDidChangeLeases((infos) => seen.push(...infos));
    await watch.start();
    const lease = await goKey('cw1/jobs', 30);
    await eventually(() => seen.some((i) => i.id === lease && i.grantedTtl === 30), 5000, 'the new lease sampled');
    assert.equal(watch.lease(lease)?.state, 'alive');
  });

  test('sweeps follow the model: a revoked lease is forgotten once its keys are gone', async () => {
    const lease = await goKey('cw2/jobs', 30);
    const watch = new EtcdLockWatch(t.conn, [Buffer.from('cw2/')], { leaseSampleIntervalMs: 100 });
    t.scope.defer(() => watch.dispose());
    await watch.start();
    assert.equal(watch.lease(lease)?.grantedTtl, 30);
    assert.equal(watch.locks().length, 1);
    await t.conn.client.leaseClient.leaseRevoke({ ID: BigInt('0x' + lease).toString() });
    await eventually(() => watch.locks().length === 0, 5000, 'the lock gone');
    await eventually(() => watch.lease(lease) === undefined, 5000, 'the lease forgotten');
  });

  test('without countdowns, a lease nobody renews is told when first seen, when it stalls and when it expires, once each', async () => {
    const lease = await goKey('cw3/jobs', 6);
    const watch = new EtcdLockWatch(t.conn, [Buffer.from('cw3/')], { leaseSampleIntervalMs: 100, countdowns: false });
    t.scope.defer(() => watch.dispose());
    const told: LeaseInfo[] = [];
    watch.onDidChangeLeases((infos) => told.push(...infos));
    await watch.start();
    await eventually(() => watch.locks().length === 0, 15_000, 'the lock gone with its lease');
    assert.ok(told.every((i) => i.id === lease));
    const states = told.map((i) => (i.state === 'expired' ? 'expired' : i.stalled ? 'stalled' : 'alive'));
    // Sweeps every 100 ms for 6 s: with countdowns, about 60 of them would have been told.
    assert.deepEqual(states.slice(0, 2), ['alive', 'stalled']);
    assert.ok(states.length <= 3 && (states.length < 3 || states[2] === 'expired'), `told: ${states.join(', ')}`);
  });
});

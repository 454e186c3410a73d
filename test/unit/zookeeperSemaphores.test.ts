import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { keyId } from '../../src/core/keys';
import { parseContender } from '../../src/core/zookeeper/conventions';
import type { ContenderNode } from '../../src/core/zookeeper/lockOfChildren';
import { curatorSemaphoreOf, isKazooLease, kazooLimit, kazooSemaphoreOf, semaphoreRelated } from '../../src/core/zookeeper/semaphores';

const UUID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
const hex = (i: number) => i.toString(16).padStart(32, 'a');

function node(name: string, data: string, owner: bigint, czxid: bigint): ContenderNode {
  return { name, data: Buffer.from(data), dataLength: Buffer.byteLength(data), ephemeralOwner: owner, czxid, mzxid: czxid };
}

const text = (m: { valuePreview: Buffer }) => m.valuePreview.toString();

/** A client `i` (session i, its identifier as data) as kazoo writes it: its lease, or its node in the Lock. */
const lease = (i: number, who: string, czxid: bigint) => node(hex(i), who, BigInt(i), czxid);
const inLock = (i: number, seq: number, who: string, czxid: bigint) => node(`${hex(i)}__lock__${String(seq).padStart(10, '0')}`, who, BigInt(i), czxid);

describe("kazoo's Semaphore: leases under the path, its limit in the path's data, waiters in its Lock beside it", () => {
  test('two of three permits held, in the order they were taken; the Lock contenders wait in sequence order', () => {
    const leases = [lease(2, 'worker-b', 20n), lease(1, 'worker-a', 10n)];
    const sem = kazooSemaphoreOf('/app/pool', Buffer.from('3'), leases, [inLock(4, 5, 'worker-d', 40n), inLock(3, 4, 'worker-c', 30n)])!;
    assert.equal(sem.id, keyId(Buffer.from('/app/pool')));
    assert.equal(sem.kind, 'semaphore');
    assert.deepEqual(sem.permits, { limit: 3, free: 1, holdersRecorded: true });
    assert.equal(sem.holder?.key.toString(), `/app/pool/${hex(1)}`);
    assert.equal(sem.holder?.owner, '1');
    assert.equal(sem.holder?.lease, '1');
    assert.equal(sem.holder?.expiresWith, 'session');
    assert.equal(sem.holder?.token, 10);
    assert.equal(sem.holder?.convention, 'kazoo-semaphore');
    assert.deepEqual(sem.sharedWith?.map(text), ['worker-b']);
    assert.deepEqual(sem.waiters.map(text), ['worker-c', 'worker-d']);
    assert.equal(sem.waiters[0].key.toString(), `/app/pool-__lock__/${hex(3)}__lock__0000000004`);
  });

  test("the Lock's holder that has made its lease holds a permit and waits no more (it lets go of the Lock next)", () => {
    // Client 3 made its lease (czxid 31) after its node in the Lock (30).
    const sem = kazooSemaphoreOf('/s', Buffer.from('2'), [lease(1, 'a', 10n), lease(3, 'c', 31n)], [inLock(3, 1, 'c', 30n), inLock(4, 2, 'd', 40n)])!;
    assert.deepEqual([sem.holder, ...sem.sharedWith!].map((m) => text(m!)), ['a', 'c']);
    assert.deepEqual(sem.waiters.map(text), ['d']);
    assert.deepEqual(sem.permits, { limit: 2, free: 0, holdersRecorded: true });
  });

  test("the limit as kazoo reads it (int of the data); none where the data is no number; nobody there is no lock", () => {
    assert.equal(kazooLimit(Buffer.from('2')), 2);
    assert.equal(kazooLimit(Buffer.from(' 12\n')), 12);
    assert.equal(kazooLimit(Buffer.from('')), null, 'between kazoo creating the path and writing its limit');
    assert.equal(kazooLimit(Buffer.from('config')), null);
    const sem = kazooSemaphoreOf('/s', Buffer.from(''), [lease(1, 'a', 10n)], [])!;
    assert.deepEqual(sem.permits, { limit: null, free: null, holdersRecorded: true });
    assert.equal(kazooSemaphoreOf('/s', Buffer.from('2'), [], []), undefined);
  });

  test('only uuid4-hex children are leases; a waiter alone (the Lock held, no lease yet) is still the semaphore', () => {
    assert.ok(isKazooLease(hex(1)));
    for (const name of ['config', `${hex(1)}__lock__0000000001`, hex(1).toUpperCase(), hex(1).slice(1)]) assert.ok(!isKazooLease(name), name);
    const sem = kazooSemaphoreOf('/s', Buffer.from('1'), [node('config', '', 0n, 5n)], [inLock(3, 1, 'c', 30n)])!;
    assert.equal(sem.holder, null);
    assert.deepEqual(sem.sharedWith, []);
    assert.deepEqual(sem.waiters.map(text), ['c']);
    assert.deepEqual(sem.permits, { limit: 1, free: 1, holdersRecorded: true });
  });
});

describe("Curator's InterProcessSemaphoreV2: leases/ and locks/ under the path, its limit nowhere in the store", () => {
  const lease = (seq: number, data: string, owner: bigint, czxid: bigint) => node(`_c_${UUID}-lease-${String(seq).padStart(10, '0')}`, data, owner, czxid);
  const lock = (seq: number, data: string, owner: bigint, czxid: bigint) => node(`_c_${UUID}-lock-${String(seq).padStart(10, '0')}`, data, owner, czxid);

  test('leases are its holders in sequence order; the limit and the free permits are unknown', () => {
    assert.deepEqual(parseContender(`_c_${UUID}-lease-0000000003`), { convention: 'curator-semaphore', sequence: 3, read: false });
    const sem = curatorSemaphoreOf('/svc/sem', [lease(2, '10.0.0.2', 0x2n, 20n), lease(1, '10.0.0.1', 0x1n, 10n)], [])!;
    assert.equal(sem.kind, 'semaphore');
    assert.deepEqual(sem.permits, { limit: null, free: null, holdersRecorded: true });
    assert.equal(sem.holder?.key.toString(), `/svc/sem/leases/_c_${UUID}-lease-0000000001`);
    assert.equal(sem.holder?.convention, 'curator-semaphore');
    assert.deepEqual(sem.sharedWith?.map(text), ['10.0.0.2']);
    assert.deepEqual(sem.waiters, []);
  });

  test("the mutex's holder waits with the lease it made while holding it: that lease is no permit yet", () => {
    const sem = curatorSemaphoreOf(
      '/svc/sem',
      [lease(1, 'a', 0x1n, 10n), lease(2, 'b', 0x2n, 20n), lease(3, 'c', 0x3n, 31n)],
      [lock(4, 'd', 0x4n, 40n), lock(3, 'c', 0x3n, 30n)],
    )!;
    assert.deepEqual([sem.holder, ...sem.sharedWith!].map((m) => text(m!)), ['a', 'b']);
    assert.deepEqual(sem.waiters.map(text), ['c', 'd']);
    assert.equal(sem.waiters[0].key.toString(), `/svc/sem/locks/_c_${UUID}-lock-0000000003`);
    // A lease of the same session made before it queued for the mutex is a permit it holds already.
    const earlier = curatorSemaphoreOf('/svc/sem', [lease(1, 'c', 0x3n, 10n)], [lock(3, 'c', 0x3n, 30n)])!;
    assert.deepEqual([earlier.holder].map((m) => text(m!)), ['c']);
  });
});

test("the locks a change may touch: a semaphore's path with its parts, from any of them", () => {
  assert.ok(semaphoreRelated('/a/s-__lock__').includes('/a/s'));
  assert.ok(semaphoreRelated('/a/s').includes('/a/s-__lock__'));
  for (const part of ['/a/s/leases', '/a/s/locks']) {
    const names = semaphoreRelated(part);
    assert.ok(['/a/s', '/a/s/leases', '/a/s/locks'].every((n) => names.includes(n)), part);
  }
});

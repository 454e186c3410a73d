import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openBackend } from '../../src/core/stores';
import type { LockBackend } from '../../src/core/backend';
import { isLockLensError } from '../../src/core/errors';
import { readPrefix } from '../../src/core/etcd/keyspace';
import { etcdSuite } from '../harness/suite';

/** etcd behind the backend contract: what the views and the CLI see of it. */
describe('EtcdBackend against a real etcd', () => {
  const t = etcdSuite();

  const open = async (): Promise<LockBackend> => {
    const backend = await openBackend({ endpoints: [t.etcd.endpoint] });
    t.scope.defer(() => backend.close());
    return backend;
  };
  const keysUnder = async (prefix: string) => (await readPrefix(t.conn, Buffer.from(prefix))).records.map((r) => r.key.toString());

  test('says what etcd has: waiters, fencing tokens, TTLs, revocable leases, a queue, its history', async () => {
    const backend = await open();
    assert.equal(backend.kind, 'etcd');
    assert.deepEqual(backend.capabilities, { waiters: true, fencingTokens: true, ttl: true, owner: 'lease', queuedAcquire: true, readWriteLocks: false });
    assert.ok(backend.leases, 'lease operations are offered');
    assert.ok(backend.history, 'history replay is offered');
  });

  test('a read or write mode is refused (etcd has no read/write locks), and nothing is written', async () => {
    const backend = await open();
    for (const mode of ['read', 'write'] as const) {
      await assert.rejects(backend.acquire(Buffer.from('be/rw'), { ttlSeconds: 10, mode }), (e) => isLockLensError(e, 'INVALID_ARGUMENT') && /etcd has no read\/write locks/.test(e.message));
    }
    assert.deepEqual(await keysUnder('be/rw'), []);
  });

  test('acquire queues behind a holder, reports its place and token, and the listing shows both in order', async () => {
    const backend = await open();
    const first = await backend.acquire(Buffer.from('be/jobs'), { ttlSeconds: 10 });
    t.scope.defer(() => first.release().catch(() => undefined));
    const positions: number[] = [];
    const second = backend.acquire(Buffer.from('be/jobs'), { ttlSeconds: 10, onQueue: (p) => positions.push(p.ahead) });
    await (async () => {
      for (let i = 0; i < 100 && (await keysUnder('be/jobs/')).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    })();
    const listing = await backend.list([Buffer.from('be/')]);
    const [lock] = listing.locks;
    assert.equal(lock.holder?.owner, first.owner);
    assert.equal(lock.holder?.token, first.fencingToken);
    assert.equal(lock.waiters.length, 1);
    assert.ok(backend.acquirable(lock), 'a Go Mutex queue is ours to join');
    assert.equal(await first.release(), true);
    const held = await second;
    t.scope.defer(() => held.release().catch(() => undefined));
    assert.equal(positions[0], 1, 'told at once: one ahead');
    assert.ok(held.fencingToken! > first.fencingToken!, 'the token grows');
  });

  test('a key named with its lease zero-padded (%016x, as etcdctl lease grant prints it) is a queue member of its lock, as Go\'s %x is', async () => {
    const backend = await open();
    // A lease with a short id, whose printed form is padded: a script writes `etcdctl lease grant`'s output into its key.
    const id = 0x100000 + Math.floor(Math.random() * 0xfffff);
    await t.conn.client.leaseClient.leaseGrant({ TTL: 30, ID: String(id) });
    const lease = id.toString(16);
    const padded = lease.padStart(16, '0');
    t.scope.defer(() => t.etcd.etcdctl(['lease', 'revoke', lease]).catch(() => undefined));
    await t.etcd.etcdctl(['put', `be/padded/${padded}`, '', `--lease=${lease}`]);
    const [lock] = (await backend.list([Buffer.from('be/padded')])).locks;
    assert.equal(lock.name.toString(), 'be/padded', 'one lock, named without the lease');
    assert.equal(lock.kind, 'queue');
    assert.equal(lock.holder?.key.toString(), `be/padded/${padded}`);
    assert.equal(lock.holder?.owner, lease, 'owned by its lease');
    // Our acquire takes it for the holder of the same lock, not a lock of its own.
    await assert.rejects(backend.acquire(Buffer.from('be/padded'), { ttlSeconds: 10, tryOnly: true }), (e) => isLockLensError(e, 'LOCKED') && e.message.includes(padded));
    assert.deepEqual(await keysUnder('be/padded/'), [`be/padded/${padded}`]);
  });

  test('tryOnly on a held lock throws LOCKED and leaves no key', async () => {
    const backend = await open();
    const hold = await backend.acquire(Buffer.from('be/try'), { ttlSeconds: 10 });
    t.scope.defer(() => hold.release().catch(() => undefined));
    await assert.rejects(backend.acquire(Buffer.from('be/try'), { ttlSeconds: 10, tryOnly: true }), (e) => isLockLensError(e, 'LOCKED'));
    assert.deepEqual(await keysUnder('be/try/'), [`be/try/${hold.owner}`]);
  });

  test('forceRelease deletes the holder key the user saw; a key re-created since is left alone (LOCK_CHANGED)', async () => {
    const backend = await open();
    await t.etcd.etcdctl(['put', 'be/single', 'stuck']);
    const [shown] = (await backend.list([Buffer.from('be/single')])).locks;
    // Someone deletes and re-creates the key: same name, another create revision, so another lock.
    await t.etcd.etcdctl(['del', 'be/single']);
    await t.etcd.etcdctl(['put', 'be/single', 'new owner']);
    await assert.rejects(backend.forceRelease(shown, shown.holder!), (e) => isLockLensError(e, 'LOCK_CHANGED'));
    assert.deepEqual(await keysUnder('be/single'), ['be/single'], 'the new holder keeps its key');

    const [now] = (await backend.list([Buffer.from('be/single')])).locks;
    const result = await backend.forceRelease(now, now.holder!);
    assert.deepEqual(result.keys.map((k) => k.toString()), ['be/single']);
    assert.deepEqual(await keysUnder('be/single'), []);
    assert.match(backend.describeForceRelease(now, now.holder!), /no lease/);
  });
});

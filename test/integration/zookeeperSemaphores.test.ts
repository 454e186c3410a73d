import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as zookeeper from 'node-zookeeper-client';
import type { LockHold } from '../../src/core/backend';
import { isLockLensError } from '../../src/core/errors';
import { keyId } from '../../src/core/keys';
import type { LockState } from '../../src/core/lockState';
import { KazooSemaphore } from '../harness/kazoo';
import { eventually } from '../harness/redis';
import { drawn } from '../harness/zookeeper';
import { zooKeeperSuite } from '../harness/zookeeperSuite';

const b = (s: string) => Buffer.from(s);
const text = (m: { valuePreview: Buffer }) => m.valuePreview.toString();
const holders = (lock: LockState | undefined) => (lock?.holder ? [lock.holder, ...(lock.sharedWith ?? [])] : []);

describe('ZooKeeper semaphores (kazoo Semaphore, Curator InterProcessSemaphoreV2) against a real ZooKeeper', { timeout: 300_000 }, () => {
  const zk = zooKeeperSuite();
  const kazoo = (path: string, options: ConstructorParameters<typeof KazooSemaphore>[2] = {}) => {
    const peer = new KazooSemaphore(`127.0.0.1:${zk.server.port}`, path, options);
    zk.defer(() => peer.dispose());
    return peer;
  };
  const listed = async () => (await zk.backend.list([b(zk.path)])).locks;
  const lockAt = async (path: string) => (await listed()).find((l) => l.name.equals(b(path)));
  const hold = (h: LockHold) => (zk.defer(() => h.release().catch(() => false)), h);

  test("kazoo's Semaphore: one lock of two permits, its lease holders with their identifiers and sessions, its waiter; the watch agrees", async () => {
    const name = `${zk.path}/pool`;
    const watch = zk.backend.watch([b(zk.path)], { minNotifyIntervalMs: 0 });
    zk.defer(() => watch.dispose());
    await watch.start();
    // Watched by its own path too, before it exists: its Lock beside it is followed with it.
    const ownWatch = zk.backend.watch([b(name)], { minNotifyIntervalMs: 0 });
    zk.defer(() => ownWatch.dispose());
    await ownWatch.start();
    const a = kazoo(name, { identifier: 'worker-a', maxLeases: 2 });
    const [, leaseA, sessionA] = (await a.until(['acquired'])).split(' ');
    const c = kazoo(name, { identifier: 'worker-b', maxLeases: 2 });
    await c.until(['acquired']);
    const waiter = kazoo(name, { identifier: 'worker-c', maxLeases: 2 });
    const waiterSession = (await waiter.until(['waiting'])).split(' ')[1];
    await eventually(async () => (await lockAt(name))?.waiters.length === 1, 10_000, 'the waiter listed');
    const locks = await listed();
    assert.deepEqual(locks.map((l) => l.name.toString()), [name], "kazoo's Lock beside the path is no lock of its own");
    const sem = locks[0];
    assert.equal(sem.kind, 'semaphore');
    assert.deepEqual(sem.permits, { limit: 2, free: 0, holdersRecorded: true });
    assert.deepEqual(holders(sem).map(text), ['worker-a', 'worker-b'], 'in the order they took their permits');
    assert.equal(sem.holder?.key.toString(), `${name}/${leaseA}`);
    assert.equal(sem.holder?.owner, sessionA);
    assert.equal(sem.holder?.expiresWith, 'session');
    assert.equal(sem.holder?.convention, 'kazoo-semaphore');
    assert.equal(sem.holder?.token, Number((await zk.raw().exists(`${name}/${leaseA}`))!.czxid));
    // kazoo's Semaphore hands its Lock the identifier already encoded, and the Lock writes str() of those bytes.
    assert.deepEqual(sem.waiters.map((w) => [text(w), w.owner]), [["b'worker-c'", waiterSession]]);
    assert.match(sem.waiters[0].key.toString(), new RegExp(`^${name}-__lock__/[0-9a-f]{32}__lock__\\d{10}$`));
    const own = (await zk.backend.list([b(name)])).locks;
    assert.deepEqual(own.map((l) => [l.name.toString(), holders(l).length, l.waiters.length]), [[name, 2, 1]], "listed by its own path, with its Lock's waiters beside it");
    await eventually(() => watch.lock(keyId(b(name)))?.waiters.length === 1, 10_000, 'the watch sees the waiter');
    await eventually(() => ownWatch.lock(keyId(b(name)))?.waiters.length === 1, 10_000, 'the watch of its own path sees the waiter');
    assert.deepEqual(watch.locks().map((l) => l.name.toString()), [name]);
    assert.deepEqual(watch.lock(keyId(b(name)))?.permits, sem.permits);

    a.release();
    await waiter.until(['acquired']);
    await eventually(() => watch.lock(keyId(b(name)))?.waiters.length === 0, 10_000, 'the watch sees the waiter take the permit');
    assert.deepEqual(holders(watch.lock(keyId(b(name)))).map(text), ['worker-b', 'worker-c']);
    assert.deepEqual(holders(await lockAt(name)).map(text), ['worker-b', 'worker-c'], 'the watch equals a fresh read');
    await eventually(() => holders(ownWatch.lock(keyId(b(name)))).map(text).join() === 'worker-b,worker-c', 10_000, 'the watch of its own path too');
    assert.deepEqual(ownWatch.locks().map((l) => [l.name.toString(), l.waiters.length]), [[name, 0]]);
  });

  test('kazoo holds every permit: our acquire waits, and takes the one a kazoo holder gives back; kazoo counts ours', async () => {
    const name = `${zk.path}/pool`;
    const a = kazoo(name, { identifier: 'py-a', maxLeases: 2 });
    await a.until(['acquired']);
    const c = kazoo(name, { identifier: 'py-b', maxLeases: 2 });
    await c.until(['acquired']);
    const busy = await zk.backend.acquire(b(name), { ttlSeconds: 4, tryOnly: true }).catch((e: unknown) => e);
    assert.ok(isLockLensError(busy, 'LOCKED'), String(busy));
    const positions: number[] = [];
    let gateWritten = false;
    const events: string[] = [];
    const pending = zk.backend.acquire(b(name), { ttlSeconds: 4, onQueue: (q) => positions.push(q.ahead) }).then((h) => {
      events.push(gateWritten ? 'held after kazoo was told to release' : 'held while kazoo held every permit');
      return hold(h);
    });
    await eventually(() => positions.includes(1), 10_000, 'told we wait for a permit');
    const waiting = (await lockAt(name))!;
    assert.equal(waiting.waiters.length, 1, 'our contender for the Lock is the waiter');
    assert.equal(waiting.waiters[0].valuePreview.toString().startsWith('LockLens'), true);
    gateWritten = true;
    a.release();
    const ours = await pending;
    assert.deepEqual(events, ['held after kazoo was told to release']);
    assert.equal(positions.at(-1), 0);
    assert.match(ours.key.toString(), new RegExp(`^${name}/[0-9a-f]{32}$`), "a lease named as kazoo names them");
    const sem = (await lockAt(name))!;
    assert.deepEqual(holders(sem).map((m) => (m.key.equals(ours.key) ? 'ours' : text(m))).sort(), ['ours', 'py-b']);
    assert.equal(sem.waiters.length, 0, 'our Lock node is gone once the permit is ours');
    // A kazoo client at the limit now waits for ours.
    const late = kazoo(name, { identifier: 'py-late', maxLeases: 2, mode: 'try' });
    await late.until(['busy']);
    assert.equal(await ours.release(), true);
    const next = kazoo(name, { identifier: 'py-next', maxLeases: 2 });
    await next.until(['acquired']);
    assert.deepEqual(await next.holders(), ['py-b', 'py-next']);
  });

  test('we hold the one permit (a new path, made with our limit as kazoo makes it): a kazoo client waits and takes it when we release', async () => {
    const name = `${zk.path}/single`;
    const ours = hold(await zk.backend.acquire(b(name), { ttlSeconds: 4, permitLimit: 1 }));
    assert.equal((await zk.raw().data(name))?.data.toString(), '1', "the limit in the path's data, where kazoo keeps it");
    const waiter = kazoo(name, { identifier: 'py-waiter', maxLeases: 1 });
    await waiter.until(['waiting']);
    await eventually(async () => (await lockAt(name))?.waiters.length === 1, 10_000, 'kazoo waits behind our permit');
    const sem = (await lockAt(name))!;
    assert.deepEqual(sem.permits, { limit: 1, free: 0, holdersRecorded: true });
    assert.equal(sem.holder?.key.toString(), ours.key.toString());
    assert.equal(sem.holder?.owner, ours.owner);
    assert.equal(text(sem.waiters[0]), "b'py-waiter'");
    assert.equal(await ours.release(), true);
    const [, lease] = (await waiter.until(['acquired'])).split(' ');
    assert.equal((await lockAt(name))?.holder?.key.toString(), `${name}/${lease}`);
    // kazoo refuses a different limit than the one we stored, and so do we for kazoo's.
    assert.match(await kazoo(name, { maxLeases: 3 }).until(['refused']), /Inconsistent max leases: 1, expected: 3/);
    const refused = await zk.backend.acquire(b(name), { ttlSeconds: 4, permitLimit: 2 }).catch((e: unknown) => e);
    assert.ok(isLockLensError(refused, 'INVALID_ARGUMENT') && /1 permits, not 2/.test(refused.message), String(refused));
    const moded = await zk.backend.acquire(b(name), { ttlSeconds: 4, mode: 'read' }).catch((e: unknown) => e);
    assert.ok(isLockLensError(moded, 'INVALID_ARGUMENT') && /without a read or write mode/.test(moded.message), String(moded));
  });

  test('force release frees one permit, ours: only that lease is deleted, our hold says it is lost, the kazoo waiter takes it', async () => {
    const name = `${zk.path}/pool`;
    const ours = hold(await zk.backend.acquire(b(name), { ttlSeconds: 4, permitLimit: 2 }));
    const other = kazoo(name, { identifier: 'py-other', maxLeases: 2 });
    await other.until(['acquired']);
    const waiter = kazoo(name, { identifier: 'py-waiter', maxLeases: 2 });
    await waiter.until(['waiting']);
    await eventually(async () => (await lockAt(name))?.waiters.length === 1, 10_000, 'the kazoo waiter listed');
    const sem = (await lockAt(name))!;
    const shown = holders(sem).find((m) => m.key.equals(ours.key))!;
    assert.match(zk.backend.describeForceRelease(sem, shown), /other permit holders keep theirs/);
    await assert.rejects(zk.backend.forceRelease(sem, sem.waiters[0]), (e: unknown) => isLockLensError(e, 'INVALID_ARGUMENT'));
    await assert.rejects(zk.backend.forceRelease(sem, { ...shown, token: shown.token! + 1 }), (e: unknown) => isLockLensError(e, 'LOCK_CHANGED'));
    const lost = new Promise<string>((resolve) => ours.onDidLose((e) => resolve(e.message)));
    const result = await zk.backend.forceRelease(sem, shown);
    assert.deepEqual(result.keys.map(String), [ours.key.toString()]);
    assert.match(await lost, /deleted by someone else/);
    await waiter.until(['acquired']);
    assert.deepEqual(await waiter.holders(), ['py-other', 'py-waiter'], "the other kazoo holder's lease is untouched");
    await assert.rejects(zk.backend.forceRelease(sem, shown), (e: unknown) => isLockLensError(e, 'LOCK_CHANGED'));
  });

  test('a limit is needed to make a semaphore, a lock is not a semaphore, and cancelling a wait leaves nothing behind', async () => {
    const missing = await zk.backend.acquire(b(`${zk.path}/none`), { ttlSeconds: 4, permitLimit: 0 }).catch((e: unknown) => e);
    assert.ok(isLockLensError(missing, 'INVALID_ARGUMENT'), String(missing));
    const lockPath = `${zk.path}/plain`;
    const plain = hold(await zk.backend.acquire(b(lockPath), { ttlSeconds: 4 }));
    assert.ok(plain.key.toString().includes('__lock__'));
    const notSemaphore = await zk.backend.acquire(b(lockPath), { ttlSeconds: 4, permitLimit: 2 }).catch((e: unknown) => e);
    assert.ok(isLockLensError(notSemaphore, 'INVALID_ARGUMENT') && /is a lock, not a semaphore/.test(notSemaphore.message), String(notSemaphore));

    const name = `${zk.path}/pool`;
    const holder = kazoo(name, { identifier: 'py-holder', maxLeases: 1 });
    await holder.until(['acquired']);
    const abort = new AbortController();
    const positions: number[] = [];
    const pending = zk.backend.acquire(b(name), { ttlSeconds: 4, signal: abort.signal, onQueue: (q) => positions.push(q.ahead) }).catch((e: unknown) => e);
    await eventually(() => positions.includes(1), 10_000, 'waiting for a permit');
    abort.abort();
    assert.ok(isLockLensError(await pending, 'CANCELLED'), 'cancelled');
    await eventually(async () => (await lockAt(name))?.waiters.length === 0, 10_000, 'our Lock node gone');
    assert.deepEqual(holders(await lockAt(name)).map(text), ['py-holder']);
  });

  test("Curator's InterProcessSemaphoreV2, its nodes made as Curator makes them: leases hold, the mutex's contenders wait", async () => {
    const name = `${zk.path}/curator`;
    const mode = zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;
    const [first, second, third] = [await zk.session(), await zk.session(), await zk.session()];
    const watch = zk.backend.watch([b(zk.path)], { minNotifyIntervalMs: 0 });
    zk.defer(() => watch.dispose());
    await watch.start();
    // The first acquire ever: the mutex is taken before leases/ exists, so for a moment it is a mutex of its own.
    await zk.raw().mkdirp(`${name}/locks`);
    const lockA = await first.create(`${name}/locks/_c_${randomUUID()}-lock-`, b('10.0.0.1'), mode);
    await eventually(() => watch.lock(keyId(b(`${name}/locks`)))?.kind === 'queue', 10_000, 'the mutex seen alone');
    await zk.raw().mkdirp(`${name}/leases`);
    const leaseA = await first.create(`${name}/leases/_c_${randomUUID()}-lease-`, b('10.0.0.1'), mode);
    await first.remove(lockA);
    const leaseB = await second.create(`${name}/leases/_c_${randomUUID()}-lease-`, b('10.0.0.2'), mode);
    // The third takes the mutex, makes its lease, and waits: there are more leases than its limit of 2.
    const lockC = await third.create(`${name}/locks/_c_${randomUUID()}-lock-`, b('10.0.0.3'), mode);
    await third.create(`${name}/leases/_c_${randomUUID()}-lease-`, b('10.0.0.3'), mode);
    await eventually(() => watch.lock(keyId(b(name)))?.waiters.length === 1, 10_000, 'the watch sees the semaphore');
    assert.deepEqual(watch.locks().map((l) => l.name.toString()), [name], 'the mutex seen alone is gone: it is the semaphore\'s');
    const locks = await listed();
    assert.deepEqual(drawn(watch.locks()), drawn(locks), 'the watch equals a fresh read');
    assert.deepEqual(locks.map((l) => l.name.toString()), [name], 'its leases/ and locks/ are no locks of their own');
    const sem = locks[0];
    assert.equal(sem.kind, 'semaphore');
    assert.deepEqual(sem.permits, { limit: null, free: null, holdersRecorded: true });
    assert.deepEqual(holders(sem).map((m) => [m.key.toString(), m.owner, m.convention]), [
      [leaseA, first.sessionId, 'curator-semaphore'],
      [leaseB, second.sessionId, 'curator-semaphore'],
    ]);
    assert.deepEqual(sem.waiters.map((m) => m.key.toString()), [lockC]);
    assert.ok(!zk.backend.acquirable(sem), 'its limit is not in the store: acquire needs one');
    const noLimit = await zk.backend.acquire(b(name), { ttlSeconds: 4 }).catch((e: unknown) => e);
    assert.ok(isLockLensError(noLimit, 'INVALID_ARGUMENT') && /maxLeases/.test(noLimit.message), String(noLimit));

    // Ours queues for the mutex behind the third, in Curator's names.
    const positions: number[] = [];
    const pending = zk.backend.acquire(b(name), { ttlSeconds: 4, permitLimit: 2, onQueue: (q) => positions.push(q.ahead) });
    await eventually(async () => (await lockAt(name))?.waiters.length === 2, 10_000, 'ours queued for the mutex');
    const queued = (await lockAt(name))!.waiters[1];
    assert.match(queued.key.toString(), new RegExp(`^${name}/locks/_c_[0-9a-f-]{36}-lock-\\d{10}$`));
    // The third gives up; ours takes the mutex, makes its lease and waits: three leases, a limit of 2.
    await third.close();
    await eventually(() => positions.includes(1) && positions.length > 1, 10_000, 'ours holds the mutex and waits for a permit');
    await eventually(async () => (await zk.raw().children(`${name}/leases`))!.length === 3, 10_000, 'our lease made');
    const waiting = (await lockAt(name))!;
    assert.deepEqual(holders(waiting).map((m) => m.key.toString()), [leaseA, leaseB], 'our lease is no permit yet');
    assert.equal(waiting.waiters.length, 1);
    const result = await zk.backend.forceRelease(waiting, waiting.holder!);
    assert.deepEqual(result.keys.map(String), [leaseA], 'only the lease shown is deleted');
    const ours = hold(await pending);
    assert.match(ours.key.toString(), new RegExp(`^${name}/leases/_c_[0-9a-f-]{36}-lease-\\d{10}$`));
    const after = (await lockAt(name))!;
    assert.deepEqual(holders(after).map((m) => m.key.toString()), [leaseB, ours.key.toString()]);
    assert.deepEqual(after.waiters, [], 'the mutex let go of');
    assert.equal(await ours.release(), true);

    // A path nobody uses yet, taken in Curator's layout when asked.
    const fresh = hold(await zk.backend.acquire(b(`${name}-new`), { ttlSeconds: 4, permitLimit: 1, layout: 'curator-semaphore' }));
    assert.match(fresh.key.toString(), new RegExp(`^${name}-new/leases/_c_[0-9a-f-]{36}-lease-\\d{10}$`));
    assert.equal((await lockAt(`${name}-new`))?.holder?.convention, 'curator-semaphore');
    const busy = await zk.backend.acquire(b(`${name}-new`), { ttlSeconds: 4, permitLimit: 1, tryOnly: true }).catch((e: unknown) => e);
    assert.ok(isLockLensError(busy, 'LOCKED'), String(busy));
    assert.deepEqual((await zk.raw().children(`${name}-new/leases`))!.length, 1, 'the try left no lease behind');
  });
});

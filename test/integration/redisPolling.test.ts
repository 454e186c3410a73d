import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import { clientSpecs, openClient } from '../../src/core/redis/connect';
import { RedisLockWatch } from '../../src/core/redis/liveWatch';
import { CONVENTIONS } from '../../src/core/redis/recognize';
import { FAIR_UNLOCK, UNLOCK_MESSAGE } from '../../src/core/redis/scripts';
import { lockChannel, lockQueueKey, lockTimeoutKey } from '../../src/core/redis/redissonNames';
import { Subscriber } from '../../src/core/redis/subscriber';
import { Topology, type RedisNode } from '../../src/core/redis/topology';
import { keyId } from '../../src/core/keys';
import { eventually, startRedis, type RedisServer } from '../harness/redis';
import { FakeRedisson, REDISSON_UUID } from '../harness/redisson';

const b = (s: string) => Buffer.from(s);

/** How many SCAN calls the server has run (every client's). */
async function scans(raw: Redis): Promise<number> {
  const info = (await raw.info('commandstats')) as string;
  return Number(/cmdstat_scan:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

describe('Redis polling a server with 200k other keys', { timeout: 120_000 }, () => {
  let server: RedisServer;
  let backend: RedisBackend;
  let raw: Redis;
  let redisson: FakeRedisson;

  before(async () => {
    server = await startRedis();
    backend = await RedisBackend.open({ store: 'redis', endpoints: [server.url] });
    raw = new Redis(server.url, { protocol: 2 });
    redisson = FakeRedisson.connect(server.url);
    // 200k keys that are not locks, written in 200 MSETs of 1000 down one pipeline.
    const p = raw.pipeline();
    for (let batch = 0; batch < 200; batch++) {
      const args: string[] = [];
      for (let i = 0; i < 1000; i++) args.push(`junk:${batch}:${i}`, 'x');
      p.mset(...args);
    }
    await p.exec();
    await raw.set('app:token', 'tok-1', 'PX', 60_000);
    await raw.set('app:shed', 'ADDED:2024-01-01T00:00:00Z@host-7', 'PX', 60_000);
    assert.equal(await redisson.lock('app:orders', 1), null);
  });
  after(async () => {
    backend?.close();
    raw?.disconnect();
    redisson?.dispose();
    await server?.dispose();
  });

  test('the locks are read right, and the status says polls are slower than asked and why, with the key count', async (t) => {
    assert.equal(await raw.dbsize(), 200_003);
    const watch = backend.watch([b('app:')], { pollIntervalMs: 50, leaseSampleIntervalMs: 200 });
    try {
      await watch.start();
      assert.deepEqual(
        watch.locks().map((l) => [l.name.toString(), l.holder?.convention, l.holder?.owner]),
        [
          ['app:orders', CONVENTIONS.redissonLock, `${REDISSON_UUID}:1`],
          ['app:shed', CONVENTIONS.shedlock, 'host-7'],
          ['app:token', CONVENTIONS.token, 'tok-1'],
        ],
      );
      const detail = watch.status.detail ?? '';
      t.diagnostic(`status: ${detail}`);
      const m = /^polling every ([\d.]+) (ms|s|min): a full read of 200k keys takes (\d+) ms; turn on keyspace notifications for live updates$/.exec(detail);
      assert.ok(m, `the status explains the interval: ${detail}`);
      const every = Number(m[1]) * (m[2] === 's' ? 1000 : m[2] === 'min' ? 60_000 : 1);
      // 200k keys are 200 SCAN round trips at COUNT 1000: far more than 5 ms, so more than the 50 ms asked for.
      assert.ok(every > 50, `slower than the 50 ms asked for: ${every} ms`);
      assert.ok(Number(m[3]) > 0);
      // And it still follows changes, at that pace.
      await raw.set('app:new', 'tok-2', 'PX', 60_000);
      await eventually(() => watch.lock(keyId(b('app:new')))?.holder?.owner === 'tok-2', 20_000, 'a new lock seen by polling');
      await raw.del('app:token');
      await eventually(() => !watch.lock(keyId(b('app:token'))), 20_000, 'a removal seen by polling');
    } finally {
      watch.dispose();
    }
  });
});

describe('Redis fair queues read without walking the keyspace for them', { timeout: 60_000 }, () => {
  let server: RedisServer;
  let raw: Redis;
  let redisson: FakeRedisson;
  const nodes: RedisNode[] = [];
  const watches: RedisLockWatch[] = [];

  before(async () => {
    server = await startRedis();
    raw = new Redis(server.url, { protocol: 2 });
    redisson = FakeRedisson.connect(server.url);
  });
  after(async () => {
    watches.forEach((w) => w.dispose());
    nodes.forEach((n) => n.client.disconnect());
    raw?.disconnect();
    redisson?.dispose();
    await server?.dispose();
  });

  /** A watch with no timed polls (the test drives them with sync()) and the free-fair-lock walk every `queueResyncMs`. */
  async function watchOf(prefix: string, queueResyncMs: number): Promise<RedisLockWatch> {
    const [spec] = await clientSpecs({ store: 'redis', endpoints: [server.url] });
    const node: RedisNode = { label: spec.endpoint.label, client: await openClient(spec), spec };
    nodes.push(node);
    const watch = new RedisLockWatch(
      { topology: Topology.ofInstances([node]), openSubscriber: async (n) => new Subscriber(await openClient(n.spec, 'locklens-watch')), queueResyncMs },
      [b(prefix)],
      { pollIntervalMs: 60_000 },
    );
    watches.push(watch);
    await watch.start();
    return watch;
  }

  const waiters = (w: RedisLockWatch, name: string) => w.lock(keyId(b(name)))?.waiters.map((m) => m.owner);

  test("a poll reads a fair lock's waiters with its hash: one SCAN, the prefix's, and none for queues", async () => {
    const name = 'f1/fair';
    assert.equal(await redisson.fairLock(name, 1), null);
    assert.notEqual(await redisson.fairLock(name, 2), null);
    assert.notEqual(await redisson.fairLock(name, 3), null);
    const watch = await watchOf('f1/', 600_000);
    const before = await scans(raw);
    await watch.sync();
    // The keyspace is tiny: the prefix's walk is one SCAN call; a walk of redisson_lock_queue:* would be a second.
    assert.equal((await scans(raw)) - before, 1, 'one SCAN in a poll');
    const lock = watch.lock(keyId(b(name)))!;
    assert.equal(lock.holder?.convention, CONVENTIONS.redissonFairLock);
    assert.deepEqual(waiters(watch, name), [`${REDISSON_UUID}:2`, `${REDISSON_UUID}:3`]);
    assert.ok(lock.waiters.every((w) => w.deadline! > Date.now()), 'with their deadlines');

    // Its hash goes without a word (it expired, say): the waiters it had are read by name, still no queue walk.
    await raw.del(name);
    const again = await scans(raw);
    await watch.sync();
    assert.equal((await scans(raw)) - again, 1);
    assert.equal(watch.lock(keyId(b(name)))?.holder, null, 'free');
    assert.deepEqual(waiters(watch, name), [`${REDISSON_UUID}:2`, `${REDISSON_UUID}:3`], 'with its waiters');
    // The queue empties: the lock is gone at the next poll.
    await raw.del(lockQueueKey(b(name)), lockTimeoutKey(b(name)));
    await watch.sync();
    assert.equal(watch.lock(keyId(b(name))), undefined);
  });

  test('a Redisson unlock leaving waiters is read by the name its message gives, without any SCAN', async () => {
    const name = 'f2/fair';
    assert.equal(await redisson.fairLock(name, 1), null);
    assert.notEqual(await redisson.fairLock(name, 2), null);
    const watch = await watchOf('f2/', 600_000);
    assert.equal(watch.lock(keyId(b(name)))?.holder?.owner, `${REDISSON_UUID}:1`);
    const before = await scans(raw);
    // Redisson's unlock: the hash deleted, the head of the queue told on its own channel; the waiter stays queued.
    const q = b(name);
    assert.equal(await raw.eval(FAIR_UNLOCK, 4, q, lockQueueKey(q), lockTimeoutKey(q), lockChannel(q), UNLOCK_MESSAGE, 30_000, `${REDISSON_UUID}:1`, Date.now()), 1);
    // No timed poll for a minute: only the message can bring this.
    await eventually(() => watch.lock(keyId(q))?.holder === null, 10_000, 'the fair lock seen free');
    assert.deepEqual(waiters(watch, name), [`${REDISSON_UUID}:2`]);
    assert.equal(await scans(raw), before, 'read by name: no SCAN');
  });

  test('a free fair lock the watch never saw held is found by the slower walk, not by every poll', async () => {
    const name = 'f3/fair';
    const rare = await watchOf('f3/', 600_000);
    const often = await watchOf('f3/', 300);
    // Held and queued for, then its hash gone without a message: only its queue says it exists.
    assert.equal(await redisson.fairLock(name, 1), null);
    assert.notEqual(await redisson.fairLock(name, 2), null);
    await raw.del(name);
    const before = await scans(raw);
    await rare.sync();
    assert.equal((await scans(raw)) - before, 1, "a poll: the prefix's walk only");
    assert.equal(rare.lock(keyId(b(name))), undefined, 'not looked for on every poll');
    await eventually(
      async () => {
        await often.sync();
        return often.lock(keyId(b(name)))?.holder === null;
      },
      10_000,
      'found by the walk for free fair locks',
    );
    assert.deepEqual(waiters(often, name), [`${REDISSON_UUID}:2`]);
    // Known now: the polls after keep it (by name) until its queue empties.
    const kept = await scans(raw);
    await often.sync();
    assert.ok((await scans(raw)) - kept <= 2);
    assert.deepEqual(waiters(often, name), [`${REDISSON_UUID}:2`]);
  });
});

describe('Redis watch with keyspace notifications on', { timeout: 60_000 }, () => {
  test('the full read is a slow safety resync, whatever the poll interval asked for: no SCAN every poll', async () => {
    const server = await startRedis({ notify: 'KEA' });
    const backend = await RedisBackend.open({ store: 'redis', endpoints: [server.url] });
    const raw = new Redis(server.url, { protocol: 2 });
    const watch = backend.watch([b('n/')], { pollIntervalMs: 50, leaseSampleIntervalMs: 50 });
    try {
      await watch.start();
      assert.equal(watch.status.detail, 'keyspace notifications');
      const before = await scans(raw);
      // Changes still arrive (by notification, read by name), TTLs are sampled (PTTL), and nothing walks the keyspace.
      await raw.set('n/a', 'tok', 'PX', 60_000);
      await eventually(() => watch.lock(keyId(b('n/a')))?.holder?.owner === 'tok', 10_000, 'the change seen');
      await eventually(() => watch.lease(keyId(b('n/a')))?.state === 'alive', 10_000, 'its TTL sampled');
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(await scans(raw), before, 'no SCAN in 10 poll intervals');
    } finally {
      watch.dispose();
      backend.close();
      raw.disconnect();
      await server.dispose();
    }
  });
});

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis, { Cluster } from 'ioredis';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import type { LockLensError } from '../../src/core/errors';
import type { LockHold } from '../../src/core/backend';
import { keyId } from '../../src/core/keys';
import { CONVENTIONS } from '../../src/core/redis/recognize';
import { lockQueueKey, lockTimeoutKey } from '../../src/core/redis/redissonNames';
import { FAIR_LOCK, FAIR_THREAD_WAIT_MS, REDISSON_LOCK } from '../../src/core/redis/scripts';
import { eventually, startRedisCluster, type RedisCluster } from '../harness/redis';
import { RedisPyLock } from '../harness/redisPy';
import { REDISSON_UUID, OTHER_UUID } from '../harness/redisson';

const b = (s: string) => Buffer.from(s);

/** A name under `prefix` on each of the cluster's three masters (index = master). */
async function namesOnEachMaster(cluster: RedisCluster, prefix: string): Promise<string[]> {
  const found: string[] = [];
  for (let i = 0; i < 200 && found.filter(Boolean).length < 3; i++) {
    const node = await cluster.nodeOf(`${prefix}lock-${i}`);
    found[node] ??= `${prefix}lock-${i}`;
  }
  assert.equal(found.filter(Boolean).length, 3, `a name under ${prefix} on each master`);
  return found;
}

describe('Redis Cluster: three masters, detected on open', { timeout: 180_000 }, () => {
  let cluster: RedisCluster;
  let backend: RedisBackend;
  let raw: Cluster;
  /** Lock names under `c/`, one served by each master (index = master). */
  let names: string[] = [];

  const onEachMaster = (prefix: string) => namesOnEachMaster(cluster, prefix);

  before(async () => {
    cluster = await startRedisCluster(3);
    backend = await RedisBackend.open({ store: 'redis', endpoints: [cluster.url] });
    raw = new Cluster([{ host: '127.0.0.1', port: cluster.servers[0].port }], { redisOptions: { protocol: 2 } });
    names = await onEachMaster('c/');
  });
  after(async () => {
    backend?.close();
    raw?.disconnect();
    await cluster?.dispose();
  });

  test('open switches to a cluster by itself: three masters', () => {
    assert.equal(backend.topology.kind, 'cluster');
    assert.equal(backend.topology.nodes().length, 3);
  });

  test('list sees locks on all three masters: a token, a Redisson holder, a fair lock with its waiter', async () => {
    await raw.set(names[0], 'tok-0', 'PX', 30_000);
    assert.equal(await raw.eval(REDISSON_LOCK, 1, names[1], 30_000, `${REDISSON_UUID}:1`), null);
    const fair = names[2];
    const fairLock = (field: string) => raw.eval(FAIR_LOCK, 3, fair, lockQueueKey(b(fair)), lockTimeoutKey(b(fair)), 30_000, field, FAIR_THREAD_WAIT_MS, Date.now());
    assert.equal(await fairLock(`${REDISSON_UUID}:2`), null);
    assert.notEqual(await fairLock(`${OTHER_UUID}:3`), null, 'a waiter queues');
    const listing = await backend.list([b('c/')]);
    const byName = new Map(listing.locks.map((l) => [l.name.toString(), l]));
    assert.equal(byName.get(names[0])?.holder?.owner, 'tok-0');
    assert.equal(byName.get(names[1])?.holder?.convention, CONVENTIONS.redissonLock);
    assert.equal(byName.get(names[1])?.holder?.holds, 1);
    assert.equal(byName.get(fair)?.holder?.convention, CONVENTIONS.redissonFairLock);
    assert.deepEqual(byName.get(fair)?.waiters.map((w) => w.owner), [`${OTHER_UUID}:3`]);
    assert.equal(byName.get(names[0])?.holder?.quorum, undefined, 'a cluster key lives in one place: no quorum');
    const ttl = listing.lease(byName.get(names[0])!.holder!.lease)!.ttl;
    assert.ok(ttl > 0 && ttl <= 30);
    for (const key of [...names]) await raw.del(key);
    await raw.del(lockQueueKey(b(fair)));
    await raw.del(lockTimeoutKey(b(fair)));
  });

  test("a master's keys in many slots are read by its script (none refused), every one listed", async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `slots/lock-${i}`);
    for (const key of keys) await raw.set(key, `tok-${key}`, 'PX', 30_000);
    const listing = await backend.list([b('slots/')]);
    assert.deepEqual(listing.locks.map((l) => l.name.toString()).sort(), [...keys].sort());
    for (const node of backend.topology.nodes()) {
      const line = (await node.client.info('commandstats')).split('\n').find((l) => l.startsWith('cmdstat_eval:')) ?? '';
      assert.match(line, /calls=[1-9]/, `${node.label} ran the script`);
      assert.match(line, /rejected_calls=0,failed_calls=0/, `${node.label} refused none: ${line}`);
    }
    for (const key of keys) await raw.del(key);
  });

  test('watch follows locks coming and going on every master; TTLs sampled where each key lives', async () => {
    const watch = backend.watch([b('w/')], { pollIntervalMs: 100, leaseSampleIntervalMs: 100 });
    try {
      await watch.start();
      assert.equal(watch.status.state, 'live');
      const keys = await onEachMaster('w/');
      for (const k of keys) await raw.set(k, `v-${k}`, 'PX', 30_000);
      await eventually(() => watch.locks().length === keys.length, 10_000, 'every lock, one per master, seen');
      await eventually(() => watch.locks().every((l) => watch.lease(l.holder!.lease)?.state === 'alive'), 10_000, 'TTLs sampled');
      for (const k of keys) await raw.del(k);
      await eventually(() => watch.locks().length === 0, 10_000, 'every lock gone');
    } finally {
      watch.dispose();
    }
  });

  test("watch: a fair lock's waiters on every poll without a queue walk; its hash gone, it shows free with them", async () => {
    const names = await onEachMaster('wf/');
    const fair = names[1];
    const q = b(fair);
    const fairLock = (field: string) => raw.eval(FAIR_LOCK, 3, fair, lockQueueKey(q), lockTimeoutKey(q), 30_000, field, FAIR_THREAD_WAIT_MS, Date.now());
    assert.equal(await fairLock(`${REDISSON_UUID}:1`), null);
    assert.notEqual(await fairLock(`${OTHER_UUID}:2`), null);
    const watch = backend.watch([b('wf/')], { pollIntervalMs: 100, leaseSampleIntervalMs: 60_000 });
    try {
      await watch.start();
      const shown = () => watch.locks().find((l) => l.name.equals(q));
      assert.deepEqual(shown()?.waiters.map((w) => w.owner), [`${OTHER_UUID}:2`]);
      // Gone without a word: polls read its queue by name on every master (the two that do not hold it say MOVED).
      await raw.del(fair);
      await eventually(() => shown()?.holder === null, 10_000, 'free with its waiter');
      assert.deepEqual(shown()?.waiters.map((w) => w.owner), [`${OTHER_UUID}:2`]);
      await watch.sync();
      assert.deepEqual(shown()?.waiters.map((w) => w.owner), [`${OTHER_UUID}:2`], 'kept by the next polls');
      assert.equal(watch.status.state, 'live');
      assert.doesNotMatch(watch.status.detail ?? '', /unreachable/, 'a MOVED for a queue read by name is not a master down');
      await raw.del(lockQueueKey(q));
      await raw.del(lockTimeoutKey(q));
      await eventually(() => shown() === undefined, 10_000, 'gone with its queue');
    } finally {
      watch.dispose();
    }
  });

  test("acquire excludes redis-py's RedisCluster Lock both ways, and force-release works", async () => {
    const name = 'c/py';
    const py = new RedisPyLock(cluster.url, name, 'hold', 30, true);
    let hold: LockHold | undefined;
    try {
      await py.until(['acquired']);
      await assert.rejects(backend.acquire(b(name), { ttlSeconds: 10, tryOnly: true }), (e: LockLensError) => e.code === 'LOCKED');
      const waiting = backend.acquire(b(name), { ttlSeconds: 10 });
      py.release();
      await py.until(['released']);
      hold = await waiting;
      assert.equal(await raw.get(name), hold.owner);
      const second = new RedisPyLock(cluster.url, name, 'try', 30, true);
      try {
        assert.equal((await second.until(['busy', 'acquired'])).split(' ')[0], 'busy');
      } finally {
        second.dispose();
      }
      assert.equal(await hold.release(), true);
      assert.equal(await raw.exists(name), 0);
    } finally {
      py.dispose();
      await hold?.release().catch(() => undefined);
    }
    // Force-release a stuck token lock and a Redisson lock, each on its own master, routed by key.
    await raw.set(names[0], 'stuck');
    assert.equal(await raw.eval(REDISSON_LOCK, 1, names[1], 30_000, `${OTHER_UUID}:9`), null);
    const listing = await backend.list([b('c/')]);
    for (const name of [names[0], names[1]]) {
      const lock = listing.locks.find((l) => l.name.toString() === name)!;
      await backend.forceRelease(lock, lock.holder!);
      assert.equal(await raw.exists(name), 0, `${name} released`);
    }
  });
});

describe('Redis Cluster with keyspace notifications on every master', { timeout: 180_000 }, () => {
  let cluster: RedisCluster;
  let backend: RedisBackend;
  let raw: Cluster;

  before(async () => {
    cluster = await startRedisCluster(3, { notify: 'KEA' });
    backend = await RedisBackend.open({ store: 'redis', endpoints: [cluster.url] });
    raw = new Cluster([{ host: '127.0.0.1', port: cluster.servers[0].port }], { redisOptions: { protocol: 2 } });
  });
  after(async () => {
    backend?.close();
    raw?.disconnect();
    await cluster?.dispose();
  });

  test('changes on every master arrive pushed: a poll interval of a minute never comes into it', async () => {
    const names = await namesOnEachMaster(cluster, 'n/');
    const watch = backend.watch([b('n/')], { pollIntervalMs: 60_000, leaseSampleIntervalMs: 200 });
    try {
      await watch.start();
      assert.equal(watch.status.state, 'live');
      assert.equal(watch.status.detail, 'keyspace notifications');
      for (const name of names) await raw.set(name, `tok-${name}`, 'PX', 60_000);
      await eventually(() => names.every((n) => watch.lock(keyId(b(n)))?.holder?.owner === `tok-${n}`), 10_000, 'a new lock on each master seen');
      for (const name of names) await raw.del(name);
      await eventually(() => watch.locks().length === 0, 10_000, 'each removal seen');
    } finally {
      watch.dispose();
    }
  });
});

describe('Redis Cluster failover: a master killed, its replica promoted', { timeout: 180_000 }, () => {
  let cluster: RedisCluster;
  let backend: RedisBackend;

  before(async () => {
    // A one-second node timeout: the replica takes over in a few seconds instead of fifteen.
    cluster = await startRedisCluster(3, { clusterNodeTimeoutMs: 1000 }, 1);
    backend = await RedisBackend.open({ store: 'redis', endpoints: [cluster.url] });
  });
  after(async () => {
    backend?.close();
    await cluster?.dispose();
  });

  test('the watch says which master is unreachable, then shows the lock again from the promoted replica; acquire works there', async () => {
    const name = 'f/lock-0';
    const master = cluster.servers[await cluster.nodeOf(name)];
    // Written to the master and acknowledged by its replica (WAIT), as a lock a service took before the crash.
    const direct = new Redis(master.port, '127.0.0.1', { protocol: 2 });
    try {
      await direct.set(name, 'tok-f', 'PX', 120_000);
      assert.equal(await direct.wait(1, 5000), 1, 'the replica has the lock');
    } finally {
      direct.disconnect();
    }
    const watch = backend.watch([b('f/')], { pollIntervalMs: 200, leaseSampleIntervalMs: 200 });
    try {
      await watch.start();
      assert.equal(watch.lock(keyId(b(name)))?.holder?.owner, 'tok-f');
      const details: string[] = [];
      const unreachable: (readonly string[] | undefined)[] = [];
      watch.onDidChangeStatus((status) => {
        details.push(status.detail ?? '');
        unreachable.push(status.unreachable);
      });
      await master.stop();
      const downSaid = new RegExp(`; 1 of 3 masters unreachable \\(127\\.0\\.0\\.1:${master.port}\\): the locks on it are not shown$`);
      await eventually(() => details.some((d) => downSaid.test(d)), 20_000, 'the status names the master that went away');
      assert.deepEqual(unreachable[details.findIndex((d) => downSaid.test(d))], [`127.0.0.1:${master.port}`]);
      await eventually(() => watch.status.state === 'live' && !watch.status.unreachable && watch.lock(keyId(b(name)))?.holder?.owner === 'tok-f', 60_000, 'the lock shown again, from the promoted replica');
      // The name's slot is served by the new master: acquire and release go there.
      const other = 'f/lock-0-after';
      const hold = await backend.acquire(b(other), { ttlSeconds: 10 });
      // Asked through another node, which may still answer CLUSTERDOWN for a moment while the failover spreads.
      await eventually(async () => (await cluster.cli(['GET', other])) === hold.owner, 20_000, `${other} holds our token, read through the cluster`);
      assert.equal(await hold.release(), true);
    } finally {
      watch.dispose();
    }
  });
});

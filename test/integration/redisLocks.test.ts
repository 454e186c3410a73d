import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import { isLockLensError } from '../../src/core/errors';
import { keyId } from '../../src/core/keys';
import type { LockHold } from '../../src/core/backend';
import type { LockLensError } from '../../src/core/errors';
import { CONVENTIONS, keyTtlId } from '../../src/core/redis/recognize';
import { eventually, startRedis, startRedisInstances, type RedisInstances, type RedisServer } from '../harness/redis';
import { RedisPyLock } from '../harness/redisPy';
import { OTHER_UUID, REDISSON_UUID } from '../harness/redisson';
import { redisSuite } from '../harness/redisSuite';
import { FAIR_UNLOCK, REDISSON_UNLOCK, UNLOCK_MESSAGE } from '../../src/core/redis/scripts';
import { lockChannel } from '../../src/core/redis/redissonNames';

const b = (s: string) => Buffer.from(s);

describe('Redis backend against a real redis-server', { timeout: 120_000 }, () => {
  const t = redisSuite();
  let n = 0;
  let prefix = '';

  beforeEach(() => {
    prefix = `t${++n}/`;
  });

  const peer = (name: string, mode: 'hold' | 'try', timeout: number | null = 30) => {
    const p = new RedisPyLock(t.server.url, name, mode, timeout);
    t.defer(() => p.dispose());
    return p;
  };
  const listed = async () => (await t.backend.list([b(prefix)])).locks;

  test("list: Redisson holder with hold count and TTL, written by Redisson's Lua", async () => {
    const name = `${prefix}orders`;
    assert.equal(await t.redisson.lock(name, 1), null);
    assert.equal(await t.redisson.lock(name, 1), null, 're-entered');
    assert.notEqual(await t.redisson.lock(name, 2), null, 'another thread waits');
    const listing = await t.backend.list([b(prefix)]);
    assert.equal(listing.revision, null);
    const [lock] = listing.locks;
    assert.equal(lock.kind, 'queue');
    assert.equal(lock.holder?.convention, CONVENTIONS.redissonLock);
    assert.equal(lock.holder?.owner, `${REDISSON_UUID}:1`);
    assert.equal(lock.holder?.holds, 2);
    const lease = listing.lease(lock.holder!.lease)!;
    assert.equal(lease.state, 'alive');
    assert.ok(lease.ttl > 0 && lease.ttl <= 30);
  });

  test("list: a fair lock's waiters in queue order with deadlines; a free fair lock still shows its queue", async () => {
    const name = `${prefix}fair`;
    assert.equal(await t.redisson.fairLock(name, 1), null);
    assert.notEqual(await t.redisson.fairLock(name, 2, 30_000, OTHER_UUID), null);
    assert.notEqual(await t.redisson.fairLock(name, 3), null);
    let [lock] = await listed();
    assert.equal(lock.holder?.convention, CONVENTIONS.redissonFairLock);
    assert.deepEqual(lock.waiters.map((w) => w.owner), [`${OTHER_UUID}:2`, `${REDISSON_UUID}:3`]);
    const [d1, d2] = lock.waiters.map((w) => w.deadline!);
    assert.ok(d1 > Date.now() && d2 > d1, 'deadlines in the future, later for later waiters');
    const listing = await t.backend.list([b(prefix)]);
    assert.ok(listing.lease(listing.locks[0].waiters[0].lease)!.ttl > 0, 'a waiter counts down to its give-up time');
    await t.raw.del(name);
    [lock] = await listed();
    assert.equal(lock.holder, null);
    assert.equal(lock.waiters.length, 2);
  });

  test('list: a read/write lock with two readers, its timeout strings not locks', async () => {
    const name = `${prefix}rw`;
    assert.equal(await t.redisson.readLock(name, 1), null);
    assert.equal(await t.redisson.readLock(name, 2, 30_000, OTHER_UUID), null);
    const locks = await listed();
    assert.equal(locks.length, 1, JSON.stringify(locks.map((l) => l.name.toString())));
    assert.equal(locks[0].kind, 'readwrite');
    assert.deepEqual([locks[0].holder!, ...locks[0].sharedWith!].map((m) => [m.owner, m.mode]).sort(), [
      [`${REDISSON_UUID}:1`, 'read'],
      [`${OTHER_UUID}:2`, 'read'],
    ]);
  });

  test('list: ShedLock host; a redis-py lock with its token as owner and no expiry flagged', async () => {
    await t.raw.set(`${prefix}job-lock:default:report`, `ADDED:2024-05-01T10:00:00.000Z@batch-7:${REDISSON_UUID}`, 'PX', 60_000);
    const py = peer(`${prefix}py`, 'hold', null);
    const token = (await py.until(['acquired'])).split(' ')[1];
    const locks = await listed();
    const shed = locks.find((l) => l.holder?.convention === CONVENTIONS.shedlock)!;
    assert.equal(shed.holder?.owner, 'batch-7');
    const pyLock = locks.find((l) => l.name.equals(b(`${prefix}py`)))!;
    assert.equal(pyLock.holder?.convention, CONVENTIONS.token);
    assert.equal(pyLock.holder?.owner, token);
    assert.equal(pyLock.holder?.lease, '', 'redis-py without timeout never expires');
    py.release();
    await py.until(['released']);
  });

  test('acquire excludes redis-py both ways', async () => {
    const name = `${prefix}shared`;
    // LockLens holds: redis-py's non-blocking acquire fails, its blocking one waits for our release.
    const hold = await t.backend.acquire(b(name), { ttlSeconds: 10 });
    assert.equal((await peer(name, 'try').until(['busy', 'acquired'])), 'busy');
    const waiter = peer(name, 'hold');
    await waiter.until(['waiting']);
    assert.equal(waiter.lines.includes('busy'), false);
    assert.ok(!waiter.lines.some((l) => l.startsWith('acquired')), 'redis-py waits while we hold');
    assert.equal(await hold.release(), true);
    const token = (await waiter.until(['acquired'])).split(' ')[1];
    // redis-py holds: our acquire waits (told ahead 1) until it releases, then holds.
    const positions: number[] = [];
    const ours = t.backend.acquire(b(name), { ttlSeconds: 10, onQueue: (p) => positions.push(p.ahead) });
    await eventually(() => positions.includes(1), 10_000, 'told we wait');
    const [lock] = (await listed()).filter((l) => l.name.equals(b(name)));
    assert.equal(lock.holder?.owner, token, "still redis-py's");
    waiter.release();
    await waiter.until(['released']);
    const second = await ours;
    assert.deepEqual(positions, [1, 0]);
    assert.equal(second.key.toString(), name);
    const [now] = (await listed()).filter((l) => l.name.equals(b(name)));
    assert.equal(now.holder?.owner, second.owner);
    assert.equal(await second.release(), true);
  });

  test("acquire on a Redisson-held name uses a Redisson field and wakes on Redisson's unlock publish", async () => {
    const name = `${prefix}redisson`;
    assert.equal(await t.redisson.lock(name, 1, 60_000), null);
    const positions: number[] = [];
    const pending = t.backend.acquire(b(name), { ttlSeconds: 30, onQueue: (p) => positions.push(p.ahead) });
    await eventually(() => positions.includes(1), 10_000, 'queued');
    // Redisson's unlock: hincrby -1, then del and publish 0 (what REDISSON_UNLOCK does for a Redisson client).
    assert.equal(await t.raw.eval(REDISSON_UNLOCK, 2, name, lockChannel(b(name)), UNLOCK_MESSAGE, 60_000, `${REDISSON_UUID}:1`), 1);
    const hold = await pending;
    assert.match(hold.owner, /^[0-9a-f-]{36}:\d+$/);
    const fields = await t.raw.hgetall(name);
    assert.deepEqual(fields, { [hold.owner]: '1' }, 'a Redisson-shaped field with count 1');
    const [lock] = await listed();
    assert.equal(lock.holder?.owner, hold.owner);
    assert.equal(lock.holder?.convention, CONVENTIONS.redissonLock);
    // A Redisson client now waits for us: our release publishes so it wakes.
    const sub = new Redis(t.server.url, { protocol: 2 });
    t.defer(() => sub.disconnect());
    const messages: string[] = [];
    sub.on('message', (_c: string, m: string) => messages.push(m));
    await sub.subscribe(`redisson_lock__channel:{${name}}`);
    assert.equal(await hold.release(), true);
    await eventually(() => messages.includes('0'), 5000, 'unlock message');
    assert.equal(await t.raw.exists(name), 0);
  });

  test('acquire on a Redisson fair lock queues behind its waiters and is served in queue order', async () => {
    const name = `${prefix}fairq`;
    const queueKey = `redisson_lock_queue:{${name}}`;
    const fairUnlock = (field: string) =>
      t.raw.eval(FAIR_UNLOCK, 4, name, queueKey, `redisson_lock_timeout:{${name}}`, `redisson_lock__channel:{${name}}`, UNLOCK_MESSAGE, 30_000, field, Date.now());
    assert.equal(await t.redisson.fairLock(name, 1), null);
    assert.notEqual(await t.redisson.fairLock(name, 2), null, 'a Redisson waiter queued first');
    const positions: number[] = [];
    const pending = t.backend.acquire(b(name), { ttlSeconds: 30, onQueue: (p) => positions.push(p.ahead) });
    pending.catch(() => undefined);
    await eventually(async () => (await t.raw.llen(queueKey)) === 2, 10_000, 'we are queued behind it');
    const [lock] = await listed();
    assert.equal(lock.waiters.length, 2);
    assert.equal(lock.waiters[0].owner, `${REDISSON_UUID}:2`);
    // The holder leaves: Redisson wakes only the head of the queue, which takes it; we are still waiting.
    assert.equal(await fairUnlock(`${REDISSON_UUID}:1`), 1);
    assert.equal(await t.redisson.fairLock(name, 2), null, 'the head of the queue is served first');
    assert.deepEqual(Object.keys(await t.raw.hgetall(name)), [`${REDISSON_UUID}:2`]);
    assert.equal(await fairUnlock(`${REDISSON_UUID}:2`), 1);
    const hold = await pending;
    assert.equal(positions[positions.length - 1], 0);
    assert.ok(positions.includes(2), `told two ahead first: ${positions.join(',')}`);
    assert.equal(await t.raw.llen(queueKey), 0, 'left the queue');
    assert.equal(await hold.release(), true);
  });

  test('a fair lock taken while nobody waited (an RLock then): our release wakes the Redisson fair waiter that queued since', async () => {
    const name = `${prefix}fairlate`;
    // A Redisson fair lock with nobody waiting is, in the store, an RLock: we queue and take it the RLock way.
    assert.equal(await t.redisson.lock(name, 1, 60_000), null);
    const pending = t.backend.acquire(b(name), { ttlSeconds: 30 });
    await eventually(async () => (await t.raw.pubsub('NUMSUB', `redisson_lock__channel:{${name}}`))[1] === 1, 10_000, 'waiting on the lock channel');
    assert.equal(await t.raw.eval(REDISSON_UNLOCK, 2, name, lockChannel(b(name)), UNLOCK_MESSAGE, 60_000, `${REDISSON_UUID}:1`), 1);
    const hold = await pending;
    assert.notEqual(await t.redisson.fairLock(name, 7), null, 'a Redisson fair waiter queues behind us');
    const sub = new Redis(t.server.url, { protocol: 2 });
    t.defer(() => sub.disconnect());
    const messages: string[] = [];
    sub.on('message', (channel: string, m: string) => messages.push(`${channel} ${m}`));
    await sub.subscribe(`redisson_lock__channel:{${name}}:${REDISSON_UUID}:7`);
    assert.equal(await hold.release(), true);
    await eventually(() => messages.includes(`redisson_lock__channel:{${name}}:${REDISSON_UUID}:7 0`), 5000, 'the fair waiter woken on its own channel');
    assert.equal(await t.redisson.fairLock(name, 7), null, 'and it takes the lock');
  });

  test('tryOnly: LOCKED naming the holder', async () => {
    const py = peer(`${prefix}busy`, 'hold');
    const token = (await py.until(['acquired'])).split(' ')[1];
    await assert.rejects(t.backend.acquire(b(`${prefix}busy`), { ttlSeconds: 5, tryOnly: true }), (e: LockLensError) => e.code === 'LOCKED' && e.message.includes(token));
    await t.redisson.lock(`${prefix}rbusy`, 4);
    await assert.rejects(t.backend.acquire(b(`${prefix}rbusy`), { ttlSeconds: 5, tryOnly: true }), (e: LockLensError) => e.code === 'LOCKED' && e.message.includes(`${REDISSON_UUID}:4`));
    py.release();
  });

  test('cancel while waiting: CANCELLED and nothing left behind (token and fair queue)', async () => {
    await t.raw.set(`${prefix}c1`, 'someone', 'PX', 30_000);
    const abort = new AbortController();
    const waiting = t.backend.acquire(b(`${prefix}c1`), { ttlSeconds: 5, signal: abort.signal, onQueue: () => abort.abort() });
    await assert.rejects(waiting, (e: LockLensError) => e.code === 'CANCELLED');
    assert.equal(await t.raw.get(`${prefix}c1`), 'someone');
    const fair = `${prefix}c2`;
    await t.redisson.fairLock(fair, 1);
    const abort2 = new AbortController();
    const waiting2 = t.backend.acquire(b(fair), { ttlSeconds: 5, signal: abort2.signal, onQueue: () => abort2.abort() });
    await assert.rejects(waiting2, (e: LockLensError) => e.code === 'CANCELLED');
    assert.equal(await t.raw.llen(`redisson_lock_queue:{${fair}}`), 0);
    assert.equal(await t.raw.zcard(`redisson_lock_timeout:{${fair}}`), 0);
    assert.deepEqual(Object.keys(await t.raw.hgetall(fair)), [`${REDISSON_UUID}:1`]);
  });

  test('a hold says it is lost when someone deletes its key; release then returns false', async () => {
    const hold: LockHold = await t.backend.acquire(b(`${prefix}lost`), { ttlSeconds: 1.5 });
    const lost = new Promise<LockLensError>((resolve) => hold.onDidLose(resolve));
    await t.raw.del(`${prefix}lost`);
    const error = await lost;
    assert.equal(error.code, 'LOCK_LOST');
    assert.equal(hold.lost, error);
    assert.equal(await hold.release(), false);
  });

  test('closing the backend loses its holds at once and stops their renewal', async () => {
    const own = await RedisBackend.open({ store: 'redis', endpoints: [t.server.url] });
    const name = `${prefix}closing`;
    const hold = await own.acquire(b(name), { ttlSeconds: 30 });
    const lost: LockLensError[] = [];
    hold.onDidLose((e) => lost.push(e));
    own.close();
    assert.equal(lost.length, 1, 'told synchronously, not after a TTL of failed renewals');
    assert.equal(lost[0].code, 'LOCK_LOST');
    assert.equal(hold.lost?.code, 'LOCK_LOST');
    assert.equal(await hold.release(), false, 'nothing left to release from here');
    assert.equal(await t.raw.get(name), hold.owner, 'the key is left to expire by its TTL');
    await t.raw.del(name);
  });

  test('a hold renews its TTL while held', async () => {
    const hold = await t.backend.acquire(b(`${prefix}renew`), { ttlSeconds: 0.6 });
    await eventually(async () => (await t.raw.pttl(`${prefix}renew`)) > 450, 2000, 'renewed once');
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(hold.lost, undefined);
    assert.ok((await t.raw.exists(`${prefix}renew`)) === 1, 'still there after twice its TTL');
    assert.equal(await hold.release(), true);
  });

  test('force-release compares with what was shown', async () => {
    // Token: deleted only if it still holds the token seen.
    await t.raw.set(`${prefix}f1`, 'token-A', 'PX', 30_000);
    const [shown] = await listed();
    assert.match(t.backend.describeForceRelease(shown, shown.holder!), /only if it still holds token token-A.*not told/);
    await t.raw.set(`${prefix}f1`, 'token-B', 'PX', 30_000);
    await assert.rejects(t.backend.forceRelease(shown, shown.holder!), (e: LockLensError) => e.code === 'LOCK_CHANGED');
    assert.equal(await t.raw.get(`${prefix}f1`), 'token-B');
    const [fresh] = await listed();
    const result = await t.backend.forceRelease(fresh, fresh.holder!);
    assert.deepEqual(result.keys, [b(`${prefix}f1`)]);
    assert.equal(await t.raw.exists(`${prefix}f1`), 0);

    // Redisson: the hash deleted and Redisson's waiters woken, only if the field is still the holder.
    const name = `${prefix}f2`;
    await t.redisson.lock(name, 1);
    const [r1] = await listed();
    await t.raw.del(name);
    await t.redisson.lock(name, 2);
    await assert.rejects(t.backend.forceRelease(r1, r1.holder!), (e: LockLensError) => e.code === 'LOCK_CHANGED');
    const sub = new Redis(t.server.url, { protocol: 2 });
    t.defer(() => sub.disconnect());
    const messages: string[] = [];
    sub.on('message', (_c: string, m: string) => messages.push(m));
    await sub.subscribe(`redisson_lock__channel:{${name}}`);
    const [r2] = await listed();
    await t.backend.forceRelease(r2, r2.holder!);
    assert.equal(await t.raw.exists(name), 0);
    await eventually(() => messages.includes('0'), 5000, 'waiters woken');

    // Read/write lock: mode-aware.
    const rw = `${prefix}f3`;
    await t.redisson.readLock(rw, 1);
    const [rwLock] = await listed();
    assert.match(t.backend.describeForceRelease(rwLock, rwLock.holder!), /read\/write/);
    await t.backend.forceRelease(rwLock, rwLock.holder!);
    assert.equal(await t.raw.exists(rw), 0);
  });

  test('force-release of a fair lock wakes its first live waiter, past waiters that gave up', async () => {
    const name = `${prefix}fairforce`;
    assert.equal(await t.redisson.fairLock(name, 1), null);
    assert.notEqual(await t.redisson.fairLock(name, 2), null);
    assert.notEqual(await t.redisson.fairLock(name, 3), null);
    // Thread 2 gave up long ago (its process died): its give-up time has passed, but it still heads the queue.
    await t.raw.zadd(`redisson_lock_timeout:{${name}}`, Date.now() - 60_000, `${REDISSON_UUID}:2`);
    const sub = new Redis(t.server.url, { protocol: 2 });
    t.defer(() => sub.disconnect());
    const woken: string[] = [];
    sub.on('message', (channel: string) => woken.push(channel.slice(channel.lastIndexOf(':') + 1)));
    await sub.subscribe(`redisson_lock__channel:{${name}}:${REDISSON_UUID}:2`, `redisson_lock__channel:{${name}}:${REDISSON_UUID}:3`);
    const [lock] = await listed();
    assert.equal(lock.holder?.convention, CONVENTIONS.redissonFairLock);
    await t.backend.forceRelease(lock, lock.holder!);
    assert.equal(await t.raw.exists(name), 0);
    await eventually(() => woken.length > 0, 5000, 'a waiter woken');
    assert.deepEqual(woken, ['3'], 'the live waiter, not the one that gave up');
    assert.deepEqual(await t.raw.lrange(`redisson_lock_queue:{${name}}`, 0, -1), [`${REDISSON_UUID}:3`]);
  });

  test('a name holding something that is not a lock is not overwritten', async () => {
    await t.raw.hset(`${prefix}profile`, 'name', 'alice');
    await assert.rejects(t.backend.acquire(b(`${prefix}profile`), { ttlSeconds: 5 }), (e: LockLensError) => e.code === 'INVALID_ARGUMENT');
    await t.raw.rpush(`${prefix}list`, 'x');
    await assert.rejects(t.backend.acquire(b(`${prefix}list`), { ttlSeconds: 5 }), (e: LockLensError) => isLockLensError(e, 'INVALID_ARGUMENT'));
  });

  test('binary key names survive listing, acquire and release', async () => {
    const name = Buffer.concat([b(prefix), Buffer.from([0xff, 0x00, 0xfe])]);
    const hold = await t.backend.acquire(name, { ttlSeconds: 5 });
    const [lock] = await listed();
    assert.deepEqual(lock.name, name);
    assert.equal(lock.id, keyId(name));
    assert.equal(lock.holder?.lease, keyTtlId(name));
    assert.equal(await hold.release(), true);
    assert.equal(await t.raw.exists(name), 0);
  });

  test('a huge hash and other types under the prefix are skipped without loading them', async () => {
    const big = `${prefix}big`;
    const args: string[] = [];
    for (let i = 0; i < 100_000; i++) args.push(`f${i}`, '1');
    for (let i = 0; i < args.length; i += 20_000) await t.raw.hset(big, ...args.slice(i, i + 20_000));
    await t.raw.sadd(`${prefix}set`, 'a');
    await t.raw.xadd(`${prefix}stream`, '*', 'a', '1');
    await t.raw.set(`${prefix}tok`, 't');
    const locks = await listed();
    assert.deepEqual(locks.map((l) => l.name.toString()), [`${prefix}tok`]);
  });

  test('a key that changes type between SCAN and the read is skipped, not a crash', async () => {
    await t.raw.set(`${prefix}flip`, 'token');
    await t.raw.set(`${prefix}stay`, 'token2');
    t.backend.readOptions = {
      afterScanPage: async (keys) => {
        if (keys.some((k) => k.toString() === `${prefix}flip`)) {
          await t.raw.del(`${prefix}flip`);
          await t.raw.rpush(`${prefix}flip`, 'now a list');
        }
      },
    };
    try {
      const locks = await listed();
      assert.deepEqual(locks.map((l) => l.name.toString()), [`${prefix}stay`]);
    } finally {
      t.backend.readOptions = {};
    }
  });
});

describe('redlock: several independent instances', { timeout: 60_000 }, () => {
  let instances: RedisInstances | undefined;
  let servers: readonly RedisServer[] = [];
  let raws: readonly Redis[] = [];
  let backend: RedisBackend;

  before(async () => {
    instances = await startRedisInstances(3);
    ({ servers, raws } = instances);
    backend = await RedisBackend.open({ store: 'redis', endpoints: instances.urls });
  });
  after(async () => {
    backend?.close();
    await instances?.dispose();
  });

  test('held with the same token on every instance, released from all', async () => {
    const hold = await backend.acquire(b('rl/a'), { ttlSeconds: 10 });
    assert.deepEqual(await Promise.all(raws.map((r) => r.get('rl/a'))), [hold.owner, hold.owner, hold.owner]);
    assert.equal(await hold.release(), true);
    assert.deepEqual(await Promise.all(raws.map((r) => r.exists('rl/a'))), [0, 0, 0]);
  });

  test('a majority held elsewhere: LOCKED, and our minority writes undone', async () => {
    await raws[1].set('rl/b', 'theirs', 'PX', 30_000);
    await raws[2].set('rl/b', 'theirs', 'PX', 30_000);
    await assert.rejects(backend.acquire(b('rl/b'), { ttlSeconds: 10, tryOnly: true }), (e: LockLensError) => e.code === 'LOCKED');
    assert.equal(await raws[0].exists('rl/b'), 0, 'the instance that said yes was undone');
  });

  test('a read or write mode is refused: a Redisson read/write lock lives on one Redis, and nothing is written', async () => {
    await assert.rejects(
      backend.acquire(b('rl/rw'), { ttlSeconds: 10, mode: 'write' }),
      (e: LockLensError) => e.code === 'INVALID_ARGUMENT' && /read\/write lock lives on one Redis.*3 independent instances/.test(e.message),
    );
    assert.deepEqual(await Promise.all(raws.map((r) => r.exists('rl/rw'))), [0, 0, 0]);
  });

  test('one instance down: still held by the other two', async () => {
    await servers[2].stop();
    try {
      const hold = await backend.acquire(b('rl/c'), { ttlSeconds: 10 });
      assert.deepEqual(await Promise.all(raws.slice(0, 2).map((r) => r.get('rl/c'))), [hold.owner, hold.owner]);
      assert.equal(await hold.release(), true);
    } finally {
      await servers[2].start();
    }
  });
});

describe('Redis holds and acquires when the server stalls or the connection closes', { timeout: 120_000 }, () => {
  let server: RedisServer;
  let raw: Redis;
  let events: Redis;
  let n = 0;

  before(async () => {
    // Keyspace events show what really ran on the server, in order, without reading at a lucky moment.
    server = await startRedis({ notify: 'KA' });
    raw = new Redis(server.url, { protocol: 2 });
    events = new Redis(server.url, { protocol: 2 });
  });
  after(async () => {
    raw?.disconnect();
    events?.disconnect();
    await server?.dispose();
  });

  /** The keyspace events of one key, as they happen. */
  const keyEvents = async (name: string): Promise<string[]> => {
    const seen: string[] = [];
    const channel = `__keyspace@0__:${name}`;
    events.on('message', (c: string, m: string) => c === channel && seen.push(m));
    await events.subscribe(channel);
    return seen;
  };

  test('a hold whose renewal gets no answer is lost when its TTL runs out, not when the command times out', async () => {
    // A command timeout far beyond the TTL: only the hold's own deadline can report the loss in time.
    const backend = await RedisBackend.open({ store: 'redis', endpoints: [server.url], dialTimeoutMs: 60_000 });
    try {
      const hold = await backend.acquire(b(`stall${++n}`), { ttlSeconds: 1 });
      const lost = new Promise<LockLensError>((resolve) => hold.onDidLose(resolve));
      // Every write (the renewal script) waits while the server is paused; the pause outlasts the TTL.
      await raw.client('PAUSE', 30_000, 'WRITE');
      try {
        const error = await lost;
        assert.equal(error.code, 'LOCK_LOST');
        assert.match(error.message, /could not renew it before its TTL ran out/);
        assert.equal(hold.lost, error, 'reported while the server still had not answered');
      } finally {
        await raw.client('UNPAUSE');
      }
      assert.equal(await hold.release(), false);
    } finally {
      backend.close();
    }
  });

  test('a SET NX that timed out here but ran on the server is undone: the lock is not left held for a TTL', async () => {
    const name = `timedout${++n}`;
    const seen = await keyEvents(name);
    const backend = await RedisBackend.open({ store: 'redis', endpoints: [server.url], dialTimeoutMs: 300 });
    try {
      await raw.client('PAUSE', 1500, 'WRITE');
      await assert.rejects(backend.acquire(b(name), { ttlSeconds: 60 }), (e: LockLensError) => e.code === 'TIMEOUT');
      // When the pause ends the server runs our SET, then our compare-and-delete behind it.
      await eventually(() => seen.includes('del'), 10_000, 'the key deleted, not left to expire');
      assert.deepEqual(seen, ['set', 'expire', 'del'], 'SET … PX, then our compare-and-delete');
    } finally {
      backend.close();
    }
  });

  test('closing the backend ends acquires still waiting with CLOSED, and leaves no subscriber connected', async () => {
    const backend = await RedisBackend.open({ store: 'redis', endpoints: [server.url] });
    const token = `closing-token${++n}`;
    const redissonName = `closing-redisson${n}`;
    await raw.set(token, 'someone', 'PX', 60_000);
    await raw.hset(redissonName, `${REDISSON_UUID}:1`, '1');
    await raw.pexpire(redissonName, 60_000);
    const queued: string[] = [];
    const waiting = [token, redissonName].map((name) => backend.acquire(b(name), { ttlSeconds: 5, onQueue: (p) => p.ahead && queued.push(name) }));
    waiting.forEach((w) => w.catch(() => undefined));
    await eventually(() => queued.length === 2, 10_000, 'both waiting');
    backend.close();
    for (const w of waiting) await assert.rejects(w, (e: LockLensError) => e.code === 'CLOSED');
    await eventually(async () => !/name=locklens-sub /.test(await raw.client('LIST') as string), 10_000, 'no subscriber left');
    assert.equal(await raw.get(token), 'someone');
    assert.deepEqual(Object.keys(await raw.hgetall(redissonName)), [`${REDISSON_UUID}:1`]);
  });
});

import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import type { LockLensError } from '../../src/core/errors';
import { keyId } from '../../src/core/keys';
import { CONVENTIONS } from '../../src/core/redis/recognize';
import { lockChannel, portLockChannel } from '../../src/core/redis/redissonNames';
import { UNLOCK_MESSAGE } from '../../src/core/redis/scripts';
import { PORT_EVENT_STREAM } from '../../src/core/redis/portWake';
import { nodeRedissonLock } from '../harness/nodeRedisson';
import { eventually } from '../harness/redis';
import { redisSuite } from '../harness/redisSuite';

const b = (s: string) => Buffer.from(s);
/** node-redisson's field: its client's uuid, then one per RLock object where Redisson has a thread number. */
const PORT_FIELD = /^[0-9a-f-]{36}:[0-9a-f-]{36}$/;
const UUID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';

/**
 * npm node-redisson, a port of Redisson's RLock, as a real peer in its own process, both ways. Its waiters sleep until
 * an unlock message on the lock's channel or the holder's whole PTTL, so a waiter that gets a lock held for 600 s
 * within the test was woken by the message.
 */
describe('node-redisson against a real redis-server', { timeout: 120_000 }, () => {
  const t = redisSuite();
  let n = 0;
  let prefix = '';

  beforeEach(() => {
    prefix = `nr${++n}/`;
  });

  const peer = (name: string, lease: number | 'watchdog', holds = 1, events: 'pubsub' | 'streams' = 'pubsub') => {
    const p = nodeRedissonLock(t.server.url, name, lease, holds, events);
    t.defer(() => p.dispose());
    return p;
  };
  const listed = async (name: string) => (await t.backend.list([b(prefix)])).locks.find((l) => l.name.equals(b(name)));
  const subscribers = async (channel: Buffer) => ((await t.raw.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1];
  /** What is published on `channel` from now on, read by a client of its own. */
  const messagesOn = async (channel: Buffer) => {
    const sub = new Redis(t.server.url, { protocol: 2 });
    t.defer(() => sub.disconnect());
    const seen: string[] = [];
    sub.on('messageBuffer', (c: Buffer, m: Buffer) => c.equals(channel) && seen.push(m.toString()));
    await sub.subscribe(channel as unknown as string);
    return seen;
  };

  test('node-redisson holds, re-entered: listed with its <uuid>:<uuid> field and count; our acquire waits and gets it at its unlock', async () => {
    const name = `${prefix}orders`;
    const holder = peer(name, 'watchdog', 2);
    const field = (await holder.until('acquired')).split(' ')[1];
    assert.match(field, PORT_FIELD);
    const listing = await t.backend.list([b(prefix)]);
    assert.equal(listing.locks.length, 1);
    const [lock] = listing.locks;
    assert.deepEqual([lock.name.toString(), lock.kind], [name, 'queue']);
    assert.equal(lock.holder?.convention, CONVENTIONS.redissonPortLock);
    assert.equal(lock.holder?.owner, field);
    assert.deepEqual(lock.holder?.key, b(field));
    assert.equal(lock.holder?.holds, 2);
    assert.equal(lock.holder?.expiresWith, 'ttl');
    const lease = listing.lease(lock.holder!.lease)!;
    assert.ok(lease.state === 'alive' && lease.ttl > 0 && lease.ttl <= 30, 'the watchdog lease, 30 s');

    const positions: number[] = [];
    const ours = t.backend.acquire(b(name), { ttlSeconds: 10, onQueue: (p) => positions.push(p.ahead) });
    await eventually(() => positions.includes(1), 10_000, 'told we wait behind node-redisson');
    assert.equal((await listed(name))?.holder?.owner, field, "still node-redisson's");
    holder.next();
    assert.equal(await holder.until('unlock'), 'unlock ok');
    const hold = await ours;
    t.defer(() => hold.release());
    assert.deepEqual(positions, [1, 0]);
    const now = await listed(name);
    assert.equal(now?.holder?.owner, hold.owner);
    assert.equal(now?.holder?.convention, CONVENTIONS.redissonLock, "ours is Redisson's <uuid>:<n>, in the same hash");
    assert.equal(await hold.release(), true);
    assert.equal(await listed(name), undefined);
  });

  test("the live watch (the tree's source) follows a node-redisson lock coming and going", async () => {
    const name = `${prefix}watched`;
    const watch = t.backend.watch([b(prefix)], { pollIntervalMs: 100 });
    t.defer(() => watch.dispose());
    await watch.start();
    const holder = peer(name, 'watchdog');
    const field = (await holder.until('acquired')).split(' ')[1];
    await eventually(() => watch.lock(keyId(b(name)))?.holder?.owner === field, 10_000, 'the lock seen');
    assert.equal(watch.lock(keyId(b(name)))?.holder?.convention, CONVENTIONS.redissonPortLock);
    holder.next();
    assert.equal(await holder.until('unlock'), 'unlock ok');
    await eventually(() => watch.lock(keyId(b(name))) === undefined, 10_000, 'the lock gone');
  });

  test("we hold re-entrantly with a 600 s TTL: node-redisson's waiter is woken by the unlock on its own channel, a name with a hash tag inside", async () => {
    const name = `${prefix}{orders}:42`;
    const channel = portLockChannel(b(name));
    assert.notDeepEqual(channel, lockChannel(b(name)), "node-redisson spells this name's channel its own way");
    // A free name is taken as a token lock (how a free name is laid out is not this test's): node-redisson makes it an RLock first.
    const first = peer(name, 'watchdog');
    await first.until('acquired');
    const owner = await t.backend.openOwner();
    t.defer(() => owner.close());
    const queued: number[] = [];
    const taking = t.backend.acquire(b(name), { ttlSeconds: 600, owner, onQueue: (p) => queued.push(p.ahead) });
    await eventually(() => queued.includes(1), 10_000, 'we wait behind node-redisson');
    first.next();
    assert.equal(await first.until('unlock'), 'unlock ok');
    const outer = await taking;
    const inner = await t.backend.acquire(b(name), { ttlSeconds: 600, owner });
    const held = await listed(name);
    assert.equal(held?.holder?.owner, owner.id);
    assert.equal(held?.holder?.holds, 2, 're-entered: one field, counted');

    const seen = await messagesOn(channel);
    const waiter = peer(name, 'watchdog');
    // Its subscription is seen from outside first; its listener is attached only after the server confirmed it, and a
    // message in between is lost to it (node-redisson's own race), so the test releases once it says it listens.
    await waiter.until('listening');
    assert.equal(await subscribers(channel), 2, "node-redisson's waiter subscribed to its own spelling of the channel, beside ours");
    const listing = await t.backend.list([b(prefix)]);
    assert.ok(listing.lease(listing.locks[0].holder!.lease)!.ttl > 500, 'the TTL the waiter would otherwise sleep out');
    await inner.release();
    assert.equal((await listed(name))?.holder?.holds, 1, 'one hold left: still ours');
    assert.ok(!waiter.lines.some((l) => l.startsWith('acquired')));
    assert.equal(await outer.release(), true);
    const field = (await waiter.until('acquired')).split(' ')[1];
    await eventually(() => seen.length > 0, 10_000, 'the unlock message read by our own subscriber');
    assert.deepEqual(seen, [UNLOCK_MESSAGE], 'one unlock message, on the channel node-redisson listens to');
    assert.equal((await listed(name))?.holder?.owner, field);
    waiter.next();
    assert.equal(await waiter.until('unlock'), 'unlock ok');
  });

  test("force release of a node-redisson holder (600 s lease) wakes a node-redisson waiter; the old holder's unlock then fails", async () => {
    const name = `${prefix}jobs`;
    const holder = peer(name, 600_000);
    const held = (await holder.until('acquired')).split(' ')[1];
    const waiter = peer(name, 'watchdog');
    await waiter.until('listening');
    const lock = (await listed(name))!;
    assert.equal(lock.holder?.owner, held);
    assert.match(t.backend.describeForceRelease(lock, lock.holder!), /Redisson's channel and node-redisson's/);
    const result = await t.backend.forceRelease(lock, lock.holder!);
    assert.deepEqual(result.keys, [b(name)]);
    const next = (await waiter.until('acquired')).split(' ')[1];
    assert.notEqual(next, held);
    assert.equal((await listed(name))?.holder?.owner, next);
    await assert.rejects(t.backend.forceRelease(lock, lock.holder!), (e: LockLensError) => e.code === 'LOCK_CHANGED', 'what was shown is gone');
    holder.next();
    assert.equal(await holder.until('unlock'), 'unlock failed RedissonLockError');
    waiter.next();
    assert.equal(await waiter.until('unlock'), 'unlock ok');
  });

  test("node-redisson with its 'streams' event adapter: our release and force release wake its waiters through redisson:events, where its unlocks made the stream", async () => {
    const name = `${prefix}streamed`;
    const first = peer(name, 'watchdog', 1, 'streams');
    await first.until('acquired');
    const queued: number[] = [];
    const taking = t.backend.acquire(b(name), { ttlSeconds: 600, onQueue: (p) => queued.push(p.ahead) });
    await eventually(() => queued.includes(1), 10_000, 'we wait behind node-redisson');
    first.next();
    assert.equal(await first.until('unlock'), 'unlock ok');
    const hold = await taking;
    t.defer(() => hold.release());
    assert.equal(await t.raw.type(PORT_EVENT_STREAM), 'stream', "node-redisson's unlock made its stream");
    const before = await t.raw.xlen(PORT_EVENT_STREAM);
    const waiter = peer(name, 600_000, 1, 'streams');
    await waiter.until('listening');
    assert.equal(await subscribers(portLockChannel(b(name))), 0, 'nothing subscribed: it reads the stream');
    assert.equal(await hold.release(), true);
    await waiter.until('acquired');
    const added = (await t.raw.xrange(PORT_EVENT_STREAM, '-', '+')).slice(before);
    assert.deepEqual(added[0][1], [portLockChannel(b(name)).toString(), UNLOCK_MESSAGE], 'our unlock, as node-redisson adds its own');

    // A force release tells the stream too: the next waiter would otherwise sleep out the holder's 600 s PTTL.
    const third = peer(name, 'watchdog', 1, 'streams');
    await third.until('listening');
    const lock = (await listed(name))!;
    await t.backend.forceRelease(lock, lock.holder!);
    await third.until('acquired');
    waiter.next();
    assert.equal(await waiter.until('unlock'), 'unlock failed RedissonLockError');
    third.next();
    assert.equal(await third.until('unlock'), 'unlock ok');
  });

  test('hashes of counters written with HINCRBY are not locks, and acquire leaves them alone', async () => {
    const views = `${prefix}page:views`;
    await t.raw.hincrby(views, '2024-01:17', 17);
    await t.raw.hincrby(views, 'user:42', 3);
    const monthly = `${prefix}page:monthly`;
    await t.raw.hincrby(monthly, '2024-01:17', 1);
    await t.raw.pexpire(monthly, 60_000);
    const sessions = `${prefix}sessions`;
    await t.raw.hincrby(sessions, `${UUID}:${UUID}`, 4); // node-redisson's field shape, but nothing expires it
    assert.deepEqual((await t.backend.list([b(prefix)])).locks, []);
    for (const name of [views, monthly, sessions]) {
      const before = await t.raw.hgetall(name);
      await assert.rejects(t.backend.acquire(b(name), { ttlSeconds: 5, tryOnly: true }), (e: LockLensError) => e.code === 'INVALID_ARGUMENT' && /not a lock layout LockLens knows/.test(e.message), name);
      assert.deepEqual(await t.raw.hgetall(name), before, name);
    }
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { MultiSemaphore, Semaphore } from 'redis-semaphore';
import type { LockHold, QueuePosition } from '../../src/core/backend';
import { isLockLensError } from '../../src/core/errors';
import type { ObserveOptions } from '../../src/core/holdObservation';
import { keyId } from '../../src/core/keys';
import type { LockEvent } from '../../src/core/lockEventTypes';
import { LockEvents } from '../../src/core/lockEvents';
import { LockStats } from '../../src/core/lockStats';
import { HistoryStore } from '../../src/core/recording/historyStore';
import { HistoryRecorder } from '../../src/core/recording/recorder';
import { CONVENTIONS } from '../../src/core/redis/recognize';
import { NON_EXPIRABLE, permitTimeoutKey, semaphoreChannel } from '../../src/core/redis/semaphores';
import { holderCount, type LockState } from '../../src/core/lockState';
import { eventually } from '../harness/redis';
import { redisSuite } from '../harness/redisSuite';

const b = (s: string) => Buffer.from(s);

/** RedissonPermitExpirableSemaphore's tryAcquire and tryRelease scripts, verbatim (Redisson 3.x): the peer's side. */
const REDISSON_TRY_ACQUIRE =
  "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]); " +
  "if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); " +
  "if tonumber(value) > 0 then redis.call(ARGV[5], KEYS[3], value); end;end; " +
  "local value = redis.call('get', KEYS[1]); " +
  "if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then redis.call('decrby', KEYS[1], ARGV[1]); " +
  "for i = 6, #ARGV, 1 do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); end; " +
  "local ttl = redis.call('pttl', KEYS[1]); if ttl > 0 then redis.call('pexpire', KEYS[2], ttl); end; return 'OK'; end; " +
  "local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES'); if v[1] ~= nil and v[2] ~= ARGV[4] then return ':' .. tostring(v[2]); end return nil;";
const REDISSON_TRY_RELEASE =
  "local expire = redis.call('zscore', KEYS[3], ARGV[1]);local removed = redis.call('zrem', KEYS[3], ARGV[1]);" +
  "if tonumber(removed) ~= 1 then return 0;end;local value = redis.call('incrby', KEYS[1], ARGV[2]); redis.call(ARGV[4], KEYS[2], value); " +
  "if tonumber(expire) <= tonumber(ARGV[3]) then return 0;end;return 1;";

/**
 * Semaphores on a real redis-server: npm redis-semaphore's Semaphore and MultiSemaphore as real peers, both ways (they
 * hold every permit and LockLens waits; LockLens holds one and a peer at the limit waits), a permit force-released
 * alone, every permit a rotating peer takes counted as a hold; Redisson's RPermitExpirableSemaphore and RSemaphore as
 * their Lua leaves them (no Redisson client in the tests).
 */
describe('Redis semaphores', { timeout: 120_000 }, () => {
  const t = redisSuite();
  let n = 0;
  const fresh = () => `jobs${++n}`;
  const peer = (key: string, limit: number, options: ConstructorParameters<typeof Semaphore>[3] = {}) => {
    const s = new Semaphore(t.raw, key, limit, { acquireTimeout: 60_000, retryInterval: 20, ...options });
    t.defer(() => s.release().catch(() => undefined));
    return s;
  };
  const listed = async (name: string): Promise<LockState | undefined> => (await t.backend.list([b(name)])).locks.find((l) => l.name.equals(b(name)));
  const holders = (lock: LockState | undefined) => (lock?.holder ? [lock.holder, ...(lock.sharedWith ?? [])] : []);
  const take = async (name: string, permitLimit: number, extra: { tryOnly?: boolean; onQueue?: (p: QueuePosition) => void } = {}): Promise<LockHold> => {
    const hold = await t.backend.acquire(b(name), { ttlSeconds: 10, permitLimit, ...extra });
    t.defer(() => hold.release().catch(() => undefined));
    return hold;
  };

  test("redis-semaphore's permits are listed as a semaphore, each holder with its identifier and TTL", async () => {
    const key = fresh();
    const [a, c] = [peer(key, 3), peer(key, 3)];
    await a.acquire();
    await c.acquire();
    const multi = new MultiSemaphore(t.raw, `${key}-multi`, 4, 2, { acquireTimeout: 1000 });
    t.defer(() => multi.release().catch(() => undefined));
    await multi.acquire();
    const lock = await listed(`semaphore:${key}`);
    assert.equal(lock?.kind, 'semaphore');
    assert.deepEqual(lock.permits, { limit: null, free: null, holdersRecorded: true });
    assert.deepEqual(holders(lock).map((m) => m.owner).sort(), [a.identifier, c.identifier].sort());
    assert.ok(holders(lock).every((m) => m.convention === CONVENTIONS.redisSemaphore && m.expiresWith === 'ttl'));
    const many = await listed(`semaphore:${key}-multi`);
    assert.deepEqual(holders(many).map((m) => [m.owner, m.key.toString()]), [[multi.identifier, `${multi.identifier}_0`], [multi.identifier, `${multi.identifier}_1`]]);
  });

  test('peers hold every permit: LockLens waits, and takes the one a peer gives back', async () => {
    const key = fresh();
    const name = `semaphore:${key}`;
    const peers = [peer(key, 2), peer(key, 2)];
    for (const p of peers) await p.acquire();
    const positions: number[] = [];
    const pending = take(name, 2, { onQueue: (p) => positions.push(p.ahead) });
    await eventually(() => positions.includes(1), 10_000, 'LockLens waiting');
    await assert.rejects(take(name, 2, { tryOnly: true }), (e) => isLockLensError(e) && e.code === 'LOCKED');
    await peers[0].release();
    const hold = await pending;
    assert.deepEqual(positions, [1, 0]);
    const members = await t.raw.zrange(name, '0', '-1');
    assert.deepEqual(members.sort(), [hold.owner, peers[1].identifier].sort(), 'our token beside the peer that kept its permit');
  });

  test('LockLens holds a permit: a peer at the limit waits, and gets it when LockLens releases', async () => {
    const key = fresh();
    const name = `semaphore:${key}`;
    const first = peer(key, 2);
    await first.acquire();
    const hold = await take(name, 2);
    const late = peer(key, 2);
    assert.equal(await peer(key, 2, { acquireAttemptsLimit: 1 }).tryAcquire(), false, 'both permits are held');
    const waiting = late.acquire();
    assert.equal(await hold.release(), true);
    await waiting;
    assert.deepEqual((await t.raw.zrange(name, '0', '-1')).sort(), [first.identifier, late.identifier].sort());
  });

  test("every permit a peer takes is a hold: 3 permits, 5 rotating holders, 5 holds in the statistics, serve's events and the recorded history", async () => {
    const key = fresh();
    const name = `semaphore:${key}`;
    const id = keyId(b(name));
    const watch = t.backend.watch([b('semaphore:')]);
    const stats = new LockStats();
    const events = new LockEvents('r');
    const seen: LockEvent[] = [];
    const options: ObserveOptions = { hasLeases: false, hasRevisions: false, sampledTtls: true, lease: (l) => watch.lease(l) };
    const data = mkdtempSync(join(tmpdir(), 'locklens-permits-'));
    t.defer(() => rmSync(data, { recursive: true, force: true }));
    const recorder = await HistoryRecorder.open(data);
    watch.onDidChangeLocks((changes) => {
      stats.observe('r', changes, options);
      seen.push(...events.observe(changes, options, Date.now()).events.filter((e) => e.lockId === id));
    });
    watch.onDidChangeLeases((infos) => {
      stats.observeLeases('r', infos);
      events.observeLeases(infos);
    });
    t.defer(() => watch.dispose());
    await watch.start();
    const workers = [0, 1, 2, 3, 4].map(() => peer(key, 3));
    const holding = async (...held: Semaphore[]) => {
      await watch.sync();
      assert.deepEqual(holders(watch.lock(id)).map((m) => m.owner).sort(), held.map((w) => w.identifier).sort());
    };
    const [p1, p2, p3, p4, p5] = workers;
    for (const w of [p1, p2, p3]) await w.acquire();
    await holding(p1, p2, p3);
    await p1.release();
    await p4.acquire();
    await holding(p2, p3, p4);
    await p2.release();
    await p5.acquire();
    await holding(p3, p4, p5);
    for (const w of [p3, p4, p5]) await w.release();
    await watch.sync();
    assert.equal(watch.lock(id), undefined);
    const owners = workers.map((w) => w.identifier).sort();
    const holds = stats.holds('r', id);
    assert.deepEqual(holds.map((h) => h.owner).sort(), owners, 'a hold per permit taken');
    assert.ok(holds.every((h) => h.endedAt !== null && h.end === 'released'), 'each ended, released by its own ZREM');
    assert.equal(stats.figures('r', id)?.holds, 5);
    const started = seen.filter((ev) => ev.type === 'holdStarted').map((ev) => ev.member.owner);
    const ended = seen.filter((ev) => ev.type === 'holdEnded').map((ev) => ev.member.owner);
    assert.deepEqual([started.sort(), ended.sort()], [owners, owners], "serve's events: each permit hold starts and ends once");
    for (const ev of seen) recorder.record(ev, 'redis');
    await recorder.close();
    const reader = await HistoryStore.openReader(data);
    const recorded = await reader.holds({ lock: name });
    reader.close();
    assert.deepEqual(recorded.map((h) => h.owner).sort(), owners, 'a recorded hold per permit taken');
    assert.ok(recorded.every((h) => h.endedAt !== null && h.end === 'released'));
  });

  test('a free semaphore:KEY becomes one with --permits; a name without the prefix, or a limit missing, is refused', async () => {
    const key = fresh();
    const hold = await take(`semaphore:${key}`, 1);
    assert.equal(await peer(key, 1, { acquireAttemptsLimit: 1 }).tryAcquire(), false, 'redis-semaphore sees our permit');
    await assert.rejects(take(key, 1), (e) => isLockLensError(e) && e.code === 'INVALID_ARGUMENT' && /semaphore:/.test(e.message));
    await assert.rejects(t.backend.acquire(b(`semaphore:${key}`), { ttlSeconds: 10 }), (e) => isLockLensError(e) && e.code === 'INVALID_ARGUMENT' && /limit/.test(e.message));
    await hold.release();
  });

  test('force release takes back the one permit shown: a waiting peer gets it, the other holder keeps its own', async () => {
    const key = fresh();
    const name = `semaphore:${key}`;
    const [a, c] = [peer(key, 2), peer(key, 2)];
    await a.acquire();
    await c.acquire();
    const lock = (await listed(name))!;
    const shown = holders(lock).find((m) => m.owner === a.identifier)!;
    const late = peer(key, 2);
    const waiting = late.acquire();
    const result = await t.backend.forceRelease(lock, shown);
    assert.match(result.action, /removed that permit/);
    await waiting;
    assert.deepEqual((await t.raw.zrange(name, '0', '-1')).sort(), [c.identifier, late.identifier].sort());
    // The permit shown is gone: releasing it again changes nothing, and says so.
    await assert.rejects(t.backend.forceRelease(lock, shown), (e) => isLockLensError(e) && e.code === 'LOCK_CHANGED');
    assert.equal(await t.raw.zcard(name), 2);
  });

  test("a MultiSemaphore holder's permits are force-released together: its refresh would bring one back alone", async () => {
    const key = fresh();
    const name = `semaphore:${key}`;
    const multi = new MultiSemaphore(t.raw, key, 3, 2, { acquireTimeout: 60_000, retryInterval: 20, refreshInterval: 0 });
    t.defer(() => multi.release().catch(() => undefined));
    await multi.acquire();
    const single = peer(key, 3);
    await single.acquire();
    const lock = (await listed(name))!;
    const shown = holders(lock).find((m) => m.key.toString() === `${multi.identifier}_1`)!;
    assert.match(t.backend.describeForceRelease(lock, shown), /Removes the 2 permits of the MultiSemaphore holder/);
    const result = await t.backend.forceRelease(lock, shown);
    assert.match(result.action, /removed that holder's 2 permits/);
    assert.deepEqual(await t.raw.zrange(name, '0', '-1'), [single.identifier]);
    const next = new MultiSemaphore(t.raw, key, 3, 2, { acquireAttemptsLimit: 1 });
    t.defer(() => next.release().catch(() => undefined));
    assert.equal(await next.tryAcquire(), true, 'both permits free for another MultiSemaphore');
  });

  test("Redisson's RPermitExpirableSemaphore: the ids held, the free count; a permit force-released as Redisson's release does", async () => {
    const name = `pool${++n}`;
    const [id1, id2] = [Buffer.alloc(16, 1), Buffer.alloc(16, 2)];
    // As tryAcquire leaves it with 3 permits set and two taken, one with a lease time and one without.
    await t.raw.set(name, '1');
    await t.raw.zadd(permitTimeoutKey(b(name)), Date.now() + 60_000, id1, NON_EXPIRABLE, id2);
    const lock = (await listed(name))!;
    assert.equal(lock.kind, 'semaphore');
    assert.deepEqual(lock.permits, { limit: 3, free: 1, holdersRecorded: true });
    assert.deepEqual(holders(lock).map((m) => m.owner), [id1.toString('hex'), id2.toString('hex')]);
    const sub = new Redis(t.server.url, { protocol: 2 });
    t.defer(() => sub.disconnect());
    const messages: string[] = [];
    sub.on('message', (_c: string, m: string) => messages.push(m));
    await sub.subscribe(semaphoreChannel(b(name)).toString());
    await t.backend.forceRelease(lock, lock.holder!);
    assert.equal(await t.raw.get(name), '2');
    assert.deepEqual(await t.raw.zrangeBuffer(permitTimeoutKey(b(name)), '0', '-1'), [id2]);
    await eventually(() => messages.includes('2'), 10_000, "Redisson's waiters told");
    await assert.rejects(t.backend.forceRelease(lock, lock.holder!), (e) => isLockLensError(e) && e.code === 'LOCK_CHANGED');
  });

  test("Redisson's RPermitExpirableSemaphore taken from LockLens with its scripts: it waits for a permit given back, and gives its own back to a Redisson waiter", async () => {
    const name = `pool${++n}`;
    const keys = [name, permitTimeoutKey(b(name)), semaphoreChannel(b(name))];
    const redissonAcquire = (id: Buffer) => t.raw.eval(REDISSON_TRY_ACQUIRE, 3, ...keys, 1, Date.now() + 60_000, Date.now(), NON_EXPIRABLE, 'publish', id);
    const redissonRelease = (id: Buffer) => t.raw.eval(REDISSON_TRY_RELEASE, 3, name, semaphoreChannel(b(name)), permitTimeoutKey(b(name)), id, 1, Date.now(), 'publish');
    await t.raw.set(name, '2');
    const [a, c, late] = [Buffer.alloc(16, 0xa), Buffer.alloc(16, 0xc), Buffer.alloc(16, 0xd)];
    assert.equal(await redissonAcquire(a), 'OK');
    assert.equal(await redissonAcquire(c), 'OK');
    const positions: number[] = [];
    const pending = t.backend.acquire(b(name), { ttlSeconds: 10, onQueue: (p) => positions.push(p.ahead) });
    t.defer(async () => (await pending.catch(() => undefined))?.release().catch(() => undefined));
    await eventually(() => positions.includes(1), 10_000, 'LockLens waiting for a permit');
    assert.equal(await redissonRelease(a), 1);
    const hold = await pending;
    assert.equal(await t.raw.get(name), '0');
    const ids = await t.raw.zrangeBuffer(permitTimeoutKey(b(name)), '0', '-1', 'WITHSCORES');
    assert.deepEqual(ids.filter((_, i) => i % 2 === 0).map((id) => id.toString('hex')).sort(), [c.toString('hex'), hold.owner].sort(), 'our id beside the one Redisson kept');
    assert.ok(Number(ids[ids.findIndex((id) => id.toString('hex') === hold.owner) + 1]) > Date.now(), 'our permit expires with its TTL, renewed while held');
    assert.notEqual(await redissonAcquire(late), 'OK', 'no permit free for Redisson while LockLens holds one (it answers when the next expires)');
    assert.equal(await hold.release(), true);
    assert.equal(await redissonAcquire(late), 'OK', 'the permit we gave back');
  });

  test('every permit of an RPermitExpirableSemaphore free, it is a bare counter: taken as one only when its layout is asked for', async () => {
    const name = `pool${++n}`;
    await t.raw.set(name, '1');
    await assert.rejects(t.backend.acquire(b(name), { ttlSeconds: 10, tryOnly: true }), (e) => isLockLensError(e) && e.code === 'LOCKED', 'read as a token lock');
    const hold = await t.backend.acquire(b(name), { ttlSeconds: 10, tryOnly: true, layout: CONVENTIONS.redissonPermitSemaphore });
    t.defer(() => hold.release().catch(() => undefined));
    assert.equal(await t.raw.get(name), '0');
    assert.equal((await listed(name))?.holder?.owner, hold.owner);
    await assert.rejects(t.backend.acquire(b(name), { ttlSeconds: 10, tryOnly: true }), (e) => isLockLensError(e) && e.code === 'LOCKED' && /no permit/.test(e.message));
  });

  test("Redisson's RSemaphore: an integer is a semaphore while a Redisson client waits on its channel, holders not recorded", async () => {
    const name = `slots${++n}`;
    await t.raw.set(name, '0');
    assert.equal((await listed(name))?.kind, 'single', 'nobody waits: it may be a SET name 1 NX token lock');
    const sub = new Redis(t.server.url, { protocol: 2 });
    t.defer(() => sub.disconnect());
    await sub.subscribe(semaphoreChannel(b(name)).toString());
    const lock = await listed(name);
    assert.equal(lock?.kind, 'semaphore');
    assert.equal(holderCount(lock), 0);
    assert.deepEqual(lock.permits, { limit: null, free: 0, holdersRecorded: false });
    assert.equal(t.backend.acquirable(lock), false);
    await assert.rejects(t.backend.acquire(b(name), { ttlSeconds: 10 }), (e) => isLockLensError(e) && e.code === 'INVALID_ARGUMENT' && /RSemaphore/.test(e.message));
    // Once seen so, it stays a semaphore when nobody waits, while it holds an integer; something else, it is forgotten.
    await sub.unsubscribe();
    await t.raw.set(name, '1');
    assert.deepEqual((await listed(name))?.permits, { limit: null, free: 1, holdersRecorded: false });
    await t.raw.set(name, 'tok-x');
    assert.equal((await listed(name))?.kind, 'single');
    await t.raw.set(name, '1');
    assert.equal((await listed(name))?.kind, 'single', 'forgotten: an integer nobody waits on is a token again');
  });
});

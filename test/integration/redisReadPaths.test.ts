import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import type { LockMember, LockState } from '../../src/core/lockState';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import { semaphoreChannel } from '../../src/core/redis/semaphores';
import { startRedis, type RedisServer } from '../harness/redis';
import { FakeRedisson, OTHER_UUID } from '../harness/redisson';

const b = (s: string) => Buffer.from(s);

/** What a view shows of a lock, to compare two reads of the same keys. */
function shown(lock: LockState) {
  const member = (m: LockMember | null) => m && { key: m.key.toString('hex'), owner: m.owner, convention: m.convention, holds: m.holds, mode: m.mode, expiresWith: m.expiresWith, ttl: m.lease !== '', valueSize: m.valueSize };
  return { name: lock.name.toString(), kind: lock.kind, holder: member(lock.holder), sharedWith: (lock.sharedWith ?? []).map(member), waiters: lock.waiters.map(member), permits: lock.permits };
}

describe('Redis reads: one script per batch of keys, or pipelines where the server refuses scripts', { timeout: 60_000 }, () => {
  let server: RedisServer;
  let raw: Redis;
  let redisson: FakeRedisson;
  let scripted: RedisBackend;
  let piped: RedisBackend;
  const prefixes = [b('paths/'), b('semaphore:paths-')];

  before(async () => {
    server = await startRedis({ users: ['reader on >reader-pw ~* &* +@all -@scripting'] });
    raw = new Redis(server.url, { protocol: 2 });
    redisson = FakeRedisson.connect(server.url);
    scripted = await RedisBackend.open({ store: 'redis', endpoints: [server.url] });
    piped = await RedisBackend.open({ store: 'redis', endpoints: [server.url], username: 'reader', password: 'reader-pw' });
  });
  after(async () => {
    scripted?.close();
    piped?.close();
    redisson?.dispose();
    raw?.disconnect();
    await server?.dispose();
  });

  const evalStats = async () => {
    const line = (await raw.info('commandstats')).split('\n').find((l) => l.startsWith('cmdstat_eval:')) ?? '';
    return { calls: Number(/calls=(\d+)/.exec(line)?.[1] ?? 0), rejected: Number(/rejected_calls=(\d+)/.exec(line)?.[1] ?? 0) };
  };

  test('both read every layout alike, and a connection refused once stops trying', async (ctx) => {
    await raw.set('paths/token', 'c9a7e3a4-5b6d-4e8f-9a0b-1c2d3e4f5a6b', 'PX', 60_000);
    await raw.set('paths/one', '1', 'PX', 60_000);
    await raw.set('paths/shed', 'ADDED:2026-11-27T20:00:00.000Z@host-1', 'PX', 60_000);
    await raw.set('paths/empty', '');
    await raw.set('paths/big', 'x'.repeat(2000), 'PX', 60_000);
    await raw.hset('paths/wide', Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`f${i}`, '1'])));
    await raw.rpush('paths/list', 'a');
    await raw.zadd('paths/ranks', 1, 'a');
    assert.equal(await redisson.lock('paths/orders', 1), null);
    assert.equal(await redisson.fairLock('paths/fair', 1), null);
    assert.notEqual(await redisson.fairLock('paths/fair', 2, 30_000, OTHER_UUID), null);
    assert.equal(await redisson.readLock('paths/rw', 1), null);
    assert.equal(await redisson.readLock('paths/rw', 2, 30_000, OTHER_UUID), null);
    await raw.zadd('semaphore:paths-s', Date.now(), 'holder-a', Date.now(), 'holder-b_0');
    await raw.pexpire('semaphore:paths-s', 60_000);
    // An RSemaphore among other integers: its waiter's channel is counted with theirs, in one NUMSUB.
    await raw.set('paths/sem', '0');
    const waiter = raw.duplicate();
    ctx.after(() => waiter.disconnect());
    await waiter.subscribe(semaphoreChannel(b('paths/sem')).toString());
    await raw.set('paths/permits', '2');
    await raw.zadd('{paths/permits}:timeout', Date.now() + 60_000, 'aabbccdd');

    const before = await evalStats();
    const byScript = (await scripted.list(prefixes)).locks.map(shown);
    const afterScript = await evalStats();
    assert.ok(afterScript.calls > before.calls, 'the scripted connection ran its script');
    const byPipelines = (await piped.list(prefixes)).locks.map(shown);
    const afterPipelines = await evalStats();
    assert.equal(afterPipelines.calls, afterScript.calls, 'no script ran for the connection without scripting');
    assert.equal(afterPipelines.rejected, afterScript.rejected + 1, 'refused once');

    assert.deepEqual(byScript.map((l) => l.name), ['paths/fair', 'paths/one', 'paths/orders', 'paths/permits', 'paths/rw', 'paths/sem', 'paths/shed', 'paths/token', 'semaphore:paths-s']);
    assert.deepEqual(byPipelines, byScript);
    assert.equal(byScript.find((l) => l.name === 'paths/fair')?.waiters.length, 1);
    assert.deepEqual(byScript.find((l) => l.name === 'paths/permits')?.permits, { limit: 3, free: 2, holdersRecorded: true });
    assert.deepEqual(byScript.find((l) => l.name === 'paths/sem')?.permits, { limit: null, free: 0, holdersRecorded: false });
    assert.equal(byScript.find((l) => l.name === 'paths/one')?.kind, 'single', 'an integer nobody waits on is a token');

    await piped.list(prefixes);
    assert.equal((await evalStats()).rejected, afterPipelines.rejected, 'not asked again');
  });
});

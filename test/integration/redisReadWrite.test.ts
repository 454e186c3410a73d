import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import type { LockHold, QueuePosition } from '../../src/core/backend';
import { isLockLensError, type LockLensError } from '../../src/core/errors';
import { READ_LEASE_MS } from '../../src/core/redis/acquire/readWriteHold';
import { rwLockChannel } from '../../src/core/redis/redissonNames';
import { READ_UNLOCK_MESSAGE, REDISSON_LOCK, RW_WRITE_UNLOCK } from '../../src/core/redis/scripts';
import { CONVENTIONS } from '../../src/core/redis/recognize';
import { eventually, sleep } from '../harness/redis';
import { OTHER_UUID, REDISSON_UUID } from '../harness/redisson';
import { redisSuite } from '../harness/redisSuite';

const b = (s: string) => Buffer.from(s);
const FIELD = /^[0-9a-f-]{36}:\d+$/;

/**
 * Redisson's RReadWriteLock taken from LockLens (acquire with a mode), against Redisson's own Lua run by FakeRedisson
 * on a real redis-server: readers share, a writer excludes everyone in both directions, waiters wake on the unlock
 * messages each side publishes on `redisson_rwlock:{name}`, and every hold leaves the hash as Redisson's would.
 */
describe('Redisson read/write locks taken from LockLens', { timeout: 120_000 }, () => {
  const t = redisSuite();
  let n = 0;
  let name = '';
  beforeEach(() => {
    name = `rw${++n}`;
  });

  const fields = () => t.raw.hgetall(name);
  const channel = () => `redisson_rwlock:{${name}}`;
  const timeoutKey = (field: string, i: number) => `{${name}}:${field}:rwlock_timeout:${i}`;
  const subscribers = async () => ((await t.raw.pubsub('NUMSUB', channel())) as [string, number])[1];
  const listed = async () => (await t.backend.list([b(name)])).locks.filter((l) => l.name.equals(b(name)));
  /** The messages published on the lock's channel from now on. */
  const listen = async () => {
    const sub = new Redis(t.server.url, { protocol: 2 });
    t.defer(() => sub.disconnect());
    const messages: string[] = [];
    sub.on('message', (_c: string, m: string) => messages.push(m));
    await sub.subscribe(channel());
    return messages;
  };
  const release = (hold: LockHold) => t.defer(() => hold.release().catch(() => undefined));
  /** An acquire that waits, with what it was told. */
  const waiting = (mode: 'read' | 'write', extra: { signal?: AbortSignal; onQueue?: (p: QueuePosition) => void } = {}) => {
    const positions: number[] = [];
    const pending = t.backend.acquire(b(name), { ttlSeconds: 30, mode, ...extra, onQueue: (p) => (positions.push(p.ahead), extra.onQueue?.(p)) });
    pending.catch(() => undefined);
    return { pending, positions };
  };

  test('our read lock shares with Redisson readers, either one first, and is listed as one of the readers', async () => {
    assert.equal(await t.redisson.readLock(name, 1), null);
    const ours = await t.backend.acquire(b(name), { ttlSeconds: 30, mode: 'read' });
    release(ours);
    assert.match(ours.owner, FIELD);
    assert.equal(ours.key.toString(), ours.owner, 'a reader holds with its `<uuid>:<thread>` field');
    assert.equal(await t.redisson.readLock(name, 2, 30_000, OTHER_UUID), null, 'a Redisson reader enters beside us');
    assert.deepEqual(await fields(), { mode: 'read', [`${REDISSON_UUID}:1`]: '1', [ours.owner]: '1', [`${OTHER_UUID}:2`]: '1' });
    assert.equal(await t.raw.exists(timeoutKey(ours.owner, 1)), 1, "our read hold has its timeout key, as Redisson's do");
    const [lock] = await listed();
    assert.equal(lock.kind, 'readwrite');
    const readers = [lock.holder!, ...(lock.sharedWith ?? [])];
    assert.equal(readers.length, 3);
    const mine = readers.find((m) => m.owner === ours.owner)!;
    assert.equal(mine.mode, 'read');
    assert.equal(mine.convention, CONVENTIONS.redissonRwLock);
    assert.ok(mine.key.equals(ours.key));
  });

  test("our write lock waits for Redisson readers to leave, subscribed to their channel, and wakes on the last one's unlock publish", async () => {
    assert.equal(await t.redisson.readLock(name, 1, 60_000), null);
    assert.equal(await t.redisson.readLock(name, 2, 60_000, OTHER_UUID), null);
    const messages = await listen();
    const writer = waiting('write');
    await eventually(() => writer.positions.includes(1), 10_000, 'told we wait');
    await eventually(async () => (await subscribers()) === 2, 10_000, 'subscribed to redisson_rwlock:{name}');
    assert.equal(await t.redisson.readUnlock(name, 1), 0, 'another reader still holds: no publish');
    await sleep(300);
    assert.deepEqual(messages, []);
    assert.equal((await fields()).mode, 'read', 'still read: we wait');
    assert.equal(await t.redisson.readUnlock(name, 2, OTHER_UUID), 1, 'the last reader deletes the hash and publishes');
    const hold = await writer.pending;
    release(hold);
    await eventually(() => messages.length > 0, 5000, 'the unlock message');
    assert.deepEqual(messages, ['0']);
    assert.match(hold.owner, /^[0-9a-f-]{36}:\d+:write$/);
    assert.deepEqual(await fields(), { mode: 'write', [hold.owner]: '1' });
    assert.deepEqual(writer.positions, [1, 0]);
    await eventually(async () => (await subscribers()) === 1, 5000, 'our subscription gone once held');
    const [lock] = await listed();
    assert.equal(lock.holder?.owner, hold.owner);
    assert.equal(lock.holder?.mode, 'write');
  });

  test('a Redisson writer waits while we hold read (its lock script answers a PTTL) and gets the lock after our release, woken by it', async () => {
    // A read hold's lease is Redisson's watchdog, 30 s, whatever TTL is asked (READ_LEASE_MS).
    const ours = await t.backend.acquire(b(name), { ttlSeconds: 5, mode: 'read' });
    const pttl = await t.redisson.writeLock(name, 1);
    assert.ok(pttl !== null && pttl > 5_000 && pttl <= READ_LEASE_MS, `a PTTL of the read lease: ${pttl}`);
    const messages = await listen();
    assert.equal(await ours.release(), true);
    await eventually(() => messages.includes('0'), 5000, 'our read unlock published UNLOCK_MESSAGE');
    assert.equal(await t.raw.exists(name), 0);
    assert.equal(await t.raw.exists(timeoutKey(ours.owner, 1)), 0, 'our timeout key is gone');
    assert.equal(await t.redisson.writeLock(name, 1), null, 'the Redisson writer takes it');
    assert.equal(await t.redisson.writeUnlock(name, 1), 1);
  });

  test("our write excludes Redisson readers and writers, and they exclude ours; a writer's end wakes every waiter (READ_UNLOCK_MESSAGE)", async () => {
    const ours = await t.backend.acquire(b(name), { ttlSeconds: 30, mode: 'write' });
    assert.notEqual(await t.redisson.writeLock(name, 1), null, 'a Redisson writer waits');
    assert.notEqual(await t.redisson.readLock(name, 2), null, 'a Redisson reader waits');
    const messages = await listen();
    assert.equal(await ours.release(), true);
    await eventually(() => messages.includes('1'), 5000, 'our write unlock published READ_UNLOCK_MESSAGE');
    assert.equal(await t.raw.exists(name), 0);

    // Redisson's writer holds: our writer and our reader wait, and both wake on its unlock.
    assert.equal(await t.redisson.writeLock(name, 1), null);
    const writer = waiting('write');
    await eventually(() => writer.positions.includes(1), 10_000, 'our writer waits');
    assert.deepEqual(Object.keys(await fields()).sort(), [`${REDISSON_UUID}:1:write`, 'mode']);
    assert.equal(await t.redisson.writeUnlock(name, 1), 1);
    const hold = await writer.pending;
    release(hold);
    assert.deepEqual(Object.keys(await fields()).sort(), [hold.owner, 'mode']);

    assert.equal(await hold.release(), true);
    assert.equal(await t.redisson.writeLock(name, 1), null);
    const reader = waiting('read');
    await eventually(() => reader.positions.includes(1), 10_000, 'our reader waits for the Redisson writer');
    assert.equal(await t.redisson.writeUnlock(name, 1), 1);
    const read = await reader.pending;
    release(read);
    assert.equal((await fields()).mode, 'read');
  });

  test('two holds through one connection are two Redisson threads: two reads share; anything that would wait for our own hold is refused', async () => {
    const r1 = await t.backend.acquire(b(name), { ttlSeconds: 30, mode: 'read' });
    const r2 = await t.backend.acquire(b(name), { ttlSeconds: 30, mode: 'read' });
    assert.notEqual(r2.owner, r1.owner, 'each hold its own thread');
    assert.deepEqual(await fields(), { mode: 'read', [r1.owner]: '1', [r2.owner]: '1' });
    await assert.rejects(
      t.backend.acquire(b(name), { ttlSeconds: 30, mode: 'write' }),
      (e: LockLensError) => isLockLensError(e, 'INVALID_ARGUMENT') && /held for reading through this connection: taking it for writing would wait for that hold/.test(e.message),
    );
    // One ending does not touch the other: its count and timeout key stay.
    assert.equal(await r2.release(), true);
    assert.deepEqual(await fields(), { mode: 'read', [r1.owner]: '1' });
    assert.equal(await t.raw.exists(timeoutKey(r1.owner, 1)), 1);
    assert.equal(await r1.release(), true);
    assert.equal(await t.raw.exists(name), 0);

    const w = await t.backend.acquire(b(name), { ttlSeconds: 10, mode: 'write' });
    for (const mode of ['read', 'write'] as const) {
      await assert.rejects(
        t.backend.acquire(b(name), { ttlSeconds: 10, mode }),
        (e: LockLensError) => isLockLensError(e, 'INVALID_ARGUMENT') && /held for writing through this connection/.test(e.message),
      );
    }
    assert.equal(await w.release(), true);
    assert.equal(await t.raw.exists(name), 0);
  });

  test('a read hold whose lock was deleted cannot end another hold of ours that took the name again', async () => {
    const r1 = await t.backend.acquire(b(name), { ttlSeconds: 30, mode: 'read' });
    await t.raw.del(name);
    const r2 = await t.backend.acquire(b(name), { ttlSeconds: 30, mode: 'read' });
    // r2 is another thread: r1's field stays gone (its next renewal says lost), and r1's release takes nothing of r2's.
    assert.equal(await t.raw.hexists(name, r1.owner), 0);
    assert.equal(await r1.release(), false);
    assert.deepEqual(await fields(), { mode: 'read', [r2.owner]: '1' });
    assert.equal(await r2.release(), true);
  });

  test('a waiter whose name became another kind of lock meanwhile refuses it, and writes nothing into that lock', async () => {
    assert.equal(await t.redisson.writeLock(name, 1), null);
    const writer = waiting('write');
    await eventually(() => writer.positions.includes(1), 10_000, 'our writer waits');
    // In one step: Redisson's writer leaves (publishing, so ours tries again) and a plain RLock takes the free name.
    const rlockField = `${OTHER_UUID}:7`;
    await t.raw
      .multi()
      .eval(RW_WRITE_UNLOCK, 2, name, rwLockChannel(b(name)), READ_UNLOCK_MESSAGE, 30_000, `${REDISSON_UUID}:1:write`)
      .eval(REDISSON_LOCK, 1, name, 30_000, rlockField)
      .exec();
    await assert.rejects(writer.pending, (e: LockLensError) => isLockLensError(e, 'INVALID_ARGUMENT') && /stopped being a read\/write lock/.test(e.message));
    assert.deepEqual(await fields(), { [rlockField]: '1' }, 'the RLock as it was: no mode, no field of ours');
    await t.raw.del(name);
  });

  test('a read/write lock with many readers (more than a small hash) is still recognised and taken', async () => {
    for (let tid = 1; tid <= 20; tid++) assert.equal(await t.redisson.readLock(name, tid), null);
    const ours = await t.backend.acquire(b(name), { ttlSeconds: 30, mode: 'read' });
    assert.equal(Object.keys(await fields()).length, 22, 'mode, 20 Redisson readers and ours');
    assert.equal(await ours.release(), true);
    for (let tid = 1; tid <= 20; tid++) await t.redisson.readUnlock(name, tid);
    assert.equal(await t.raw.exists(name), 0);
  });

  test('releasing our read while a Redisson reader holds keeps the hash, expiring with the longest timeout left (maxRemainTime)', async () => {
    assert.equal(await t.redisson.readLock(name, 1, 60_000), null);
    const ours = await t.backend.acquire(b(name), { ttlSeconds: 5, mode: 'read' });
    const messages = await listen();
    assert.equal(await ours.release(), true);
    assert.deepEqual(await fields(), { mode: 'read', [`${REDISSON_UUID}:1`]: '1' });
    assert.equal(await t.raw.exists(timeoutKey(ours.owner, 1)), 0);
    const pttl = await t.raw.pttl(name);
    assert.ok(pttl > 50_000 && pttl <= 60_000, `the Redisson reader's timeout: ${pttl}`);
    await sleep(200);
    assert.deepEqual(messages, [], 'nobody is told: the lock is still held');
    assert.equal(await t.redisson.readUnlock(name, 1), 1);
  });

  test('cancel while waiting: CANCELLED, and nothing of ours left (no field, no timeout key, no subscription)', async () => {
    assert.equal(await t.redisson.writeLock(name, 1), null);
    for (const mode of ['read', 'write'] as const) {
      const abort = new AbortController();
      const attempt = waiting(mode, { signal: abort.signal, onQueue: (p) => p.ahead > 0 && setTimeout(() => abort.abort(), 300) });
      await assert.rejects(attempt.pending, (e: LockLensError) => e.code === 'CANCELLED');
      assert.deepEqual(await fields(), { mode: 'write', [`${REDISSON_UUID}:1:write`]: '1' }, mode);
      assert.deepEqual(await t.raw.keys(`{${name}}:*`), [], `${mode}: no timeout key`);
      await eventually(async () => (await subscribers()) === 0, 5000, `${mode}: unsubscribed`);
    }
    assert.equal(await t.redisson.writeUnlock(name, 1), 1);
  });

  test("renewal keeps our read's timeout key and the hash alive past the TTL; a renewal that finds our field gone says lost", async () => {
    const read = await t.backend.acquire(b(name), { ttlSeconds: 0.6, mode: 'read' });
    await sleep(1500);
    assert.equal(read.lost, undefined);
    assert.equal(await t.raw.exists(name, timeoutKey(read.owner, 1)), 2, 'both still there after more than twice the TTL');
    const lost = new Promise<LockLensError>((resolve) => read.onDidLose(resolve));
    await t.raw.hdel(name, read.owner);
    assert.equal((await lost).code, 'LOCK_LOST');
    assert.equal(await read.release(), false);
    await t.raw.del(name, timeoutKey(read.owner, 1));

    const write = await t.backend.acquire(b(name), { ttlSeconds: 0.6, mode: 'write' });
    await sleep(1500);
    assert.equal(write.lost, undefined);
    assert.equal(await t.raw.hget(name, write.owner), '1');
    const writeLost = new Promise<LockLensError>((resolve) => write.onDidLose(resolve));
    await t.raw.del(name);
    assert.equal((await writeLost).code, 'LOCK_LOST');
  });

  test("a name with a hash tag: timeout keys named as Redisson's suffixName does (no extra braces)", async () => {
    const tagged = `{${name}}x`;
    const ours = await t.backend.acquire(b(tagged), { ttlSeconds: 30, mode: 'read' });
    assert.equal(await t.raw.exists(`${tagged}:${ours.owner}:rwlock_timeout:1`), 1);
    assert.equal(await t.redisson.readLock(tagged, 1), null);
    assert.equal(await t.redisson.readUnlock(tagged, 1), 0);
    assert.equal(await ours.release(), true);
    assert.equal(await t.raw.exists(tagged, `${tagged}:${ours.owner}:rwlock_timeout:1`), 0);
  });

  test('tryOnly on a read/write lock another writer holds: LOCKED naming the writer, not its mode field', async () => {
    assert.equal(await t.redisson.writeLock(name, 3), null);
    await assert.rejects(
      t.backend.acquire(b(name), { ttlSeconds: 5, mode: 'read', tryOnly: true }),
      (e: LockLensError) => e.code === 'LOCKED' && e.message === `${name} is held by ${REDISSON_UUID}:3:write`,
    );
    assert.equal(await t.redisson.writeUnlock(name, 3), 1);
  });

  test('a mode on a Redisson RLock, a fair lock or a token lock is refused, and the lock is left as it was', async () => {
    assert.equal(await t.redisson.lock(name, 1), null);
    await t.raw.set(`${name}t`, 'tok', 'PX', 30_000);
    assert.equal(await t.redisson.fairLock(`${name}f`, 1), null);
    assert.notEqual(await t.redisson.fairLock(`${name}f`, 2), null);
    const cases: [string, RegExp][] = [
      [name, /is a Redisson lock \(RLock\), not a read\/write lock/],
      [`${name}t`, /is a token lock .*, not a read\/write lock/],
      [`${name}f`, /is a Redisson fair lock \(RFairLock\), not a read\/write lock/],
    ];
    for (const [lock, message] of cases) {
      for (const mode of ['read', 'write'] as const) {
        await assert.rejects(t.backend.acquire(b(lock), { ttlSeconds: 5, mode }), (e: LockLensError) => isLockLensError(e, 'INVALID_ARGUMENT') && message.test(e.message));
      }
    }
    assert.deepEqual(await fields(), { [`${REDISSON_UUID}:1`]: '1' });
    assert.equal(await t.raw.get(`${name}t`), 'tok');
  });

  test('no mode on a read/write lock is refused, saying to choose read or write', async () => {
    assert.equal(await t.redisson.readLock(name, 1), null);
    await assert.rejects(
      t.backend.acquire(b(name), { ttlSeconds: 5 }),
      (e: LockLensError) => isLockLensError(e, 'INVALID_ARGUMENT') && e.message === `${name} is a Redisson read/write lock: choose read or write to take it`,
    );
    assert.deepEqual(Object.keys(await fields()).sort(), [`${REDISSON_UUID}:1`, 'mode']);
    assert.equal(await t.redisson.readUnlock(name, 1), 1);
  });

  test("force-release wakes a read/write lock's waiters as Redisson's forceUnlock does: READ_UNLOCK_MESSAGE for a writer, UNLOCK_MESSAGE for readers", async () => {
    assert.equal(await t.redisson.writeLock(name, 1), null);
    let messages = await listen();
    let [lock] = await listed();
    await t.backend.forceRelease(lock, lock.holder!);
    await eventually(() => messages.length > 0, 5000, 'a message');
    assert.deepEqual(messages, ['1']);
    assert.equal(await t.redisson.readLock(name, 2), null);
    messages = await listen();
    [lock] = await listed();
    await t.backend.forceRelease(lock, lock.holder!);
    await eventually(() => messages.length > 0, 5000, 'a message');
    assert.deepEqual(messages, ['0']);
    assert.equal(await t.raw.exists(name), 0);
  });
});

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type Redis from 'ioredis';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import { hasMajority, type LockState } from '../../src/core/lockState';
import type { LockHold } from '../../src/core/backend';
import { eventually, startRedisInstances, type RedisInstances } from '../harness/redis';

/** The part of npm redlock@4's API the tests use (it ships no types). */
interface RedlockLock {
  readonly value: string;
}
interface Redlock {
  lock(resource: string, ttlMs: number): Promise<RedlockLock>;
  unlock(lock: RedlockLock): Promise<void>;
  on(event: 'clientError', listener: (e: Error) => void): void;
}
type RedlockClass = new (clients: readonly Redis[], options: { retryCount: number; retryDelay: number; retryJitter?: number }) => Redlock;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const RedlockClient = require('redlock') as RedlockClass;

/**
 * npm redlock@4 (the Redlock algorithm over independent redis-servers: SET NX PX of a random value on each, held with
 * a majority) beside LockLens on the same three instances: LockLens lists its quorum, waits for its holder and is
 * waited for, and its force release hands the lock to a redlock client that is retrying.
 */
describe('redis peers: npm redlock over three redis-servers', { timeout: 120_000 }, () => {
  let instances: RedisInstances | undefined;
  let backend: RedisBackend;
  let labels: string[] = [];
  let n = 0;

  before(async () => {
    instances = await startRedisInstances(3);
    labels = instances.servers.map((s) => `127.0.0.1:${s.port}`);
    backend = await RedisBackend.open({ store: 'redis', endpoints: instances.urls });
  });
  after(async () => {
    backend?.close();
    await instances?.dispose();
  });

  /** A redlock client: `retryCount` -1 retries until it holds (a waiting service), 0 tries once. */
  const redlock = (retryCount: number): Redlock => {
    const client = new RedlockClient(instances!.raws, { retryCount, retryDelay: 50, retryJitter: 10 });
    client.on('clientError', () => undefined);
    return client;
  };
  const only = async (name: string): Promise<LockState> => {
    const { locks } = await backend.list([Buffer.from(name)]);
    assert.equal(locks.length, 1, 'one lock, however many instances hold it');
    return locks[0];
  };
  const values = (name: string) => Promise.all(instances!.raws.map((r) => r.get(name)));

  test("a redlock hold is listed with its value as owner, on 3 of 3 instances", async () => {
    const name = `rlpeer/${++n}`;
    const theirs = await redlock(0).lock(name, 30_000);
    const lock = await only(name);
    assert.equal(lock.kind, 'single');
    assert.equal(lock.holder?.owner, theirs.value);
    assert.deepEqual(lock.holder?.quorum, { agree: 3, of: 3, instances: labels });
    assert.ok(hasMajority(lock.holder!));
    assert.ok(backend.acquirable(lock));
    await redlock(0).unlock(theirs);
  });

  test('LockLens waits for a redlock holder; while LockLens holds, redlock fails to lock, and a retrying one gets it at release', async () => {
    const name = `rlpeer/${++n}`;
    const client = redlock(0);
    const theirs = await client.lock(name, 30_000);
    const positions: number[] = [];
    let hold: LockHold | undefined;
    const ours = backend.acquire(Buffer.from(name), { ttlSeconds: 30, onQueue: (p) => positions.push(p.ahead) }).then((h) => (hold = h));
    await eventually(() => positions.includes(1), 10_000, 'LockLens told it waits');
    assert.equal(hold, undefined);
    await client.unlock(theirs);
    await ours;
    assert.deepEqual(await values(name), [hold!.owner, hold!.owner, hold!.owner], 'our token on every instance');

    await assert.rejects(redlock(0).lock(name, 30_000), /Exceeded 0 attempts/);
    let next: RedlockLock | undefined;
    const waiting = redlock(-1).lock(name, 30_000).then((l) => (next = l));
    assert.deepEqual(await values(name), [hold!.owner, hold!.owner, hold!.owner], 'still ours while redlock retries');
    assert.equal(next, undefined);
    assert.equal(await hold!.release(), true);
    await waiting;
    assert.deepEqual(await values(name), [next!.value, next!.value, next!.value]);
    await client.unlock(next!);
  });

  test('force release deletes the holder\'s value on every instance, and a retrying redlock client takes the lock', async () => {
    const name = `rlpeer/${++n}`;
    const stuck = await redlock(0).lock(name, 60_000);
    let next: RedlockLock | undefined;
    const waiting = redlock(-1).lock(name, 30_000).then((l) => (next = l));
    const lock = await only(name);
    assert.equal(lock.holder?.owner, stuck.value);
    const result = await backend.forceRelease(lock, lock.holder!);
    assert.match(result.action, /on 3 of 3 instances/);
    await waiting;
    assert.notEqual(next!.value, stuck.value);
    assert.deepEqual(await values(name), [next!.value, next!.value, next!.value]);
    // The old holder's release is owner-only: it removes nothing of the new holder's, and redlock says it failed.
    await assert.rejects(redlock(0).unlock(stuck), /Unable to fully release/);
    assert.deepEqual(await values(name), [next!.value, next!.value, next!.value]);
    await redlock(0).unlock(next!);
  });
});

import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import Redis from 'ioredis';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import { hasMajority, type LockState } from '../../src/core/lockState';
import type { LockLensError } from '../../src/core/errors';
import { eventually, startRedisInstances, type RedisInstances, type RedisServer } from '../harness/redis';

const b = (s: string) => Buffer.from(s);
/** The CLI as tsc built it (dist/ is rebuilt by esbuild, not by the test command). */
const CLI_MAIN = resolve(__dirname, '../../src/cli/main.js');

function cli(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI_MAIN, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('redlock: list, watch and force-release over three independent redis-servers', { timeout: 120_000 }, () => {
  let instances: RedisInstances | undefined;
  let servers: readonly RedisServer[] = [];
  let raws: readonly Redis[] = [];
  let backend: RedisBackend;
  let labels: string[] = [];
  let n = 0;
  let prefix = '';

  before(async () => {
    instances = await startRedisInstances(3);
    ({ servers, raws } = instances);
    labels = servers.map((s) => `127.0.0.1:${s.port}`);
    backend = await RedisBackend.open({ store: 'redis', endpoints: instances.urls });
  });
  after(async () => {
    backend?.close();
    await instances?.dispose();
  });
  beforeEach(() => {
    prefix = `rl${++n}/`;
  });

  /** Writes a redlock-style token on the instances given by index, with the TTLs given. */
  const write = (name: string, token: string, on: readonly number[], pxs: readonly number[] = on.map(() => 30_000)) =>
    Promise.all(on.map((i, j) => raws[i].set(name, token, 'PX', pxs[j])));
  const only = async (): Promise<LockState> => {
    const listing = await backend.list([b(prefix)]);
    assert.equal(listing.locks.length, 1, 'one lock, however many instances hold it');
    return listing.locks[0];
  };

  test('a token on 3/3: one holder, a majority, TTL the lowest PTTL of the three', async () => {
    await write(`${prefix}a`, 'tok-a', [0, 1, 2], [30_000, 8_000, 20_000]);
    const listing = await backend.list([b(prefix)]);
    const [lock] = listing.locks;
    assert.equal(lock.holder?.owner, 'tok-a');
    assert.deepEqual(lock.holder?.quorum, { agree: 3, of: 3, instances: labels });
    assert.ok(hasMajority(lock.holder!));
    assert.equal(lock.sharedWith, undefined);
    const ttl = listing.lease(lock.holder!.lease)!.ttl;
    assert.ok(ttl > 0 && ttl <= 8, `lowest PTTL, got ${ttl}`);
  });

  test('a token on 2/3, the third without the key: a majority of 2/3 naming the two', async () => {
    await write(`${prefix}b`, 'tok-b', [0, 2]);
    const lock = await only();
    assert.deepEqual(lock.holder?.quorum, { agree: 2, of: 3, instances: [labels[0], labels[2]] });
    assert.ok(hasMajority(lock.holder!));
  });

  test('split 1/1/1 between three tokens: all three shown, none with a majority', async () => {
    await write(`${prefix}c`, 'one', [0]);
    await write(`${prefix}c`, 'two', [1]);
    await write(`${prefix}c`, 'three', [2]);
    const lock = await only();
    const all = [lock.holder!, ...(lock.sharedWith ?? [])];
    assert.deepEqual(all.map((m) => [m.owner, m.quorum?.agree, m.quorum?.of]), [['one', 1, 3], ['two', 1, 3], ['three', 1, 3]]);
    assert.ok(all.every((m) => !hasMajority(m)));
  });

  test('force-release a redlock token: compare-and-delete on every instance, saying how many', async () => {
    const name = `${prefix}d`;
    await write(name, 'tok-d', [0, 1, 2]);
    const lock = await only();
    const result = await backend.forceRelease(lock, lock.holder!);
    assert.match(result.action, /on 3 of 3 instances/);
    assert.deepEqual(await Promise.all(raws.map((r) => r.exists(name))), [0, 0, 0]);
    // A split: releasing the minority claim leaves the majority's keys alone.
    await write(name, 'major', [0, 1]);
    await write(name, 'minor', [2]);
    const split = await only();
    const minor = split.sharedWith!.find((m) => m.owner === 'minor')!;
    assert.match((await backend.forceRelease(split, minor)).action, /on 1 of 3 instances/);
    assert.deepEqual(await Promise.all(raws.map((r) => r.get(name))), ['major', 'major', null]);
    await raws[2].set(name, 'other');
    await assert.rejects(backend.forceRelease(split, minor), (e: LockLensError) => e.code === 'LOCK_CHANGED');
  });

  test('locklens list --url a,b,c --json shows the quorum, and the text form says on k/n instances', async () => {
    await write(`${prefix}e`, 'tok-e', [0, 1]);
    await write(`${prefix}f`, 'x', [0]);
    await write(`${prefix}f`, 'y', [1]);
    const url = servers.map((s) => s.url).join(',');
    const json = await cli(['list', '--url', url, '--prefix', prefix, '--json']);
    assert.equal(json.code, 0, json.stderr);
    const doc = JSON.parse(json.stdout) as unknown;
    const locks = (Array.isArray(doc) ? doc : (doc as { locks: unknown[] }).locks) as {
      name: string;
      holder: { owner: string; quorum?: { agree: number; of: number; instances: string[]; majority: boolean } };
      sharedWith?: { owner: string; quorum?: { agree: number; majority: boolean } }[];
    }[];
    const e = locks.find((l) => l.name === `${prefix}e`)!;
    assert.deepEqual(e.holder.quorum, { agree: 2, of: 3, instances: labels.slice(0, 2), majority: true });
    const f = locks.find((l) => l.name === `${prefix}f`)!;
    assert.deepEqual([f.holder, ...(f.sharedWith ?? [])].map((m) => [m.owner, m.quorum?.agree, m.quorum?.majority]), [['x', 1, false], ['y', 1, false]]);
    const text = await cli(['list', '--url', url, '--prefix', prefix]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /owner tok-e .*on 2\/3 instances/);
    assert.match(text.stdout, /owner x .*on 1\/3 instances \(no majority\)/);
  });

  // Last: it kills an instance (and restarts it empty).
  test('one instance killed: the lock is still listed, on 2/3, and the watch says an instance is unreachable', async () => {
    const name = `${prefix}g`;
    await write(name, 'tok-g', [0, 1, 2]);
    const watch = backend.watch([b(prefix)], { pollIntervalMs: 100, leaseSampleIntervalMs: 100 });
    try {
      await watch.start();
      assert.deepEqual(watch.locks()[0]?.holder?.quorum?.agree, 3);
      await servers[1].stop();
      const lock = await only();
      assert.deepEqual(lock.holder?.quorum, { agree: 2, of: 3, instances: [labels[0], labels[2]] });
      assert.ok(hasMajority(lock.holder!));
      await eventually(() => watch.locks()[0]?.holder?.quorum?.agree === 2, 10_000, 'the watch to count 2 of 3');
      await eventually(() => /1 of 3 instances unreachable/.test(watch.status.detail ?? ''), 10_000, 'the status to say so');
      assert.equal(watch.status.state, 'live');
      assert.ok(watch.status.detail!.includes(labels[1]), watch.status.detail);
      assert.deepEqual(watch.status.unreachable, [labels[1]], 'the view is partial, and says which node is missing');
      await servers[1].start();
      await eventually(() => !/unreachable/.test(watch.status.detail ?? ''), 15_000, 'the status to clear once it is back');
      assert.equal(watch.status.unreachable, undefined);
      assert.equal(watch.locks()[0]?.holder?.quorum?.agree, 2, 'restarted empty: still 2/3');
    } finally {
      watch.dispose();
    }
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { remainingTtl, type LeaseInfo } from '../../src/core/leaseInfo';
import type { LockMember, LockState } from '../../src/core/lockState';
import { keyId } from '../../src/core/keys';
import type { TtlSource } from '../../src/core/redis/recognize';
import type { Topology } from '../../src/core/redis/topology';
import { TtlSampler } from '../../src/core/redis/ttlSampler';
import { TtlTable } from '../../src/core/redis/ttlTable';

function member(owner: string, lease: string): LockMember {
  return { key: Buffer.from(owner), convention: 'redis-token', owner, expiresWith: 'ttl', lease, token: null, holds: null, valuePreview: Buffer.alloc(0), valueSize: 0 };
}

/** Lock `i` held on `leases[0]`, shared with and waited for on the rest (several locks share some TTL ids, as a Redisson client's locks do). */
function lock(i: number, leases: string[]): LockState {
  const name = Buffer.from(`l${i}`);
  const [holder, ...others] = leases.map((l, k) => member(`o${i}.${k}`, l));
  return { id: keyId(name), name, kind: 'readwrite', holder: holder ?? null, sharedWith: others.slice(0, 1), waiters: others.slice(1) };
}

/** A sampler whose sweeps never run: what it was told is all the test reads. */
function sampler(): { s: TtlSampler; told: LeaseInfo[] } {
  const told: LeaseInfo[] = [];
  const s = new TtlSampler({} as Topology, 60_000, (infos) => told.push(...infos), () => undefined);
  return { s, told };
}

describe('Redis TTL sampler', () => {
  test('counting who refers to each TTL, read by read, keeps and forgets what a recount of every lock does', () => {
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 48_271) % 2_147_483_647), seed % n);
    const counted = sampler();
    const recounted = sampler();
    const model = new Map<string, LockState>();
    const byId = (a: LeaseInfo, b: LeaseInfo) => a.id.localeCompare(b.id);
    let forgotten = 0;
    for (let step = 0, now = 0; step < 1000; step++, now += 10) {
      // A partial read of a few locks: each gone, or read again with 0–3 members on TTLs from a small shared pool.
      const read = Array.from({ length: 1 + random(3) }, () => random(40));
      const locks = [...new Set(read)].flatMap((i) => (random(4) === 0 ? [] : [lock(i, Array.from({ length: random(4) }, () => `t${random(100)}`))]));
      const ids = read.map((i) => keyId(Buffer.from(`l${i}`)));
      const samples: TtlSource[] = locks.flatMap((l) => [l.holder, ...(l.sharedWith ?? []), ...l.waiters]).flatMap((m) => (m ? [{ id: m.lease!, ms: 10_000 - random(5000), keys: [m.key] }] : []));
      const touched = [...new Set([...ids, ...locks.map((l) => l.id)])];
      const before = touched.map((id) => model.get(id));
      for (const id of ids) model.delete(id);
      for (const l of locks) model.set(l.id, l);
      counted.s.observeChanged(samples, now, before, touched.map((id) => model.get(id)));
      recounted.s.observe(samples, now, model.values());
      for (let t = 0; t < 100; t++) assert.deepEqual(counted.s.lease(`t${t}`), recounted.s.lease(`t${t}`), `t${t} at step ${step}`);
      const told = counted.told.splice(0).sort(byId);
      assert.deepEqual(told, recounted.told.splice(0).sort(byId), `what was told at step ${step}`);
      forgotten += told.filter((i) => i.state === 'expired').length;
    }
    assert.ok(forgotten > 100, `TTLs no lock refers to any more were forgotten on the way (${forgotten})`);
  });

  test('without countdowns, a sweep of keys the server tells of builds and tells nothing until one crosses its stall line', async () => {
    const asked: string[] = [];
    const topology = { pttls: async (sources: readonly TtlSource[]) => (asked.push(...sources.map((x) => x.id)), sources.map(() => undefined)) } as unknown as Topology;
    const run = async (countdowns: boolean, sampledAgoMs: number) => {
      const told: LeaseInfo[] = [];
      const s = new TtlSampler(topology, 60_000, (infos) => told.push(...infos), () => undefined, () => true, () => true, countdowns);
      const source: TtlSource = { id: 'k', ms: 10_000, keys: [Buffer.from('k')] };
      s.replace(new Map([['k', source]]));
      s.observe([source], Date.now() - sampledAgoMs, [lock(0, ['k'])]);
      told.length = 0;
      await s.sweep();
      const once = told.splice(0);
      await s.sweep();
      return { once, twice: told, lease: s.lease('k')! };
    };
    const quiet = await run(false, 1000);
    assert.deepEqual([quiet.once, quiet.twice], [[], []], 'a countdown 9 s from its 5 s stall line: nothing told');
    assert.ok(Math.abs(remainingTtl(quiet.lease) - 9) < 0.5, 'what it counts down to is the same');
    const stalling = await run(false, 6000);
    assert.deepEqual(
      [stalling.once.map((i) => i.stalled), stalling.twice],
      [[true], []],
      'crossing the stall line is told once',
    );
    const counting = await run(true, 1000);
    assert.deepEqual([counting.once.length, counting.twice.length], [1, 1], 'with countdowns, every sweep tells it');
    assert.deepEqual(asked, [], 'no told key was asked for its PTTL');
  });

  test("marked with the server's expiry events, a lease is kept once: the mark takes its sample's place in the table", () => {
    const table = new TtlTable();
    const source: TtlSource = { id: 'k', ms: 10_000, keys: [Buffer.from('k')] };
    const [sampled] = table.observe([source]);
    const marked = table.markExpiryEvents(sampled, true);
    assert.deepEqual([marked.expiryEvents, table.get('k')], [true, marked]);
    const [next] = table.observe([{ ...source, ms: 9_000 }]);
    assert.equal(table.markExpiryEvents(marked, true).expiryEvents, true);
    assert.equal(table.get('k'), next, 'a mark of a sample the table no longer has leaves the table as it is');
    let told = true;
    const s = new TtlSampler({} as Topology, 60_000, () => undefined, () => undefined, () => told);
    s.observe([source], Date.now(), [lock(0, ['k'])]);
    assert.equal(s.lease('k')?.expiryEvents, true, "the sampler's leases are marked when the server tells expiries");
    told = false;
    assert.equal(s.lease('k')?.expiryEvents, false, 'and no longer once it stops telling them');
  });
});

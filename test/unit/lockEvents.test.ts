import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockModel, lockId } from '../../src/core/etcd/lockModel';
import type { KeyRecord } from '../../src/core/etcd/records';
import type { ObserveOptions } from '../../src/core/holdObservation';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import type { LockEvent } from '../../src/core/lockEventTypes';
import { LockEvents, type Observed } from '../../src/core/lockEvents';
import { LockStats } from '../../src/core/lockStats';
import { mulberry32 } from '../harness/random';

function mutexKey(name: string, lease: string, create: number): KeyRecord {
  return { key: Buffer.from(`${name}/${lease}`), valuePreview: Buffer.alloc(0), valueSize: 0, createRevision: create, modRevision: create, version: 1, lease };
}

function lease(id: string, ttl: number, observedAt: number): LeaseInfo {
  return { id, state: 'alive', grantedTtl: 10, ttl, observedAt, firstSeenAt: 0, refreshes: [], stalled: false, keys: [] };
}

const JOBS = lockId(Buffer.from('/locks/jobs'), 'go-mutex');

/** An etcd model feeding LockEvents (and LockStats, to compare) one change set per step, the first a full read. */
function harness(options: Partial<ObserveOptions> = {}) {
  let model = new LockModel();
  const events = new LockEvents('local');
  const stats = new LockStats();
  const leases = new Map<string, LeaseInfo>();
  let first = true;
  let revision = 0;
  const opts: ObserveOptions = { hasLeases: true, hasRevisions: true, sampledTtls: true, lease: (id) => leases.get(id), ...options };
  const step = (now: number, change: (m: LockModel, rev: number) => void, resynced = false): Observed => {
    change(model, ++revision);
    const set = model.takeChanges();
    const changes = first || resynced ? { ...set, resynced: true } : set;
    first = false;
    stats.observe('local', changes, opts, now);
    return events.observe(changes, opts, now);
  };
  const put = (now: number, owner: string, name = '/locks/jobs') => step(now, (m, rev) => m.put(mutexKey(name, owner, rev))).events;
  const del = (now: number, owner: string, name = '/locks/jobs') => step(now, (m, rev) => m.delete(Buffer.from(`${name}/${owner}`), rev)).events;
  /** A new watch (a reconnect): a new model whose first read holds `owners` of /locks/jobs. */
  const newWatch = (now: number, owners: string[]) => {
    events.restart();
    stats.restart('local');
    model = new LockModel();
    model.reload(() => true, owners.map((o) => mutexKey('/locks/jobs', o, ++revision)), revision);
    const changes = { ...model.takeChanges(), resynced: true };
    stats.observe('local', changes, opts, now);
    return events.observe(changes, opts, now).events;
  };
  return { events, stats, leases, step, put, del, newWatch };
}

/** Each event in a line: type, member's owner, at, exact, and what it says of its end or wait. */
function brief(e: LockEvent): unknown[] {
  switch (e.type) {
    case 'holdStarted':
      return [e.type, e.member.owner, e.at, e.exact, e.waitedMs, e.handoff];
    case 'holdEnded':
      return [e.type, e.member.owner, e.at, e.exact, e.how, e.heldMs];
    case 'waitStarted':
      return [e.type, e.member.owner, e.at, e.exact];
    case 'waitEnded':
      return [e.type, e.member.owner, e.at, e.exact, e.granted, e.waitedMs];
  }
}

describe('LockEvents', () => {
  test('a hold seen from start to end: when, how it ended, how long; the events name the lock and its member', () => {
    // Keys with a TTL of their own (Redis): gone with time left is released, run out is expired.
    const { put, del, leases, events } = harness({ hasLeases: false, hasRevisions: false });
    put(0, 'seed', '/locks/other');
    leases.set('a', lease('a', 9, 1000));
    const [started] = put(1000, 'a');
    assert.deepEqual(started, {
      type: 'holdStarted',
      connection: 'local',
      lockId: JOBS,
      lock: '/locks/jobs',
      kind: 'queue',
      member: { key: '/locks/jobs/a', owner: 'a', token: 2 },
      at: 1000,
      exact: true,
      waitedMs: null,
      handoff: false,
    });
    assert.deepEqual(del(1500, 'a').map(brief), [['holdEnded', 'a', 1500, true, 'released', 500]], 'deleted with time left');
    leases.set('b', lease('b', 2, 2000));
    put(2000, 'b');
    events.observeLeases([lease('b', 2, 2000)]);
    assert.deepEqual(del(5000, 'b').map(brief), [['holdEnded', 'b', 5000, true, 'expired', 3000]], 'its TTL ran out');
  });

  test('a key gone while its sampled lease had time left was released (deleted, or its session closed)', () => {
    const { step, put, leases } = harness();
    put(0, 'seed', '/locks/other');
    leases.set('b', lease('b', 9, 1000));
    put(1000, 'b');
    const { events, unsettled } = step(2000, (m, rev) => m.delete(Buffer.from('/locks/jobs/b'), rev));
    assert.deepEqual(events.map(brief), [['holdEnded', 'b', 2000, true, 'released', 1000]]);
    assert.deepEqual(unsettled, []);
  });

  test('a key whose lease was never sampled: the store is to say how it ended (unsettled)', () => {
    const { step, put } = harness();
    put(0, 'seed', '/locks/other');
    put(1000, 'b');
    const { events, unsettled } = step(2000, (m, rev) => m.delete(Buffer.from('/locks/jobs/b'), rev));
    assert.deepEqual(events.map(brief), [['holdEnded', 'b', 2000, true, null, 1000]]);
    assert.deepEqual(unsettled, [{ event: events[0], lease: 'b' }]);
  });

  test('a handoff: the holder goes, the first waiter is granted after its wait, another waits on', () => {
    const { put, del } = harness({ hasLeases: false });
    put(0, 'seed', '/locks/other');
    put(1000, 'a');
    assert.deepEqual(put(2000, 'b').map(brief), [['waitStarted', 'b', 2000, true]]);
    put(2500, 'c');
    assert.deepEqual(del(4000, 'a').map(brief), [
      ['holdEnded', 'a', 4000, true, 'released', 3000],
      ['waitEnded', 'b', 4000, true, true, 2000],
      ['holdStarted', 'b', 4000, true, 2000, true],
    ]);
  });

  test('a wait given up: it ends without holding, and the holder holds on', () => {
    const { put, del, events } = harness();
    put(0, 'a');
    put(1000, 'b');
    assert.deepEqual(del(1800, 'b').map(brief), [['waitEnded', 'b', 1800, true, false, 800]]);
    assert.equal(events.now(JOBS)?.waitingSince, null);
    assert.equal(events.now(JOBS)?.heldSince, 0);
  });

  test('found at a first read: a hold and a wait already in place are inexact, and never measured', () => {
    const { step, del } = harness({ hasLeases: false });
    const first = step(1000, (m, rev) => {
      m.put(mutexKey('/locks/jobs', 'a', rev));
      m.put(mutexKey('/locks/jobs', 'b', rev + 1));
    });
    assert.deepEqual(first.events.map(brief), [
      ['holdStarted', 'a', 1000, false, null, false],
      ['waitStarted', 'b', 1000, false],
    ]);
    assert.deepEqual(del(3000, 'a').map(brief), [
      ['holdEnded', 'a', 3000, true, 'released', null],
      ['waitEnded', 'b', 3000, true, true, null],
      ['holdStarted', 'b', 3000, true, null, true],
    ]);
  });

  test('a reload after a break: what changed meanwhile ends and begins inexact; a new watch ends what it no longer finds', () => {
    const { put, step, newWatch, events } = harness();
    put(0, 'seed', '/locks/other');
    put(1000, 'a');
    const reload = step(5000, (m, rev) => {
      m.delete(Buffer.from('/locks/jobs/a'), rev);
      m.put(mutexKey('/locks/jobs', 'b', rev));
    }, true);
    assert.deepEqual(reload.events.map(brief), [
      ['holdEnded', 'a', 5000, false, null, null],
      ['holdStarted', 'b', 5000, false, null, false],
    ]);
    assert.deepEqual(reload.unsettled.map((u) => u.lease), ['a'], 'the store can still say whether its lease lives');
    assert.deepEqual(newWatch(9000, []).map(brief), [
      ['holdEnded', 'seed', 9000, false, null, null],
      ['holdEnded', 'b', 9000, false, null, null],
    ], 'gone while the watch was down');
    assert.equal(events.size, 0, 'nothing is kept of a free lock');
  });

  test('seeded: random queues agree with LockStats on every hold, pair every end with its start, and keep nothing of the past', () => {
    const seed = Number(process.env.LOCKLENS_SEED ?? Date.now() % 100_000);
    const random = mulberry32(seed);
    const { put, del, newWatch, stats, events } = harness();
    const names = ['/locks/a', '/locks/b', '/locks/c'];
    const queued = new Map<string, string[]>(names.map((n) => [n, []]));
    const all: LockEvent[] = [];
    let owner = 0;
    for (let i = 1; i <= 120; i++) {
      const name = names[Math.floor(random() * names.length)];
      const queue = queued.get(name)!;
      if (queue.length && random() < 0.5) {
        const [gone] = queue.splice(Math.floor(random() * queue.length), 1);
        all.push(...del(i * 100, gone, name));
      } else {
        queue.push(`o${++owner}`);
        all.push(...put(i * 100, queue.at(-1)!, name));
      }
    }
    const why = `LOCKLENS_SEED=${seed}`;
    for (const name of names) {
      const id = lockId(Buffer.from(name), 'go-mutex');
      const mine = all.filter((e) => e.lockId === id);
      const starts = mine.filter((e) => e.type === 'holdStarted');
      const ends = mine.filter((e) => e.type === 'holdEnded');
      const seen = stats.holds('local', id);
      assert.deepEqual(starts.map((e) => [e.member.owner, e.at, e.exact]), seen.map((h) => [h.owner, h.acquiredAt, h.acquiredExact]), why);
      assert.deepEqual(ends.map((e) => [e.member.owner, e.at]), seen.filter((h) => h.endedAt !== null).map((h) => [h.owner, h.endedAt]), why);
      let open: string | null = null;
      const waiting = new Set<string>();
      for (const e of mine) {
        if (e.type === 'holdStarted') assert.equal(open, null, why);
        if (e.type === 'holdEnded') assert.equal(open, e.member.owner, why);
        if (e.type === 'waitStarted') assert.ok(!waiting.has(e.member.owner), why);
        if (e.type === 'waitEnded') assert.ok(waiting.delete(e.member.owner), why);
        if (e.type === 'waitStarted') waiting.add(e.member.owner);
        open = e.type === 'holdStarted' ? e.member.owner : e.type === 'holdEnded' ? null : open;
      }
      assert.equal(events.now(id)?.heldSince ?? null, seen.find((h) => h.endedAt === null)?.acquiredAt ?? null, why);
    }
    newWatch(1_000_000, []);
    assert.equal(events.size, 0, `${why}: a new watch that finds nothing ends everything`);
  });
});

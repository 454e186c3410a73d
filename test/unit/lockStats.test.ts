import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockModel, lockId } from '../../src/core/etcd/lockModel';
import type { KeyRecord } from '../../src/core/etcd/records';
import { MAX_HOLDS, type ObserveOptions } from '../../src/core/holdObservation';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import { holdBound } from '../../src/core/lockFigures';
import type { ChangeSet } from '../../src/core/lockState';
import { LockStats, MAX_LOCKS, type LockStatsChange } from '../../src/core/lockStats';

function mutexKey(name: string, lease: string, create: number): KeyRecord {
  return { key: Buffer.from(`${name}/${lease}`), valuePreview: Buffer.alloc(0), valueSize: 0, createRevision: create, modRevision: create, version: 1, lease };
}

function lease(id: string, ttl: number, observedAt: number, o: Partial<LeaseInfo> = {}): LeaseInfo {
  return { id, state: 'alive', grantedTtl: 10, ttl, observedAt, firstSeenAt: 0, refreshes: [], stalled: false, keys: [], ...o };
}

const JOBS = lockId(Buffer.from('/locks/jobs'), 'go-mutex');

/** An etcd model and LockStats fed as the extension feeds them: one change set per step, the first a reload. */
function harness(options: Partial<ObserveOptions> = {}, stats = new LockStats()) {
  const model = new LockModel();
  const leases = new Map<string, LeaseInfo>();
  let first = true;
  let revision = 0;
  const opts: ObserveOptions = { hasLeases: true, hasRevisions: true, sampledTtls: true, lease: (id) => leases.get(id), ...options };
  const step = (now: number, change: (m: LockModel, rev: number) => void): ChangeSet => {
    change(model, ++revision);
    const set = model.takeChanges();
    stats.observe('local', first ? { ...set, resynced: true } : set, opts, now);
    first = false;
    return set;
  };
  const put = (now: number, owner: string) => step(now, (m, rev) => m.put(mutexKey('/locks/jobs', owner, rev)));
  const del = (now: number, owner: string) => step(now, (m, rev) => m.delete(Buffer.from(`/locks/jobs/${owner}`), rev));
  return { stats, model, leases, step, put, del };
}

describe('LockStats', () => {
  test('holds and waits seen live: in order, exact, with waits, hold and wait spreads, handoffs', () => {
    const { stats, put, del } = harness();
    put(1000, 'a'); // the first read: found holding, inexact
    put(2000, 'b');
    put(3000, 'c');
    del(5000, 'a'); // b takes over after waiting 3 s
    del(6000, 'b'); // c after 3 s; b held 1 s
    del(6500, 'c'); // c held 0.5 s
    const holds = stats.holds('local', JOBS);
    assert.deepEqual(
      holds.map((h) => [h.owner, h.acquiredAt, h.acquiredExact, h.waitedMs, h.endedAt]),
      [
        ['a', 1000, false, null, 5000],
        ['b', 5000, true, 3000, 6000],
        ['c', 6000, true, 3000, 6500],
      ],
    );
    assert.deepEqual(holds.map((h) => h.acquiredRevision), [null, 4, 5], 'a reload\'s revision dates nothing');
    const f = stats.figures('local', JOBS, 7000)!;
    assert.equal(f.holds, 3);
    assert.deepEqual(f.hold, { p50: 500, p95: 1000, max: 1000, count: 2 }, 'the inexact hold is no sample');
    assert.deepEqual(f.wait, { p50: 3000, p95: 3000, max: 3000, count: 2 });
    assert.equal(f.transitions, 2);
    assert.equal(f.handoffsPerMinute, 2, 'two handoffs within the first minute');
    assert.deepEqual(f.longestHold, { ms: 1000, who: 'b' });
    assert.deepEqual(f.longestWait, { ms: 3000, who: 'b' });
  });

  test('how a hold ended: TTL seen running out is expired, time left released, a lease never sampled the store says', () => {
    const { stats, leases, put, del, step } = harness();
    put(0, 'x');
    step(100, (m, rev) => m.put({ ...mutexKey('/locks/other', '', rev), key: Buffer.from('/locks/other/k') }));
    leases.set('a', lease('a', 2, 1000));
    put(1000, 'a');
    del(1100, 'x');
    stats.observeLeases('local', [lease('a', 2, 1000)]);
    del(4000, 'a'); // 3 s after a 2 s sample: it ran out
    put(5000, 'b');
    leases.set('b', lease('b', 9, 5000));
    stats.observeLeases('local', [lease('b', 9, 5000)]);
    del(6000, 'b'); // deleted, or its lease revoked, with time left: released
    const ends = () => stats.holds('local', JOBS).map((h) => [h.owner, h.end]);
    assert.deepEqual(ends(), [
      ['x', null],
      ['a', 'expired'],
      ['b', 'released'],
    ]);
    assert.deepEqual(stats.unsettled('local'), ['x']);
    stats.settle('local', 'x', 'revokedOrExpired');
    assert.deepEqual(ends(), [
      ['x', 'revokedOrExpired'],
      ['a', 'expired'],
      ['b', 'released'],
    ]);
    assert.deepEqual(stats.figures('local', JOBS, 7000)!.ends, [
      { end: 'released', count: 1 },
      { end: 'expired', count: 1 },
      { end: 'revokedOrExpired', count: 1 },
    ]);
    assert.deepEqual(stats.unsettled('local'), []);
  });

  test('a hold LockLens itself ended (its audit\'s mark) ended force-released, even found gone by a reload', () => {
    const { stats, leases, put, del } = harness({ ownEnd: (lease) => lease === 'a' });
    put(0, 'seed');
    leases.set('a', lease('a', 30, 1000));
    put(1000, 'a');
    del(1100, 'seed');
    del(2000, 'a');
    assert.deepEqual(stats.holds('local', JOBS).map((h) => [h.owner, h.end]), [
      ['seed', null],
      ['a', 'forceReleased'],
    ]);
  });

  test('a store whose keys carry their own TTL (Redis): gone with time left is released, run out is expired', () => {
    const { stats, leases, put, del } = harness({ hasLeases: false, hasRevisions: false });
    put(0, 'seed');
    leases.set('a', lease('a', 5, 1000));
    put(1000, 'a');
    del(1100, 'seed');
    del(2000, 'a');
    leases.set('b', lease('b', 1, 2000));
    put(2000, 'b');
    del(9000, 'b');
    assert.deepEqual(stats.holds('local', JOBS).map((h) => [h.owner, h.end, h.acquiredRevision]), [
      ['seed', 'released', null],
      ['a', 'released', null],
      ['b', 'expired', null],
    ]);
    assert.deepEqual(stats.unsettled('local'), [], 'nothing to ask a store without revocable leases');
  });

  test('a sample that finds the lease gone before its key\'s delete arrives, with time left on the one before: released', () => {
    for (const hasLeases of [true, false]) {
      const { stats, leases, put, del } = harness({ hasLeases });
      leases.set('a', lease('a', 30, 0));
      put(0, 'a');
      stats.observeLeases('local', [lease('a', 0, 900, { state: 'expired' })]);
      del(1000, 'a');
      assert.equal(stats.holds('local', JOBS)[0].end, 'released', hasLeases ? 'etcd: revoked before its time' : 'Redis: deleted');
    }
  });

  test('a store whose owners have no TTL to sample (ZooKeeper sessions): how a member went is not said, unless it had none', () => {
    const { stats, put, del, step } = harness({ hasLeases: false, sampledTtls: false });
    put(0, 'seed');
    put(10, 'a');
    del(20, 'seed');
    del(30, 'a');
    step(40, (m, rev) => m.put({ ...mutexKey('/locks/jobs', '', rev), key: Buffer.from('/locks/jobs/persistent-lock-0000000001') }));
    step(50, (m, rev) => m.delete(Buffer.from('/locks/jobs/persistent-lock-0000000001'), rev));
    assert.deepEqual(stats.holds('local', JOBS).map((h) => h.end), [null, null]);
    const persistent = lockId(Buffer.from('/locks/jobs/persistent-lock-0000000001'), 'single-key');
    assert.deepEqual(stats.holds('local', persistent).map((h) => h.end), ['released'], 'nothing expires it: it was deleted');
    assert.deepEqual(stats.unsettled('local'), [], 'nothing to ask');
  });

  test('stalls: a holder whose TTL is seen not being renewed counts once per hold', () => {
    const { stats, leases, put } = harness();
    leases.set('a', lease('a', 10, 0));
    put(0, 'a');
    const changes: LockStatsChange[] = [];
    stats.onDidChange((c) => changes.push(c));
    stats.observeLeases('local', [lease('a', 4, 6000, { stalled: true })]);
    stats.observeLeases('local', [lease('a', 2, 8000, { stalled: true })]);
    assert.equal(stats.figures('local', JOBS)!.stalls, 1);
    assert.equal(stats.holds('local', JOBS)[0].stalled, true);
    assert.deepEqual(changes, [{ connection: 'local', lockIds: [JOBS] }]);
  });

  test('a waiter that gives up is a wait sample too; one already waiting at the first read is not', () => {
    const { stats, put, del } = harness();
    put(0, 'a');
    put(10, 'early'); // the first read was the first step only: this one is seen live
    put(1000, 'quitter');
    del(4000, 'quitter');
    const f = stats.figures('local', JOBS)!;
    assert.deepEqual(f.wait, { p50: 3000, p95: 3000, max: 3000, count: 1 });
    assert.deepEqual(f.longestWait, { ms: 3000, who: 'quitter' });
  });

  test('revisions seen live map to times; one between two close change sets too; a reload\'s and others are unknown', () => {
    const { stats, put, step } = harness();
    put(1000, 'a'); // revision 1, by the first load: the store's last write, at some earlier time
    put(1100, 'b'); // revision 2
    step(1200, () => undefined); // revision 3 happened elsewhere
    put(1300, 'c'); // revision 4
    put(60_000, 'd'); // revision 5
    assert.equal(stats.timeOfRevision('local', 1), undefined);
    assert.equal(stats.timeOfRevision('local', 2), 1100);
    assert.equal(stats.timeOfRevision('local', 3), 1300, 'between change sets 200 ms apart');
    assert.equal(stats.timeOfRevision('local', 5), 60_000);
    assert.equal(stats.timeOfRevision('local', 99), undefined);
  });

  test('kept across restarts: a hold still in place goes on; one gone while LockLens was not looking ends, unsampled', () => {
    const first = harness();
    first.put(0, 'a');
    first.put(1000, 'b');
    first.del(2000, 'a');
    const saved = JSON.parse(JSON.stringify(first.stats.toJSON()));
    // Restarted with b still holding: the reload finds it, and its hold goes on.
    const again = harness({}, LockStats.fromJSON(saved));
    again.step(9000, (m) => m.reload(() => true, [mutexKey('/locks/jobs', 'b', 2)], 3));
    assert.deepEqual(again.stats.holds('local', JOBS).map((h) => [h.owner, h.endedAt]), [
      ['a', 2000],
      ['b', null],
    ]);
    // Restarted after b went: the first load has no such lock.
    const later = harness({}, LockStats.fromJSON(saved));
    later.step(9000, (m) => m.reload(() => true, [{ ...mutexKey('/locks/else', 'z', 7), key: Buffer.from('/locks/else/z') }], 7));
    const [, b] = later.stats.holds('local', JOBS);
    assert.deepEqual([b.endedAt, b.end], [9000, null]);
    assert.equal(later.stats.figures('local', JOBS)!.hold, null, 'a was found holding and the end of b was not seen: no sample');
    assert.deepEqual(later.stats.unsettled('local').sort(), ['a', 'b'], 'the store is asked whether their leases live on');
  });

  test('bounded: holds per lock and locks per connection, the least recently active dropped', () => {
    const { stats, step } = harness();
    for (let i = 0; i < MAX_HOLDS + 10; i++) {
      step(i * 10, (m, rev) => m.put(mutexKey('/locks/jobs', `h${i}`, rev)));
      if (i > 0) step(i * 10 + 5, (m, rev) => m.delete(Buffer.from(`/locks/jobs/h${i - 1}`), rev));
    }
    assert.equal(stats.holds('local', JOBS).length, MAX_HOLDS);
    assert.equal(stats.figures('local', JOBS)!.holds, MAX_HOLDS + 10, 'counts are over everything seen');
    for (let i = 0; i < MAX_LOCKS + 5; i++) step(10_000 + i, (m, rev) => m.put(mutexKey(`/locks/n${i}`, 'x', rev)));
    assert.equal(stats.figures('local', JOBS), undefined, 'the least recently active went first');
    assert.ok(stats.figures('local', lockId(Buffer.from(`/locks/n${MAX_LOCKS + 4}`), 'go-mutex')));
  });

  test('a new holder on the same key within one change set is a new hold (Redis token locks, re-created keys)', () => {
    const { stats, step } = harness({ hasLeases: false, hasRevisions: false });
    const token = (owner: string, rev: number): KeyRecord => ({ ...mutexKey('/locks/jobs', '', rev), key: Buffer.from('/locks/jobs'), valuePreview: Buffer.from(owner) });
    const single = lockId(Buffer.from('/locks/jobs'), 'single-key');
    step(0, (m) => m.put(token('a', 1)));
    step(1000, (m) => m.put(token('b', 2))); // deleted and set again by another owner: one change set, same key
    assert.deepEqual(stats.holds('local', single).map((h) => [h.token, h.endedAt]), [
      [1, 1000],
      [2, null],
    ]);
    assert.equal(stats.figures('local', single)!.transitions, 1);
  });

  test('a new watch (Refresh, reconnect): a hold gone meanwhile ends unseen, and is never measured', () => {
    const { stats, model, put } = harness();
    put(0, 'x');
    put(1000, 'a');
    stats.restart('local');
    // The new watch's first load: a is gone, b holds.
    const fresh = new LockModel();
    fresh.reload(() => true, [mutexKey('/locks/jobs', 'b', 9)], 9);
    stats.observe('local', { ...fresh.takeChanges(), resynced: true }, { hasLeases: true, hasRevisions: true, sampledTtls: true, lease: () => undefined }, 3_600_000);
    const [x, b, ...more] = stats.holds('local', JOBS);
    assert.deepEqual([x.owner, x.endedAt, x.endedExact, b.owner, b.acquiredExact, more.length], ['x', 3_600_000, false, 'b', false, 0]);
    assert.equal(stats.figures('local', JOBS)!.hold, null, 'x was found holding: no sample');
    assert.equal(model.keyCount, 2);
  });

  test('an end found by a reload is inexact: at most that long', () => {
    const { stats, step, put } = harness();
    put(0, 'seed');
    step(10, (m, rev) => m.delete(Buffer.from('/locks/jobs/seed'), rev));
    put(1000, 'a'); // seen taking the free lock
    stats.restart('local');
    const fresh = new LockModel();
    fresh.reload(() => true, [], 20);
    stats.observe('local', { revision: 20, changed: [], removed: [], resynced: true }, { hasLeases: true, hasRevisions: true, sampledTtls: true, lease: () => undefined }, 5000);
    const a = stats.holds('local', JOBS).find((h) => h.owner === 'a')!;
    assert.deepEqual([a.endedAt, a.endedExact, a.endedRevision, holdBound(a)], [5000, false, null, '≤ ']);
    assert.equal(stats.figures('local', JOBS)!.hold, null);
  });

  test('handoffs a minute: not capped by a sample count, and over the time LockLens watched', () => {
    const { stats, step } = harness();
    step(0, (m, rev) => m.put(mutexKey('/locks/jobs', 'h0', rev)));
    // 600 handoffs in 2 minutes: 300 a minute.
    for (let i = 1; i <= 600; i++) {
      step(i * 200 - 100, (m, rev) => m.put(mutexKey('/locks/jobs', `h${i}`, rev)));
      step(i * 200, (m, rev) => m.delete(Buffer.from(`/locks/jobs/h${i - 1}`), rev));
    }
    assert.equal(stats.figures('local', JOBS, 120_000)!.handoffsPerMinute, 300);
  });

  test('a restart\'s first load of more locks than are kept leaves what was measured before', () => {
    const first = harness();
    first.put(0, 'a');
    first.put(100, 'b');
    first.del(200, 'a');
    const saved = first.stats.toJSON();
    const again = harness({}, LockStats.fromJSON(JSON.parse(JSON.stringify(saved))));
    again.step(9000, (m) =>
      m.reload(() => true, [mutexKey('/locks/jobs', 'b', 2), ...Array.from({ length: MAX_LOCKS + 50 }, (_, i) => mutexKey(`/locks/n${i}`, 'c', 10 + i))], 300),
    );
    assert.equal(again.stats.figures('local', JOBS)!.wait?.count, 1, 'the record of /locks/jobs survived');
  });

  test('a lock the model had, changed live without a record (dropped beyond the cap), is not taken as new', () => {
    const { stats, step } = harness();
    const names = Array.from({ length: MAX_LOCKS + 1 }, (_, i) => `/locks/n${i}`);
    step(0, (m, rev) => m.reload(() => true, names.map((n, i) => mutexKey(n, 'c', rev + i)), rev + names.length));
    const dropped = names.find((n) => !stats.figures('local', lockId(Buffer.from(n), 'go-mutex')))!;
    assert.ok(dropped, 'one went beyond the cap');
    step(5000, (m, rev) => m.put(mutexKey(dropped, 'w', 1000 + rev)));
    const [held] = stats.holds('local', lockId(Buffer.from(dropped), 'go-mutex'));
    assert.deepEqual([held.owner, held.acquiredExact], ['c', false], 'its holder was there before');
  });

  test('saved records leave out TTL samples, which a restart makes stale', () => {
    const { stats, leases, put } = harness();
    leases.set('a', lease('a', 10, 0));
    put(0, 'a');
    const saved = stats.toJSON();
    assert.equal(saved.connections.local.locks[0][1].current?.sample, null);
  });

  test('fromJSON refuses anything but its own records, whole', () => {
    const { stats, put } = harness();
    put(0, 'a');
    const good = JSON.parse(JSON.stringify(stats.toJSON()));
    assert.deepEqual(LockStats.fromJSON(good).holds('local', JOBS), stats.holds('local', JOBS));
    for (const bad of [null, [], { format: 2, connections: {} }, { format: 1 }, { format: 1, connections: { local: { locks: [[JOBS, { holds: 'x' }]], revisionTimes: [] } } }]) {
      assert.throws(() => LockStats.fromJSON(bad), /record/);
    }
    const damaged = structuredClone(good);
    damaged.connections.local.locks[0][1].holds[0].end = 'stolen';
    assert.throws(() => LockStats.fromJSON(damaged), /damaged/);
  });

  test('forget drops a connection and its records', () => {
    const { stats, put } = harness();
    put(0, 'a');
    assert.deepEqual(stats.connections(), ['local']);
    stats.forget('local');
    assert.deepEqual(stats.connections(), []);
    assert.equal(stats.figures('local', JOBS), undefined);
  });
});

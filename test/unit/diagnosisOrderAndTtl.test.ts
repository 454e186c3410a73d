import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockOrder } from '../../src/core/diagnosis/inversions';
import { runningHoldFit, ttlFit, TtlRenewals } from '../../src/core/diagnosis/ttlFit';
import { WaitForGraph } from '../../src/core/diagnosis/waitFor';
import type { ObservedHold } from '../../src/core/holdObservation';
import { belowStallLine, type LeaseInfo } from '../../src/core/leaseInfo';
import { lockOf } from '../harness/waitLocks';

const ref = (name: string) => ({ id: name, name });

describe('lock-order inversions', () => {
  test('held A when it began waiting for B, and later B then A by another owner: an inversion with both pieces of evidence', () => {
    const order = new LockOrder();
    assert.deepEqual(order.observe([{ owner: 'x', lock: ref('/b'), holding: [ref('/a')] }], 1000), []);
    assert.deepEqual(order.observe([{ owner: 'z', lock: ref('/c'), holding: [] }], 1500), [], 'a wait holding nothing orders nothing');
    const [found] = order.observe([{ owner: 'y', lock: ref('/a'), holding: [ref('/b')] }], 2000);
    assert.deepEqual(found.locks, [ref('/a'), ref('/b')]);
    assert.deepEqual(found.first, { owner: 'x', held: ref('/a'), waitedFor: ref('/b'), at: 1000 });
    assert.deepEqual(found.second, { owner: 'y', held: ref('/b'), waitedFor: ref('/a'), at: 2000 });
    assert.deepEqual(order.inversions(3000), [found]);
  });

  test('forgotten after the window, and at most maxPairs orders kept, the least recently seen going first', () => {
    const order = new LockOrder({ forgetAfterMs: 10_000, maxPairs: 3 });
    order.observe([{ owner: 'x', lock: ref('/b'), holding: [ref('/a')] }], 0);
    assert.deepEqual(order.observe([{ owner: 'y', lock: ref('/a'), holding: [ref('/b')] }], 20_000), [], '/a then /b was forgotten');
    order.observe([{ owner: 'x', lock: ref('/b'), holding: [ref('/a')] }], 21_000);
    assert.equal(order.inversions(22_000).length, 1);
    order.observe([{ owner: 'w', lock: ref('/d'), holding: [ref('/c'), ref('/e')] }], 23_000);
    assert.ok(order.size <= 3, `${order.size} kept`);
    assert.deepEqual(order.inversions(23_000), [], 'the oldest orders went');
    assert.deepEqual(order.inversions(40_000), []);
    assert.equal(order.size, 0);
  });

  test('through the graph: an owner that holds /a and queues for /b, then one that holds /b and queues for /a, after the first is gone', () => {
    const graph = new WaitForGraph();
    const order = new LockOrder();
    const step = (now: number, ...locks: ReturnType<typeof lockOf>[]) => order.observe(graph.apply({ changed: locks, removed: [] }), now);
    step(0, lockOf('/a', 'x'), lockOf('/b', 'q'));
    step(1, lockOf('/b', 'q', ['x']));
    step(2, lockOf('/b', 'x'), lockOf('/a', null));
    step(3, lockOf('/b', null));
    step(4, lockOf('/b', 'y'));
    const [inversion] = step(5, lockOf('/a', 'z', ['y']));
    assert.deepEqual(graph.cycles(), [], 'no deadlock');
    assert.deepEqual([inversion.first.owner, inversion.first.at, inversion.second.owner, inversion.second.at], ['x', 1, 'y', 5]);
  });
});

function hold(acquiredAt: number, heldS: number, end: ObservedHold['end'] = 'released'): ObservedHold {
  const endedAt = acquiredAt + heldS * 1000;
  return { key: '/jobs', owner: 't', lease: '/jobs', token: null, acquiredAt, acquiredExact: true, acquiredRevision: null, waitedMs: null, endedAt, endedExact: true, endedRevision: null, end, stalled: false };
}

/** Stalled as observeLease tells it: below `stallFraction` of the TTL granted (Go's half by default). */
function sample(ttl: number, observedAt: number, refreshes: number[] = [], grantedTtl = 8, stallFraction = 0.5): LeaseInfo {
  return { id: '/jobs', state: 'alive', grantedTtl, ttl, observedAt, firstSeenAt: 0, refreshes, stalled: stallFraction > 0 && belowStallLine(ttl, grantedTtl, stallFraction), stallFraction, keys: [] };
}

describe('TTL fit', () => {
  test('holds running up to 11 s on a lock that expires after 8 s, with nothing renewing it, are flagged with the figures', () => {
    const fit = ttlFit(ref('/jobs'), 8, 'none', [hold(0, 9), hold(20_000, 10), hold(40_000, 11)]);
    assert.ok(fit);
    assert.deepEqual([fit.level, fit.p95Seconds, fit.maxSeconds, fit.holds, fit.expired], ['exceeds', 11, 11, 3, 0]);
    assert.equal(fit.text, 'holds run up to 11 s (p95 11 s); the lock expires after 8 s with nothing renewing it: a second holder can get in');
  });

  test('holds ending as the TTL runs out (a redis-py lock whose work outlives its timeout) exceed it, even before renewal is known', () => {
    const fit = ttlFit(ref('/jobs'), 2, 'unknown', [hold(0, 2, 'expired'), hold(5000, 0.4), hold(9000, 2, 'expired')]);
    assert.equal(fit?.level, 'exceeds');
    assert.match(fit!.text, /^holds run up to 2 s \(p95 2 s\); the lock expires after 2 s with nothing renewing it; 2 of 3 holds ran until it expired/);
  });

  test('close to the TTL is said as approaching; renewed, short, unmeasured or unknown holds are not flagged', () => {
    assert.equal(ttlFit(ref('/jobs'), 8, 'none', [hold(0, 6.5), hold(10_000, 7)])?.level, 'approaches');
    assert.equal(ttlFit(ref('/jobs'), 8, 'renewed', [hold(0, 30)]), undefined);
    assert.equal(ttlFit(ref('/jobs'), 8, 'none', [hold(0, 2), hold(10_000, 3)]), undefined);
    assert.equal(ttlFit(ref('/jobs'), 8, 'unknown', [hold(0, 7.5)]), undefined);
    assert.equal(ttlFit(ref('/jobs'), 8, 'none', [{ ...hold(0, 9), acquiredExact: false }]), undefined);
  });

  test("renewal told from a hold's samples: a rise after its first sample is a renewal; below the stall line without one is none", () => {
    const renewals = new TtlRenewals();
    renewals.observe('/a', 100, sample(7.5, 1000, [1000]));
    assert.deepEqual(renewals.of('/a'), { ttlSeconds: 8, renewal: 'unknown' }, "the hold's own start is no renewal");
    renewals.observe('/a', 100, sample(5, 3700, [1000]));
    assert.deepEqual(renewals.of('/a'), { ttlSeconds: 8, renewal: 'unknown' }, 'a third of the TTL gone: Go would have renewed by now, redis-semaphore not');
    renewals.observe('/a', 100, sample(3.5, 5200, [1000]));
    assert.deepEqual(renewals.of('/a'), { ttlSeconds: 8, renewal: 'none' }, 'below half: no holder that renews goes there');
    renewals.observe('/b', 100, sample(7, 1000));
    renewals.observe('/b', 100, sample(7.9, 3000, [3000]));
    assert.equal(renewals.of('/b')?.renewal, 'unknown', 'a rise is a renewal once a later sample of the same hold follows it');
    renewals.observe('/b', 100, sample(6, 5000, [3000]));
    assert.equal(renewals.of('/b')?.renewal, 'renewed');
    // A Redis key set anew by the next holder rises too, read before the watch reports the new hold.
    renewals.observe('/d', 100, sample(5, 1000));
    renewals.observe('/d', 100, sample(7.9, 3000, [3000]));
    renewals.observe('/d', 2900, sample(6, 5000, [3000]));
    renewals.observe('/d', 2900, sample(3, 8000, [3000]));
    assert.deepEqual(renewals.of('/d'), { ttlSeconds: 8, renewal: 'none' }, "the next holder's new key is no renewal of either hold");
    assert.equal(renewals.of('/c'), undefined);
  });

  test("a redis-semaphore permit, refreshed at four fifths of its 10 s lockTimeout: holds that end before then are no sign of none", () => {
    const renewals = new TtlRenewals();
    const permit = (id: string, ttl: number, at: number, refreshes: number[] = []) => ({ ...sample(ttl, at, refreshes, 10, 0.1), id });
    // A 6 s hold, sampled every second, and an 8.2 s one refreshed at 8 s that ended before another sample.
    for (let s = 0; s <= 6; s++) renewals.observe('/s', 0, permit('a', 10 - s, s * 1000));
    for (let s = 0; s <= 8; s++) renewals.observe('/s', 7000, permit('b', s === 8 ? 10 : 10 - s, 7000 + s * 1000, s === 8 ? [15_000] : []));
    assert.deepEqual(renewals.of('/s'), { ttlSeconds: 10, renewal: 'unknown' });
    renewals.observe('/s', 20_000, permit('c', 1.5, 28_500));
    renewals.observe('/s', 20_000, permit('c', 0.8, 29_200));
    assert.equal(renewals.of('/s')?.renewal, 'none', 'a permit down to its last tenth unrefreshed');
  });

  test('a lock-table row, never told stalled (ShedLock: nothing renews it), is none once a third of its TTL went by', () => {
    const renewals = new TtlRenewals();
    const row = (ttl: number, at: number, refreshes: number[] = []) => sample(ttl, at, refreshes, 30, 0);
    renewals.observe('shedlock/report', 0, row(30, 0));
    renewals.observe('shedlock/report', 0, row(25, 5000));
    assert.deepEqual(renewals.of('shedlock/report'), { ttlSeconds: 30, renewal: 'unknown' });
    renewals.observe('shedlock/report', 0, row(19, 11_000));
    assert.deepEqual(renewals.of('shedlock/report'), { ttlSeconds: 30, renewal: 'none' });
    // KeepAliveLockProvider moves lock_until on: a rise, then a later sample.
    renewals.observe('shedlock/report', 0, row(30, 12_000, [12_000]));
    renewals.observe('shedlock/report', 0, row(29, 13_000, [12_000]));
    assert.equal(renewals.of('shedlock/report')?.renewal, 'renewed');
  });

  test('one hold in place, from two reads: a ShedLock row 7 s into the 8 s it was granted is flagged; a renewed one is not', () => {
    const now = 10_000;
    const fit = runningHoldFit(ref('shedlock/report'), sample(1.5, 9000), sample(1, 9500), now);
    assert.equal(fit?.text, 'this hold has run 7.5 s of the 8 s it was granted, with nothing renewing it between two reads: it expires in 0.5 s, and a second holder can get in while it still works');
    assert.equal(runningHoldFit(ref('shedlock/report'), sample(1.5, 9000), sample(7.9, 9500), now), undefined, 'renewed between');
    assert.equal(runningHoldFit(ref('shedlock/report'), sample(5, 9000), sample(4.5, 9500), now), undefined, 'half way');
    assert.equal(runningHoldFit(ref('redis'), sample(3, 9000, [], 3), sample(2.5, 9500, [], 2.5), now), undefined, 'Redis: what was granted is the first PTTL seen');
  });
});

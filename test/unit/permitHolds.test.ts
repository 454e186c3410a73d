import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TtlRenewals } from '../../src/core/diagnosis/ttlFit';
import type { ObserveOptions } from '../../src/core/holdObservation';
import { keyId } from '../../src/core/keys';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import { LockEvents } from '../../src/core/lockEvents';
import type { LockEvent } from '../../src/core/lockEventTypes';
import type { ChangeSet, LockState } from '../../src/core/lockState';
import { LockStats } from '../../src/core/lockStats';
import { leaseSample, semaphore } from '../harness/waitLocks';

const S = keyId(Buffer.from('/s'));
const live = (lock: LockState | null, now: number): ChangeSet => ({ revision: now, changed: lock ? [lock] : [], removed: lock ? [] : [S], resynced: false });
const opts = (leases: Map<string, LeaseInfo>): ObserveOptions => ({ hasLeases: false, hasRevisions: false, sampledTtls: true, lease: (id) => leases.get(id) });

/**
 * A semaphore of 3 permits whose holders rotate: a, b, c take them one by one; each later change set one gives its
 * permit back and a newcomer takes it (d, e, f); then the lock goes. a's own key had run out of time when it went
 * (expired); every other one went with time left or unsampled (released). Six permit takes: six holds.
 */
const ROTATION: [LockState | null, number][] = [
  [semaphore('/s', ['a']), 1000],
  [semaphore('/s', ['a', 'b']), 1100],
  [semaphore('/s', ['a', 'b', 'c']), 1200],
  [semaphore('/s', ['b', 'c', 'd']), 2000],
  [semaphore('/s', ['c', 'd', 'e']), 2500],
  [semaphore('/s', ['d', 'e', 'f']), 3000],
  [null, 4000],
];
const EXPECTED = [
  ['a', 1000, 2000, 'expired'],
  ['b', 1100, 2500, 'released'],
  ['c', 1200, 3000, 'released'],
  ['d', 2000, 4000, 'released'],
  ['e', 2500, 4000, 'released'],
  ['f', 3000, 4000, 'released'],
];
/** a's key: 1 s left at 1000, so none left by 2000; b's: 30 s left at 1100, and stalled. */
const SAMPLES = [leaseSample('a', 1, 1000), leaseSample('b', 30, 1100, { stalled: true })];

describe('every permit hold of a semaphore is a hold', () => {
  test('statistics: a hold per permit take, each with its own start, end and end evidence', () => {
    const stats = new LockStats();
    const leases = new Map<string, LeaseInfo>();
    for (const [lock, now] of ROTATION) {
      stats.observe('c', live(lock, now), opts(leases), now);
      if (now === 1200) stats.observeLeases('c', SAMPLES);
    }
    const holds = stats.holds('c', S);
    assert.deepEqual(
      holds.map((h) => [h.owner, h.acquiredAt, h.endedAt, h.end]),
      EXPECTED,
    );
    assert.ok(holds.every((h) => h.acquiredExact && h.endedExact));
    assert.deepEqual(holds.filter((h) => h.stalled).map((h) => h.owner), ['b'], "b's stall is b's, no other holder's");
    const figures = stats.figures('c', S, 4000)!;
    assert.deepEqual([figures.holds, figures.hold?.count, figures.longestHold, figures.stalls], [6, 6, { ms: 2000, who: 'd' }, 1]);
  });

  test('statistics saved while three permits are held read back, each holder still ending its own hold', () => {
    const stats = new LockStats();
    const leases = new Map<string, LeaseInfo>();
    for (const [lock, now] of ROTATION.slice(0, 4)) stats.observe('c', live(lock, now), opts(leases), now);
    const saved = JSON.parse(JSON.stringify(stats.toJSON()));
    const [[, record]] = saved.connections.c.locks;
    assert.deepEqual([record.current.sample, record.otherHolders.length], [null, 2], 'b holds first (a is gone), c and d beside it');
    const damaged = structuredClone(saved);
    damaged.connections.c.locks[0][1].otherHolders.push({ member: 'e', lease: 'e', sample: null });
    assert.throws(() => LockStats.fromJSON(damaged), /damaged/, 'a holder without an open hold of its own');
    const again = LockStats.fromJSON(saved);
    // A restart's first load finds b, c, d holding still; then the rotation goes on live.
    again.observe('c', { ...live(semaphore('/s', ['b', 'c', 'd']), 1900), resynced: true }, opts(leases), 1900);
    for (const [lock, now] of ROTATION.slice(4)) again.observe('c', live(lock, now), opts(leases), now);
    assert.deepEqual(
      again.holds('c', S).map((h) => [h.owner, h.acquiredAt, h.endedAt]),
      EXPECTED.map(([owner, from, to]) => [owner, from, to]),
    );
  });

  test("serve's events: a holdStarted and a holdEnded per permit take, each with its own span; held since the oldest", () => {
    const events = new LockEvents('c');
    const leases = new Map<string, LeaseInfo>();
    const seen: LockEvent[] = [];
    for (const [lock, now] of ROTATION) {
      seen.push(...events.observe(live(lock, now), opts(leases), now).events);
      if (now === 1200) events.observeLeases(SAMPLES);
      if (now === 2500) assert.equal(events.now(S)?.heldSince, 1200, "c's, the oldest hold in place");
    }
    assert.deepEqual(seen.filter((e) => e.type === 'holdStarted').map((e) => [e.member.owner, e.at]), EXPECTED.map(([owner, from]) => [owner, from]));
    const ended = seen.flatMap((e) => (e.type === 'holdEnded' ? [[e.member.owner, e.at - e.heldMs!, e.at, e.how]] : []));
    assert.deepEqual(ended, EXPECTED);
    assert.equal(events.size, 0, 'a free semaphore keeps nothing');
  });

  test("the TTL fit's renewals: each permit holder's samples are of its own hold, however they interleave", () => {
    const renewals = new TtlRenewals();
    // a holds since 100 and renews at 2 s; b, holding since 200 beside it, is sampled between a's samples.
    renewals.observe('/s', 100, leaseSample('a', 5, 1000));
    renewals.observe('/s', 200, leaseSample('b', 9, 1500));
    renewals.observe('/s', 100, leaseSample('a', 10, 2500, { refreshes: [2000] }));
    renewals.observe('/s', 200, leaseSample('b', 8, 2600));
    renewals.observe('/s', 100, leaseSample('a', 9, 3500, { refreshes: [2000] }));
    assert.equal(renewals.of('/s')?.renewal, 'renewed');
  });

  test("a handoff is a queued member taking the permit another gave back, not a newcomer's take beside it", () => {
    const events = new LockEvents('c');
    const leases = new Map<string, LeaseInfo>();
    events.observe(live(semaphore('/s', ['a', 'b'], ['w']), 1000), opts(leases), 1000);
    const taken = events.observe(live(semaphore('/s', ['b', 'w', 'x']), 2000), opts(leases), 2000).events;
    assert.deepEqual(
      taken.flatMap((e) => (e.type === 'holdStarted' ? [[e.member.owner, e.handoff, e.waitedMs]] : [])),
      [
        ['w', true, 1000],
        ['x', false, null],
      ],
    );
  });
});

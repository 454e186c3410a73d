import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Capabilities } from '../../src/core/backend';
import { WaitForGraph } from '../../src/core/diagnosis/waitFor';
import { incidentReport } from '../../src/core/incidentReport';
import { keyId } from '../../src/core/keys';
import { LockClock, lockHealth } from '../../src/core/lockHealth';
import type { ChangeSet, LockState, Permits } from '../../src/core/lockState';
import { LockEvents } from '../../src/core/lockEvents';
import { LockStats } from '../../src/core/lockStats';
import { permitCount, permitsSummary } from '../../src/core/permitCount';
import { timelineRows } from '../../src/core/timeline';
import { lockJson, lockText } from '../../src/cli/lockJson';
import { lockOf, semaphore } from '../harness/waitLocks';

const options = { longHoldMs: 60_000 };
const noLease = () => undefined;
const CAPS: Capabilities = { waiters: true, fencingTokens: false, ttl: true, owner: 'token', queuedAcquire: false, readWriteLocks: true };
const NOT_RECORDED: Permits = { limit: null, free: 1, holdersRecorded: false };
const live = (lock: LockState, now: number): ChangeSet => ({ revision: now, changed: [lock], removed: [], resynced: false });

describe('semaphores in the views', () => {
  test('each permit holder holds since it took its permit, not since the first holder changed', () => {
    const clock = new LockClock();
    const at = (lock: LockState, now: number) => clock.observe({ revision: now, changed: [lock], removed: [], resynced: false }, now);
    at(semaphore('/s', ['a', 'b'], ['c']), 1000);
    at(semaphore('/s', ['b', 'c']), 5000);
    const [b, c] = lockHealth(semaphore('/s', ['b', 'c']), clock, noLease, options, 6000);
    assert.deepEqual([b.since.at, c.since.at], [1000, 5000], 'b kept its start when a left; c, a waiter since 1000, holds since 5000');
    assert.deepEqual([b.position, c.position, b.role], [0, 0, 'holder']);
  });

  test('a semaphore waiter waits for no one while a permit is free, and never for each of several owners', () => {
    // x holds a permit of /s and waits in /q, held by y, which waits in /s: a cycle only if x alone can free /s.
    const q = lockOf('/q', 'y', ['x']);
    const shared = new WaitForGraph();
    shared.replace([q, semaphore('/s', ['x', 'z'], ['y'])]);
    assert.deepEqual(shared.cycles(), [], 'z may give its permit back: y is not stuck on x');
    const free = new WaitForGraph();
    free.replace([q, semaphore('/s', ['x'], ['y'], { limit: 2, free: 1, holdersRecorded: true })]);
    assert.deepEqual(free.cycles(), [], 'a permit is free: y is about to take it');
    const alone = new WaitForGraph();
    alone.replace([q, semaphore('/s', ['x', 'x'], ['y'])]);
    assert.equal(alone.cycles().length, 1, 'every permit is x\'s: y waits for x, and x for y');
  });

  test('permits counted: held of the limit, free, or left where the holders are not recorded', () => {
    assert.equal(permitsSummary(permitCount(semaphore('/s', ['a', 'b'], [], { limit: 3, free: null, holdersRecorded: true }))!), '2/3 permits held');
    assert.deepEqual(permitCount(semaphore('/s', ['a', 'b'], [], { limit: 3, free: null, holdersRecorded: true })), { held: 2, limit: 3, free: 1, holdersRecorded: true });
    assert.equal(permitsSummary(permitCount(semaphore('/s', ['a'], [], { limit: null, free: null, holdersRecorded: true }))!), '1 permit held (limit not recorded)');
    assert.equal(permitsSummary(permitCount(semaphore('/s', [], [], NOT_RECORDED))!), '1 permit free, holders not recorded');
    assert.deepEqual(permitCount(semaphore('/s', [], [], { limit: 5, free: 2, holdersRecorded: false })), { held: 3, limit: 5, free: 2, holdersRecorded: false });
    assert.equal(permitCount(lockOf('/q', 'a')), undefined);
  });

  test('list --json: kind semaphore, its permits and every holder; the text listing counts them', () => {
    const lock = semaphore('/s', ['a', 'b'], ['c'], { limit: 2, free: 0, holdersRecorded: true });
    const json = lockJson(lock, noLease, CAPS);
    assert.equal(json.kind, 'semaphore');
    assert.deepEqual(json.permits, { limit: 2, free: 0, holdersRecorded: true });
    assert.deepEqual(json.holders?.map((h) => h.owner), ['a', 'b']);
    assert.deepEqual(json.waiters.map((w) => w.owner), ['c']);
    assert.equal(lockJson(lockOf('/q', 'a'), noLease, CAPS).holders, undefined, 'other kinds keep their shape');
    assert.deepEqual(lockJson(semaphore('/r', [], [], NOT_RECORDED), noLease, CAPS).holders, []);
    const text = lockText(lock, noLease, CAPS).split('\n');
    assert.equal(text[0], '/s  (semaphore, 2/2 permits held, 1 waiting)');
    assert.deepEqual(text.slice(1).map((l) => l.trim().split(/\s+/)[0]), ['holder', 'holder', 'waiter']);
    assert.equal(lockText(semaphore('/r', [], [], NOT_RECORDED), noLease, CAPS), '/r  (semaphore, 1 permit free, holders not recorded, 0 waiting)');
  });

  test('the timeline: one bar per permit holder, each from its own start', () => {
    const clock = new LockClock();
    clock.observe(live(semaphore('/s', ['a']), 1000), 1000);
    const now = semaphore('/s', ['a', 'b']);
    clock.observe(live(now, 4000), 4000);
    const rows = timelineRows({ connection: 'c', hasLeases: false, locks: [now], lease: noLease, clock }, 60_000, 5000);
    assert.deepEqual(rows.map((r) => [r.owner, r.role, r.heldSince]), [['a', 'holder', 1000], ['b', 'holder', 4000]]);
  });

  test("statistics count every permit holder's hold from its own start to its own end", () => {
    const stats = new LockStats();
    const opts = { hasLeases: false, hasRevisions: false, sampledTtls: true, lease: noLease };
    const step = (lock: LockState, now: number) => stats.observe('c', { ...live(lock, now), removed: [] }, opts, now);
    const gone = (now: number) => stats.observe('c', { revision: now, changed: [], removed: [keyId(Buffer.from('/s'))], resynced: false }, opts, now);
    step(semaphore('/s', ['m']), 1000);
    step(semaphore('/s', ['a', 'm']), 2000); // a sorts first: m's hold goes on
    step(semaphore('/s', ['a']), 3000);
    gone(4000);
    const holds = stats.holds('c', keyId(Buffer.from('/s')));
    assert.deepEqual(holds.map((h) => [h.owner, h.acquiredAt, h.acquiredExact, h.endedAt, h.end]), [
      ['m', 1000, true, 3000, 'released'],
      ['a', 2000, true, 4000, 'released'],
    ]);
    assert.equal(stats.figures('c', keyId(Buffer.from('/s')), 4000)?.hold?.count, 2);
    step(semaphore('/s', ['a'], ['w']), 5000);
    step(semaphore('/s', ['a', 'w']), 6500);
    assert.deepEqual(stats.figures('c', keyId(Buffer.from('/s')), 6500)?.wait?.p50, 1500, "a waiter's wait ends when it takes a permit");
    assert.deepEqual(stats.holds('c', keyId(Buffer.from('/s'))).at(-1)?.waitedMs, 1500);
  });

  test("serve's events: a holder joining is no end of another's hold, and each permit hold starts and ends", () => {
    const events = new LockEvents('c');
    const opts = { hasLeases: false, hasRevisions: false, sampledTtls: true, lease: noLease };
    const step = (lock: LockState, now: number) => events.observe(live(lock, now), opts, now).events.map((e) => `${e.type} ${e.member.owner}${e.exact ? '' : ' (found)'}`);
    assert.deepEqual(step(semaphore('/s', ['m']), 1000), ['holdStarted m']);
    assert.deepEqual(step(semaphore('/s', ['a', 'm']), 2000), ['holdStarted a']);
    assert.deepEqual(step(semaphore('/s', ['a']), 3000), ['holdEnded m']);
    assert.deepEqual(step(semaphore('/s', ['a', 'm2'], ['w']), 4000), ['holdStarted m2', 'waitStarted w']);
    // w takes the permit m2 gives back: its wait ends, granted, as its hold starts.
    const handed = events.observe(live(semaphore('/s', ['a', 'w']), 5000), opts, 5000).events;
    assert.deepEqual(
      handed.map((e) => [e.type, e.member.owner, e.type === 'waitEnded' ? [e.granted, e.waitedMs] : e.type === 'holdStarted' ? [e.waitedMs, e.handoff] : e.type === 'holdEnded' ? e.heldMs : null]),
      [
        ['holdEnded', 'm2', 1000],
        ['waitEnded', 'w', [true, 1000]],
        ['holdStarted', 'w', [1000, true]],
      ],
    );
    assert.equal(events.now(keyId(Buffer.from('/s')))?.heldSince, 2000, "held since the oldest hold in place, a's");
  });

  test('the incident report counts the permits, and a semaphore whose holders are not recorded is not called free', () => {
    const lock = semaphore('/s', [], [], NOT_RECORDED);
    const text = incidentReport({ connection: 'prod', store: 'Redis', name: lock.name, live: { lock, health: [], owner: 'token' }, holds: [], figures: undefined, history: undefined, now: 1000 });
    assert.match(text, /Semaphore: 1 permit free, holders not recorded\./);
    assert.doesNotMatch(text, /Free: no holder/);
    const held = semaphore('/t', ['a', 'b'], [], { limit: 3, free: 1, holdersRecorded: true });
    const clock = new LockClock();
    clock.observe(live(held, 500), 500);
    const health = lockHealth(held, clock, noLease, options, 1000);
    const report = incidentReport({ connection: 'prod', store: 'Redis', name: held.name, live: { lock: held, health, owner: 'token' }, holds: [], figures: undefined, history: undefined, now: 1000 });
    assert.match(report, /Semaphore: 2\/3 permits held\./);
    assert.equal(report.match(/\*\*holder\*\*/g)?.length, 2);
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WaitForGraph } from '../../src/core/diagnosis/waitFor';
import { keyId } from '../../src/core/keys';
import { LockClock, lockHealth } from '../../src/core/lockHealth';
import type { LockState, Permits } from '../../src/core/lockState';
import { lockOf, member } from '../harness/waitLocks';

/** A semaphore `name` whose permits `holders` hold, with `waiters` in order. */
function semaphore(name: string, holders: readonly string[], waiters: readonly string[] = [], permits: Permits = { limit: holders.length, free: 0, holdersRecorded: true }): LockState {
  const [first, ...rest] = holders.map((h) => member(name, h));
  return { id: keyId(Buffer.from(name)), name: Buffer.from(name), kind: 'semaphore', holder: first ?? null, sharedWith: rest, waiters: waiters.map((w) => member(name, w)), permits };
}

const options = { longHoldMs: 60_000 };
const noLease = () => undefined;

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
});

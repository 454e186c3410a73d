import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockClock, lockHealth, worstTrouble } from '../../src/core/lockHealth';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import { LockModel } from '../../src/core/etcd/lockModel';
import { type ChangeSet } from '../../src/core/lockState';
import type { KeyRecord } from '../../src/core/etcd/records';
import { revokeEffects } from '../../src/core/revokeEffects';

function mutexKey(name: string, lease: string, create: number, value = ''): KeyRecord {
  const v = Buffer.from(value);
  return { key: Buffer.from(`${name}/${lease}`), valuePreview: v, valueSize: v.length, createRevision: create, modRevision: create, version: 1, lease };
}

function singleKey(key: string, create: number, lease = ''): KeyRecord {
  return { key: Buffer.from(key), valuePreview: Buffer.alloc(0), valueSize: 0, createRevision: create, modRevision: create, version: 1, lease };
}

function lease(id: string, ttl: number, o: Partial<LeaseInfo> = {}): LeaseInfo {
  return { id, state: 'alive', grantedTtl: 60, ttl, observedAt: 1000, firstSeenAt: 0, refreshes: [], stalled: false, keys: [], ...o };
}

/** A model and clock fed like the live layer feeds them: one change set per step, the first one a reload. */
function harness() {
  const model = new LockModel();
  const clock = new LockClock();
  let first = true;
  const step = (now: number, change: (m: LockModel) => void): ChangeSet => {
    change(model);
    const set = model.takeChanges();
    clock.observe(first ? { ...set, resynced: true } : set, now);
    first = false;
    return set;
  };
  return { model, clock, step };
}

const options = { longHoldMs: 300_000 };

describe('LockClock and lockHealth', () => {
  test('what was already there at the first read is inexact; what LockLens saw happen is exact', () => {
    const { model, clock, step } = harness();
    step(1000, (m) => m.put(mutexKey('/locks/a', 'a1', 10)));
    step(5000, (m) => m.put(mutexKey('/locks/a', 'b2', 11)));
    const lock = model.locks()[0];
    const [holder, waiter] = lockHealth(lock, clock, () => undefined, options, 6000);
    assert.deepEqual(holder.since, { at: 1000, exact: false });
    assert.equal(holder.role, 'holder');
    assert.deepEqual(waiter.since, { at: 5000, exact: true });
    assert.equal(waiter.role, 'waiter');
    assert.equal(waiter.position, 1);
  });

  test('a waiter that moves up holds since the handoff, exactly', () => {
    const { model, clock, step } = harness();
    step(1000, (m) => m.reload(() => true, [mutexKey('/locks/a', 'a1', 10), mutexKey('/locks/a', 'b2', 11)], 11));
    step(9000, (m) => m.delete(Buffer.from('/locks/a/a1'), 12));
    const [holder] = lockHealth(model.locks()[0], clock, () => undefined, options, 9500);
    assert.equal(holder.member.lease, 'b2');
    assert.deepEqual(holder.since, { at: 9000, exact: true });
  });

  test('troubles: no lease, stalled, expired, long hold; the worst one decorates the lock', () => {
    const { model, clock, step } = harness();
    step(0, (m) => m.reload(() => true, [mutexKey('/locks/a', 'a1', 10), mutexKey('/locks/a', 'b2', 11), singleKey('/locks/solo', 12)], 12));
    const leases: Record<string, LeaseInfo> = { a1: lease('a1', 20, { stalled: true }), b2: lease('b2', 0, { state: 'expired' }) };
    const queue = lockHealth(model.locks()[0], clock, (id) => leases[id], options, 400_000);
    assert.deepEqual(queue.map((h) => h.troubles), [['stalled', 'longHold'], ['leaseExpired']]);
    assert.equal(worstTrouble(queue), 'leaseExpired');
    const solo = lockHealth(model.locks()[1], clock, () => undefined, options, 1000);
    assert.equal(solo[0].role, 'single');
    assert.deepEqual(solo[0].troubles, ['noLease']);
    assert.equal(worstTrouble([]), undefined);
  });

  test('the TTL counts down from the sample; elections have a leader and candidates', () => {
    const { model, clock, step } = harness();
    step(0, (m) => m.reload(() => true, [mutexKey('/election/e', 'a1', 10, 'node-a'), mutexKey('/election/e', 'b2', 11, 'node-b')], 11));
    const [leader, candidate] = lockHealth(model.locks()[0], clock, (id) => lease(id, 30), options, 6000);
    assert.equal(leader.role, 'leader');
    assert.equal(candidate.role, 'candidate');
    assert.equal(leader.ttl, 25);
  });

  test('keys that left are forgotten: a key that comes back is new again', () => {
    const { model, clock, step } = harness();
    step(0, (m) => m.reload(() => true, [mutexKey('/locks/a', 'a1', 10), mutexKey('/locks/a', 'b2', 11)], 11));
    step(1000, (m) => m.delete(Buffer.from('/locks/a/b2'), 12));
    step(2000, (m) => m.delete(Buffer.from('/locks/a/a1'), 13));
    step(3000, (m) => m.put(mutexKey('/locks/a', 'b2', 14)));
    assert.deepEqual(clock.seen(model.locks()[0].holder!), { at: 3000, exact: true });
  });

  test('a new key that takes a free lock while LockLens watches holds since then, exactly', () => {
    const { model, clock, step } = harness();
    step(0, (m) => m.reload(() => true, [], 1));
    step(2000, (m) => m.put(mutexKey('/locks/new', 'a1', 10)));
    const [holder] = lockHealth(model.locks()[0], clock, () => undefined, options, 2500);
    assert.deepEqual(holder.since, { at: 2000, exact: true });
  });

  test('the same key set anew by another owner (a Redis token lock\'s next holder, a single key re-created) is a new hold', () => {
    const { model, clock, step } = harness();
    step(0, (m) => m.reload(() => true, [], 1));
    step(1000, (m) => m.put(singleKey('/locks/single', 10, 'a1')));
    // Deleted and created again within one change set: the watch never showed the key gone.
    step(9000, (m) => m.put(singleKey('/locks/single', 12, 'b2')));
    assert.deepEqual(clock.heldSince(model.locks()[0]), { at: 9000, exact: true });
  });
});

describe('revokeEffects', () => {
  test('revoking the holder frees its lock for the first waiter on another lease; a waiter only leaves', () => {
    const model = new LockModel();
    model.reload(
      () => true,
      [mutexKey('/locks/a', 'aa', 10), mutexKey('/locks/a', 'bb', 11), mutexKey('/locks/a', 'cc', 12), mutexKey('/locks/b', 'dd', 13), mutexKey('/locks/b', 'aa', 14)],
      14,
    );
    const effects = revokeEffects([Buffer.from('/locks/a/aa'), Buffer.from('/locks/b/aa')], (k) => model.lockOfKey(k));
    const a = effects.find((e) => e.lock.name.toString() === '/locks/a')!;
    const b = effects.find((e) => e.lock.name.toString() === '/locks/b')!;
    assert.equal(a.frees, true);
    assert.deepEqual(a.positions, [0]);
    assert.equal(a.nextHolder?.lease, 'bb');
    assert.equal(b.frees, false);
    assert.deepEqual(b.positions, [1]);
  });

  test('a lease holding every key of a lock leaves it free; unknown keys are ignored', () => {
    const model = new LockModel();
    model.reload(() => true, [mutexKey('/locks/a', 'aa', 10)], 10);
    const effects = revokeEffects([Buffer.from('/locks/a/aa'), Buffer.from('/elsewhere/x')], (k) => model.lockOfKey(k));
    assert.equal(effects.length, 1);
    assert.equal(effects[0].nextHolder, null);
    assert.equal(effects[0].frees, true);
  });
});

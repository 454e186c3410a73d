import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { lockId } from '../../src/core/etcd/lockModel';
import { TimelineReducer } from '../../src/core/timeline';
import { applyDiff, isHostMessage, isTimelineRow } from '../../src/protocol/timeline';
import { compareRows } from '../../src/shared/timelineData';
import { Fixture, HOUR, LONG_HOLD, mutexKey } from './timelineFixture';

/** The timeline's deadlock mark (issue 22): the rows of a lock in a confirmed cycle say so, and only those. */
describe('timeline deadlock mark', () => {
  const A = lockId(Buffer.from('/locks/a'), 'go-mutex');

  test('every row of a lock in a confirmed deadlock is marked, the rows of other locks are not; without a diagnosis none is', () => {
    const f = new Fixture();
    f.put(mutexKey('/locks/a', 'a1', 10), mutexKey('/locks/a', 'b1', 12), mutexKey('/locks/c', 'c1', 14));
    assert.ok(f.rows().every((r) => !r.deadlock));
    f.deadlocked.add(A);
    const rows = f.rows();
    assert.deepEqual(rows.map((r) => [r.key, r.deadlock]), [
      ['/locks/a/a1', true],
      ['/locks/a/b1', true],
      ['/locks/c/c1', false],
    ]);
    assert.ok(rows.every(isTimelineRow));
    const { deadlocked: _, ...undiagnosed } = f.source();
    assert.ok(new TimelineReducer({ longHoldMs: LONG_HOLD, keepEndedMs: HOUR }).update([undiagnosed], f.now).upserts.every((r) => !r.deadlock));
  });

  test('a cycle confirmed or cleared sends the lock\'s rows again, and only them; the diffs replay to the snapshot', () => {
    const f = new Fixture();
    f.put(mutexKey('/locks/a', 'a1', 10), mutexKey('/locks/a', 'b1', 12), mutexKey('/locks/c', 'c1', 14));
    const r = new TimelineReducer({ longHoldMs: LONG_HOLD, keepEndedMs: HOUR });
    const mirror = new Map(r.update([f.source()], f.now).upserts.map((row) => [row.id, row]));
    assert.equal(r.update([f.source()], f.now).upserts.length, 0);
    f.deadlocked.add(A);
    const confirmed = r.update([f.source()], ++f.now);
    assert.deepEqual(confirmed.upserts.map((u) => [u.key, u.deadlock]), [
      ['/locks/a/a1', true],
      ['/locks/a/b1', true],
    ]);
    applyDiff(mirror, confirmed);
    f.deadlocked.clear();
    const cleared = r.update([f.source()], ++f.now);
    assert.deepEqual(cleared.upserts.map((u) => [u.key, u.deadlock]), [
      ['/locks/a/a1', false],
      ['/locks/a/b1', false],
    ]);
    applyDiff(mirror, cleared);
    assert.deepEqual([...mirror.values()].sort(compareRows), r.snapshot());
  });

  test('a row ended while its lock was deadlocked keeps the mark it ended with', () => {
    const f = new Fixture();
    f.put(mutexKey('/locks/a', 'a1', 10), mutexKey('/locks/a', 'b1', 12));
    f.deadlocked.add(A);
    const r = new TimelineReducer({ longHoldMs: LONG_HOLD, keepEndedMs: HOUR });
    r.update([f.source()], f.now);
    f.delete('/locks/a/a1');
    f.deadlocked.clear();
    r.update([f.source()], ++f.now);
    const [ended, next] = r.snapshot();
    assert.deepEqual([ended.key, ended.endedAt !== undefined, ended.deadlock], ['/locks/a/a1', true, true]);
    assert.deepEqual([next.key, next.deadlock], ['/locks/a/b1', false]);
  });

  test('the protocol refuses a row without a boolean mark', () => {
    const f = new Fixture();
    f.put(mutexKey('jobs', 'a1', 10));
    const [row] = f.rows();
    const diff = (upserts: unknown[]) => ({ type: 'diff', sentAt: 1, upserts, ended: [], removed: [] });
    assert.ok(isHostMessage(diff([row])));
    const { deadlock: _, ...unmarked } = row;
    assert.equal(isHostMessage(diff([unmarked])), false);
    assert.equal(isHostMessage(diff([{ ...row, deadlock: 'yes' }])), false);
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ObserveOptions } from '../../src/core/holdObservation';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import { LockEvents } from '../../src/core/lockEvents';
import { LockClock, lockHealth } from '../../src/core/lockHealth';
import type { ChangeSet, LockState } from '../../src/core/lockState';
import { layoutsOf, type CatalogColumn } from '../../src/core/sql/tableLayouts';
import { releaseStatement } from '../../src/core/sql/tableRelease';
import { rowLock, rowNameOf } from '../../src/core/sql/tableRows';
import { writerZone } from '../../src/core/sql/writerZone';
import { TimelineReducer } from '../../src/core/timeline';

/**
 * Each ShedLock run is a hold: the same row written again with a new locked_at, by the same locked_by, is a new
 * member, so the model's consumers (the clock of ages, the hold events) see one hold per run; and a row's writer's
 * time zone, told from its locked_at, is a whole number of quarter hours.
 */

const SHEDLOCK: CatalogColumn[] = [
  ...['name', 'locked_by'].map((column) => ({ schema: 'public', table: 'shedlock', column, type: 'character varying', pos: 1, unique: false })),
  ...['lock_until', 'locked_at'].map((column) => ({ schema: 'public', table: 'shedlock', column, type: 'timestamp without time zone', pos: 1, unique: false })),
];
const layout = layoutsOf(SHEDLOCK, [], 'postgres').layouts[0];

/** The row `nightly` as ShedLock writes it at a run that began at `at` (seconds past 10:00), for 20 s. */
function run(at: number, by = 'scheduler-1'): LockState {
  const time = (s: number) => `2030-01-01 10:${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
  return rowLock(layout, { n: 'nightly', v0: time(at + 20), v1: time(at), v2: by, ttl: 20, granted: 20 }).lock;
}

const changed = (lock: LockState, resynced = false): ChangeSet => ({ revision: 0, changed: [lock], removed: [], resynced });
const OPTIONS: ObserveOptions = { hasLeases: false, hasRevisions: false, sampledTtls: true, lease: () => undefined };

describe('ShedLock runs', () => {
  test("a run's member key is the row's name at its locked_at; the lock is the row's either way", () => {
    const [first, second] = [run(0), run(30)];
    assert.equal(first.holder!.key.toString(), 'nightly@2030-01-01 10:00:00');
    assert.equal(second.holder!.key.toString(), 'nightly@2030-01-01 10:00:30');
    assert.equal(first.id, second.id);
    assert.equal(first.holder!.lease, 'shedlock/nightly', 'its TTL is sampled under the row');
    assert.equal(rowNameOf(layout, second), 'nightly');
    assert.equal(rowNameOf({ ...layout, label: 'other' }, second), undefined);
  });

  test('a new run by the same locked_by, read without a free read between, is a new hold: a new age, a hold ended and one started', () => {
    const clock = new LockClock();
    const events = new LockEvents('pg');
    clock.observe(changed(run(0)), 1_000);
    events.observe(changed(run(0)), OPTIONS, 1_000);
    clock.observe(changed(run(0)), 15_000);
    assert.deepEqual(clock.heldSince(run(0)), { at: 1_000, exact: true }, 'the same run read again goes on');
    clock.observe(changed(run(30)), 31_000);
    const seen = events.observe(changed(run(30)), OPTIONS, 31_000).events.map((e) => [e.type, e.member.key, e.at]);
    assert.deepEqual(clock.heldSince(run(30)), { at: 31_000, exact: true });
    assert.deepEqual(seen, [
      ['holdEnded', 'nightly@2030-01-01 10:00:00', 31_000],
      ['holdStarted', 'nightly@2030-01-01 10:00:30', 31_000],
    ]);
    const [health] = lockHealth(run(30), clock, () => undefined, { longHoldMs: 25_000 }, 50_000);
    assert.deepEqual(health.troubles, [], 'held 19 s: no long hold at a threshold above one run');
  });

  test('the release is of the row named by the lock, guarded on the run shown', () => {
    const lock = run(30);
    const { sql, params } = releaseStatement('postgres', layout, rowNameOf(layout, lock)!, lock.holder!);
    assert.match(sql, /^UPDATE "public"."shedlock" SET "lock_until" = "locked_at" WHERE "name" = \? /);
    assert.deepEqual(params, ['nightly', 'nightly', 'scheduler-1', '2030-01-01 10:00:50']);
  });
});

describe('how a ShedLock run ends', () => {
  const sample = (ttl: number, at: number, grantedTtl = 60): LeaseInfo => ({
    id: 'shedlock/nightly',
    state: 'alive',
    grantedTtl,
    ttl,
    observedAt: at,
    firstSeenAt: 0,
    refreshes: [],
    stalled: false,
    keys: [],
  });
  const gone: ChangeSet = { revision: 0, changed: [], removed: [run(0).id], resynced: false };

  /** The run's hold events, the timeline's end of its bar, and its samples in turn, the row then read free at `freeAt`. */
  function ended(samples: readonly LeaseInfo[], freeAt: number): { events: string; timeline: string } {
    let last: LeaseInfo | undefined;
    const lease = () => last;
    const clock = new LockClock();
    const events = new LockEvents('db');
    const timeline = new TimelineReducer({ longHoldMs: 60_000, keepEndedMs: 600_000 });
    const source = (locks: LockState[]) => [{ connection: 'db', hasLeases: false, locks, lease, clock }];
    const options = { ...OPTIONS, lease };
    for (const [i, s] of samples.entries()) {
      last = s;
      if (i === 0) {
        clock.observe(changed(run(0)), s.observedAt);
        events.observe(changed(run(0)), options, s.observedAt);
      }
      events.observeLeases([s]);
      timeline.update(source([run(0)]), s.observedAt);
    }
    last = undefined;
    clock.observe(gone, freeAt);
    const [end] = events.observe(gone, options, freeAt).events;
    const diff = timeline.update(source([]), freeAt);
    return { events: end.type === 'holdEnded' ? String(end.how) : end.type, timeline: diff.ended.map((e) => e.end).join() };
  }

  test('unlocked before lockAtMostFor (lock_until moved back to lockAtLeastFor), it is released when that passes', () => {
    assert.deepEqual(ended([sample(59, 1000), sample(1.5, 3000, 3.5)], 4600), { events: 'released', timeline: 'released' });
  });

  test('lock_until never moved (a job still running at lockAtMostFor, or lockAtLeastFor as long): it ran out, expired', () => {
    assert.deepEqual(ended([sample(19, 1000, 20), sample(17, 3000, 20)], 20_200), { events: 'expired', timeline: 'expired' });
  });
});

describe("a row's writer's time zone", () => {
  test('ahead of the database at first sight: east of UTC, to the quarter hour', () => {
    assert.deepEqual(writerZone(-9 * 3600 + 2), { offset: -9 * 3600, note: '9.0 h ahead of' });
    assert.deepEqual(writerZone(-5.5 * 3600 + 40), { offset: -5.5 * 3600, note: '5.5 h ahead of' });
  });

  test('written since the last read yet long before it: west of UTC; an old row is no zone', () => {
    assert.deepEqual(writerZone(5 * 3600 + 1.5, 1), { offset: 5 * 3600, note: '5.0 h behind' });
    assert.equal(writerZone(5 * 3600 + 1.5), undefined, 'not seen being written: an old row');
  });

  test('clocks a few minutes apart are no zone', () => {
    assert.equal(writerZone(-14 * 60), undefined);
    assert.equal(writerZone(14 * 60 + 2, 2), undefined);
    assert.equal(writerZone(3, 2), undefined);
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { lockSeries, OTHER, type LockRow } from '../../src/cli/serve/lockSeries';

function row(name: string, o: Partial<LockRow> = {}): LockRow {
  return {
    connection: 'c',
    store: 'etcd',
    name,
    kind: 'queue',
    present: true,
    holders: 0,
    waiters: 0,
    holdSeconds: 0,
    waitSeconds: 0,
    ttlSeconds: null,
    stalled: false,
    neverExpires: false,
    counts: { acquisitions: 1, handoffs: 0, expiries: 0, ownerLosses: 0, forceReleases: 0 },
    lastActive: 0,
    ...o,
  };
}

const policy = { maxLocks: 2, drop: [], rewrite: [] };

describe('lock series', () => {
  test('at most maxLocks: locks with waiters first, then the oldest holds; the rest summed into __other__', () => {
    const { series, unlisted } = lockSeries(
      [
        row('free', { lastActive: 99 }),
        row('young', { holders: 1, holdSeconds: 5 }),
        row('old', { holders: 1, holdSeconds: 500, ttlSeconds: 3 }),
        row('queued', { holders: 1, holdSeconds: 1, waiters: 2, waitSeconds: 1 }),
      ],
      policy,
    );
    const byLock = new Map(series.map((s) => [s.lock, s]));
    assert.deepEqual([...byLock.keys()].sort(), [OTHER, 'old', 'queued']);
    const other = byLock.get(OTHER)!;
    assert.deepEqual([other.holders, other.holdSeconds, other.ttlSeconds, other.counts.acquisitions], [1, 5, null, 2], 'summed, ages the oldest');
    assert.equal(unlisted.get('c'), 2);
  });

  test('ties (held as long, found at the first read) go by name, whatever order the rows come in', () => {
    const held = (name: string, connection = 'c') => row(name, { connection, holders: 1, holdSeconds: 30 });
    const rows = [held('d'), held('b'), held('a', 'z'), held('c'), held('a')];
    for (const order of [rows, [...rows].reverse()]) {
      const { series } = lockSeries(order, policy);
      assert.deepEqual(
        series.filter((s) => s.lock !== OTHER).map((s) => `${s.connection}/${s.lock}`),
        ['c/a', 'z/a'],
      );
    }
  });

  test('dropped names are never shown; rewritten names alike share one series', () => {
    const { series, unlisted } = lockSeries(
      [
        row('secret/a', { holders: 1, holdSeconds: 9 }),
        row('tenant-1/jobs', { holders: 1, holdSeconds: 4, ttlSeconds: 8 }),
        row('tenant-2/jobs', { holders: 1, holdSeconds: 7, ttlSeconds: 2, stalled: true }),
      ],
      { maxLocks: 1, drop: [/^secret\//], rewrite: [{ match: /^tenant-[0-9]+\//g, replace: 'tenant-N/' }] },
    );
    assert.deepEqual(
      series.map((s) => [s.lock, s.holders, s.holdSeconds, s.ttlSeconds, s.stalled]).sort(),
      [
        [OTHER, 1, 9, null, false],
        ['tenant-N/jobs', 2, 7, 2, true],
      ],
    );
    assert.equal(unlisted.get('c'), 1, 'the dropped lock');
  });

  test('counters of locks gone stay in their series; retired ones count under __other__ whatever their name', () => {
    const counts = { acquisitions: 3, handoffs: 1, expiries: 1, ownerLosses: 1, forceReleases: 2 };
    const { series, unlisted } = lockSeries([row('gone', { present: false, counts, lastActive: 5 }), row('', { present: false, retired: true, counts })], policy);
    assert.deepEqual(series.map((s) => [s.lock, s.present, s.counts.acquisitions]).sort(), [
      [OTHER, false, 3],
      ['gone', false, 3],
    ]);
    assert.equal(unlisted.get('c'), undefined, 'no lock in the watch is left out');
  });

  test('summing into __other__ leaves the rows as they were: their counts go on being the locks\' own', () => {
    const rows = [row('a', { holders: 1, holdSeconds: 9 }), row('b', { holders: 1, holdSeconds: 5 }), row('c', { holders: 1, holdSeconds: 3 }), row('d', { holders: 1, holdSeconds: 1 })];
    const before = structuredClone(rows);
    const other = lockSeries(rows, policy).series.find((s) => s.lock === OTHER)!;
    assert.deepEqual([other.holders, other.holdSeconds, other.counts.acquisitions], [2, 3, 2]);
    assert.deepEqual(rows, before);
    assert.ok(rows.every((r) => r.counts !== other.counts));
  });

  test('the same name in two connections or of two kinds is two series', () => {
    const { series } = lockSeries([row('x'), row('x', { connection: 'd' }), row('x', { kind: 'single' })], { ...policy, maxLocks: 10 });
    assert.equal(series.length, 3);
  });
});

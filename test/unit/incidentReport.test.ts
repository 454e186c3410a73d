import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WaitForGraph } from '../../src/core/diagnosis/waitFor';
import { lockOf } from '../harness/waitLocks';
import type { Capabilities } from '../../src/core/backend';
import { LockModel } from '../../src/core/etcd/lockModel';
import type { KeyRecord } from '../../src/core/etcd/records';
import type { LockHistory } from '../../src/core/history';
import type { ObservedHold } from '../../src/core/holdObservation';
import { code, duration, incidentReport, type LockDiagnosis } from '../../src/core/incidentReport';
import { LockClock, lockHealth } from '../../src/core/lockHealth';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import type { LockFigures } from '../../src/core/lockFigures';

const CAPS: Capabilities = { waiters: true, fencingTokens: true, ttl: true, owner: 'lease', queuedAcquire: true, readWriteLocks: false };

function mutexKey(name: string, lease: string, create: number): KeyRecord {
  return { key: Buffer.from(`${name}/${lease}`), valuePreview: Buffer.alloc(0), valueSize: 0, createRevision: create, modRevision: create, version: 1, lease };
}

function lease(id: string, ttl: number, o: Partial<LeaseInfo> = {}): LeaseInfo {
  return { id, state: 'alive', grantedTtl: 10, ttl, observedAt: 100_000, firstSeenAt: 0, refreshes: [], stalled: false, keys: [], ...o };
}

const NAME = '/locks/pay|`ments`\n# <b>x</b>';

function report(overrides: { figures?: LockFigures; holds?: ObservedHold[]; history?: LockHistory; diagnosis?: LockDiagnosis } = {}): string {
  const model = new LockModel();
  const clock = new LockClock();
  model.reload(() => true, [mutexKey(NAME, '1a', 7), mutexKey(NAME, '2b', 9)], 9);
  clock.observe({ ...model.takeChanges(), resynced: true }, 40_000);
  const [lock] = model.locks();
  const leases = new Map([['1a', lease('1a', 3, { stalled: true })], ['2b', lease('2b', 9)]]);
  const health = lockHealth(lock, clock, (id) => leases.get(id), { longHoldMs: 300_000 }, 100_000);
  return incidentReport({ connection: 'prod', store: 'etcd', name: lock.name, live: { lock, health, owner: CAPS.owner }, holds: [], figures: undefined, history: undefined, now: 100_000, ...overrides });
}

describe('incident report', () => {
  test('the lock now: holder and waiters in queue order with tokens, ages, TTLs and troubles', () => {
    const text = report();
    const lines = text.split('\n');
    assert.equal(lines[0], '# Lock `` /locks/pay|`ments`⏎# <b>x</b> `` on `prod` (etcd)');
    const holder = lines.find((l) => l.startsWith('- **holder**'))!;
    assert.match(holder, /token 7 · held ≥ 1m 0s · TTL 3s of 10s · ⚠ TTL not being renewed/);
    assert.match(lines.find((l) => l.startsWith('- waiter #1'))!, /token 9 · waiting ≥ 1m 0s · TTL 9s of 10s$/);
    assert.ok(!text.includes('## Figures'), 'no figures before anything was recorded');
  });

  test('figures, recent holds newest first, and the replayed history with its compaction', () => {
    const figures: LockFigures = {
      since: 0,
      holds: 3,
      hold: { p50: 1500, p95: 4000, max: 4000, count: 2 },
      wait: null,
      handoffsPerMinute: 2,
      transitions: 2,
      longestHold: { ms: 4000, who: '1a' },
      longestWait: null,
      stalls: 1,
      ends: [{ end: 'released', count: 1 }, { end: 'forceReleased', count: 1 }],
    };
    const hold = (owner: string, acquiredAt: number, endedAt: number | null): ObservedHold => ({
      key: `${NAME}/${owner}`, owner, lease: owner, token: 7, acquiredAt, acquiredExact: true, acquiredRevision: 7, waitedMs: 250, endedAt, endedExact: true, endedRevision: null, end: endedAt ? 'released' : null, stalled: false,
    });
    const history: LockHistory = {
      name: Buffer.from(NAME), lockId: 'x', fromRevision: 5, toRevision: 12, compactedAt: 5, skippedBefore: null, endedOnSilence: false, events: 9,
      holds: [{ key: Buffer.from(`${NAME}/0f`), lease: '0f', owner: '0f', token: 3, acquiredRevision: 5, beforeHistory: true, endedRevision: 7, end: 'revokedOrExpired', waiters: [Buffer.from(`${NAME}/1a`)], waiterCount: 1 }],
    };
    const text = report({ figures, holds: [hold('0f', 10_000, 60_000), hold('1a', 60_000, null)], history });
    assert.match(text, /\| hold \| 1\.5s \| 4\.0s \| 4\.0s \| 2 \|/);
    assert.match(text, /\| wait \| – \| – \| – \| 0 \|/);
    assert.match(text, /- Longest hold: 4\.0s by `1a`/);
    assert.match(text, /- How the last 50 holds at most ended: released 1, force-released from this window \(see its audit log\) 1/);
    const recent = text.split('## Recent holds')[1].split('## Replayed')[0].split('\n').filter((l) => l.startsWith('| `'));
    assert.deepEqual(recent.map((l) => l.split(' | ')[0]), ['| `1a`', '| `0f`'], 'newest first');
    assert.match(recent[1], /\| 50s \| released \| 7 \| 250 ms \|$/);
    assert.match(text, /## Replayed from the store's history \(revisions 5 to 12\)\n\nHistory before revision 5 was compacted/);
    // The key's pipe is escaped inside the table cell, so the row keeps its seven cells.
    const row = text.split('\n').find((l) => l.includes('before 5'))!;
    assert.equal(row.split(/(?<!\\)\|/).length - 2, 7, row);
  });

  test('a lock not in the store now (free): the report says so, and still has what was recorded', () => {
    const text = incidentReport({ connection: 'prod', store: 'etcd', name: Buffer.from('/locks/gone'), holds: [], figures: undefined, history: undefined, now: 0 });
    assert.match(text, /^# Lock `\/locks\/gone` on `prod` \(etcd\)\n/);
    assert.match(text, /## Now\n\nNot in the store now: free, nobody waiting/);
  });

  test('code spans: fenced past the longest run of backticks, padded where they touch, one line', () => {
    assert.equal(code('plain'), '`plain`');
    assert.equal(code('a`b'), '`` a`b ``');
    assert.equal(code('``x'), '``` ``x ```');
    assert.equal(code('a\nb|c', true), '`a⏎b\\|c`');
    assert.equal(code(' lead'), '`  lead `');
  });

  test('durations: ms, seconds, minutes, hours', () => {
    assert.deepEqual([duration(7.4), duration(1500), duration(42_000), duration(125_000), duration(3_725_000)], ['7 ms', '1.5s', '42s', '2m 5s', '1h 2m']);
  });

  test('a Diagnosis section: the deadlock with what breaking each hold frees, the inversion with both sightings, the TTL fit', () => {
    const graph = new WaitForGraph();
    graph.replace([lockOf('/locks/a', 's1', ['s2']), lockOf('/locks/b', 's2', ['s1'])]);
    const [cycle] = graph.cycles();
    const a = { id: 'a', name: '/locks/a' };
    const b = { id: 'b', name: '/locks/b' };
    const inversion = { id: 'ab', locks: [a, b] as const, first: { owner: 'p', held: a, waitedFor: b, at: 0 }, second: { owner: 'q', held: b, waitedFor: a, at: 1000 } };
    const text = report({ diagnosis: { deadlocks: [cycle], inversions: [inversion], ttlFit: undefined } });
    assert.match(text, /## Diagnosis/);
    assert.match(text, /\*\*Deadlock\*\* \(confirmed by two synced reads\): `s1` holds `\/locks\/a` and waits for `\/locks\/b`; `s2` holds `\/locks\/b` and waits for `\/locks\/a`/);
    assert.match(text, /to break it: force-releasing s1's hold on \/locks\/a lets s2 take \/locks\/a/);
    assert.match(text, /`p` held `\/locks\/a` when it began waiting for `\/locks\/b` at 1970-01-01T00:00:00.000Z; `q` held `\/locks\/b`/);
    assert.doesNotMatch(report(), /## Diagnosis/);
  });
});

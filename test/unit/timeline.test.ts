import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { lockId } from '../../src/core/etcd/lockModel';
import type { LockHistory } from '../../src/core/history';
import { MAX_PAST_HOLDS, TimelineReducer, pastMessage, rowId } from '../../src/core/timeline';
import { applyDiff, isHostMessage, isTimelineRow, isWebviewMessage } from '../../src/protocol/timeline';
import { compareRows, type TimelineDiff, type TimelineRow } from '../../src/shared/timelineData';
import { mulberry32 } from '../harness/random';
import { Fixture, HOUR, LONG_HOLD, T0, mutexKey, singleKey } from './timelineFixture';

const byKey = (rows: readonly TimelineRow[], key: string) => {
  const row = rows.find((r) => r.key === key);
  assert.ok(row, `a row for ${key} among ${rows.map((r) => r.key).join(', ')}`);
  return row;
};

describe('timelineRows', () => {
  test('one row per member, grouped by lock and ordered by create revision, with role, position and lease', () => {
    const f = new Fixture();
    f.put(mutexKey('/locks/b', 'b3', 30), mutexKey('/locks/a', 'a2', 21), mutexKey('/locks/a', 'a1', 20), mutexKey('/locks/a', 'a3', 25));
    f.sample('a1', 55);
    const rows = f.rows();
    assert.deepEqual(
      rows.map((r) => [r.lockName, r.key, r.role, r.position, r.token]),
      [
        ['/locks/a', '/locks/a/a1', 'holder', 0, 20],
        ['/locks/a', '/locks/a/a2', 'waiter', 1, 21],
        ['/locks/a', '/locks/a/a3', 'waiter', 2, 25],
        ['/locks/b', '/locks/b/b3', 'holder', 0, 30],
      ],
    );
    assert.deepEqual([...rows].sort(compareRows), rows, 'the protocol orders rows the same way');
    const holder = rows[0];
    assert.equal(holder.lease, 'a1');
    assert.equal(holder.leaseState, 'alive');
    assert.equal(holder.ttl, 55);
    assert.equal(holder.grantedTtl, 60);
    assert.equal(holder.observedAt, T0);
    assert.equal(holder.heldSince, T0);
    assert.equal(holder.firstSeenAt, T0);
    assert.equal(holder.lock, lockId(Buffer.from('/locks/a'), 'go-mutex'));
    assert.equal(rows[1].heldSince, undefined, 'a waiter has no hold time');
    assert.equal(rows[1].leaseState, undefined, 'no sample yet: no TTL');
    assert.ok(rows.every(isTimelineRow));
  });

  test('election and single-key roles', () => {
    const f = new Fixture();
    f.put(mutexKey('leader', 'e1', 10, 'node-1'), mutexKey('leader', 'e2', 11, 'node-2'), singleKey('/locks/mylock', 'f1', 12));
    const rows = f.rows();
    assert.deepEqual(rows.map((r) => [r.key, r.kind, r.role]), [
      ['/locks/mylock', 'single', 'single'],
      ['leader/e1', 'election', 'leader'],
      ['leader/e2', 'election', 'candidate'],
    ]);
  });

  test('text from etcd is carried as text, and a non-UTF-8 name is escaped, not merged', () => {
    const f = new Fixture();
    const hostile = '/locks/<img src=x onerror=window.__pwned=1><script>alert(1)</script>';
    f.put(mutexKey(hostile, 'aa', 5), mutexKey(Buffer.from([0x2f, 0x6c, 0xff]), 'bb', 6), mutexKey(Buffer.from([0x2f, 0x6c, 0xfe]), 'cc', 7));
    const rows = f.rows();
    assert.equal(byKey(rows, `${hostile}/aa`).lockName, hostile);
    assert.deepEqual(rows.filter((r) => r.lease !== 'aa').map((r) => r.lockName), ['/l\\xfe', '/l\\xff']);
    assert.notEqual(rows[0].lock, rows[1].lock);
  });

  test('stalled and long holds are flagged', () => {
    const f = new Fixture();
    f.put(mutexKey('jobs', 'a1', 10), mutexKey('jobs', 'a2', 11));
    f.sample('a1', 60);
    f.now += LONG_HOLD + 1000;
    f.sample('a1', 20); // no keepalive for a while: below half the granted TTL
    const rows = f.rows();
    assert.equal(rows[0].stalled, true);
    assert.equal(rows[0].longHold, true);
    assert.equal(rows[1].longHold, false, 'waiters never hold long');
  });

  test('row ids differ by connection, lock, key and lease', () => {
    const a = rowId('c', 'jobs', Buffer.from('jobs/1'), '1');
    assert.notEqual(a, rowId('c2', 'jobs', Buffer.from('jobs/1'), '1'));
    assert.notEqual(a, rowId('c', 'jobs', Buffer.from('jobs/1'), '2'));
    assert.notEqual(rowId('a","b', 'c', Buffer.from('k'), ''), rowId('a', 'b","c', Buffer.from('k'), ''));
  });
});

describe('TimelineReducer', () => {
  const reducer = () => new TimelineReducer({ longHoldMs: LONG_HOLD, keepEndedMs: HOUR });

  test('the first update sends every row; an unchanged picture sends nothing', () => {
    const f = new Fixture();
    f.put(mutexKey('jobs', 'a1', 10), mutexKey('jobs', 'a2', 11));
    const r = reducer();
    const first = r.update([f.source()], f.now);
    assert.equal(first.upserts.length, 2);
    assert.deepEqual(r.update([f.source()], f.now + 100), { upserts: [], ended: [], removed: [] });
  });

  test('refresh detection: a sweep that only confirms the countdown sends nothing; a keepalive sends the row with its mark', () => {
    const f = new Fixture();
    f.put(mutexKey('jobs', 'a1', 10));
    f.sample('a1', 60);
    const r = reducer();
    r.update([f.source()], f.now);

    f.now += 2000;
    f.sample('a1', 58);
    assert.equal(r.update([f.source()], f.now).upserts.length, 0, 'counted down as expected');
    f.now += 2000;
    f.sample('a1', 55); // whole seconds: one second of slack
    assert.equal(r.update([f.source()], f.now).upserts.length, 0, 'within a second of the countdown');

    f.now += 2000;
    f.sample('a1', 60); // keepalive
    const d = r.update([f.source()], f.now);
    assert.equal(d.upserts.length, 1);
    assert.deepEqual(d.upserts[0].refreshes, [f.now]);
    assert.equal(d.upserts[0].ttl, 60);
    assert.equal(d.upserts[0].observedAt, f.now);

    f.now += 10_000;
    f.sample('a1', 45); // 5 s less than the countdown: not a refresh, but the sent countdown is wrong now
    const drift = r.update([f.source()], f.now);
    assert.equal(drift.upserts.length, 1);
    assert.equal(drift.upserts[0].ttl, 45);
    assert.deepEqual(drift.upserts[0].refreshes, r.row(drift.upserts[0].id)!.refreshes);
  });

  test('a waiter that becomes the holder is one row that changes role and gains a hold time', () => {
    const f = new Fixture();
    f.put(mutexKey('jobs', 'a1', 10), mutexKey('jobs', 'a2', 11));
    const r = reducer();
    r.update([f.source()], f.now);
    f.now += 5000;
    f.sample('a1', -1);
    f.delete('jobs/a1');
    const d = r.update([f.source()], f.now);
    assert.deepEqual(d.upserts.map((u) => [u.key, u.role, u.position, u.heldSince, u.firstSeenAt]), [['jobs/a2', 'holder', 0, f.now, T0]]);
    assert.deepEqual(d.ended, [{ id: rowId('test', lockId(Buffer.from('jobs'), 'go-mutex'), Buffer.from('jobs/a1'), 'a1'), endedAt: f.now, end: 'revokedOrExpired' }]);
  });

  test('how a bar ended: no lease or time left → released; TTL run out → expired; lease never sampled → unknown until settled', () => {
    const f = new Fixture();
    f.put(singleKey('/locks/nolease', '', 5), mutexKey('jobs', 'a1', 10), mutexKey('jobs', 'a2', 11), mutexKey('other', 'b1', 12), mutexKey('other', 'c1', 13));
    f.sample('a1', 60);
    f.sample('a2', 60);
    f.sample('b1', 3, 10);
    const r = reducer();
    r.update([f.source()], f.now);
    f.now += 4000; // b1's 3 s have run out
    f.delete('/locks/nolease', 'jobs/a1', 'other/b1', 'other/c1');
    const d = r.update([f.source()], f.now);
    const ends = Object.fromEntries(d.ended.map((e) => [r.row(e.id)!.key, e.end]));
    assert.deepEqual(ends, { '/locks/nolease': 'released', 'jobs/a1': 'released', 'other/b1': 'expired', 'other/c1': 'unknown' });
    assert.deepEqual(r.unsettled().map((x) => x.key), ['other/c1']);

    const id = r.unsettled()[0].id;
    r.settle(id, 'released');
    const settled = r.update([f.source()], f.now + 100);
    assert.deepEqual(settled, { upserts: [], ended: [{ id, endedAt: f.now, end: 'released' }], removed: [] });
    assert.deepEqual(r.unsettled(), []);
  });

  test('a bar whose member LockLens itself ended (Force Release, Revoke Lease) ends force-released', () => {
    const f = new Fixture();
    f.put(mutexKey('jobs', 'a1', 10), mutexKey('jobs', 'a2', 11));
    f.sample('a1', 60);
    f.sample('a2', 60);
    const r = reducer();
    const source = () => ({ ...f.source(), ownEnd: (lease: string) => lease === 'a1' });
    r.update([source()], f.now);
    f.delete('jobs/a1', 'jobs/a2');
    const d = r.update([source()], f.now + 100);
    assert.deepEqual(Object.fromEntries(d.ended.map((e) => [r.row(e.id)!.key, e.end])), { 'jobs/a1': 'forceReleased', 'jobs/a2': 'released' });
  });

  test('ended bars are kept for the longest window, then removed; at most maxEnded are kept', () => {
    const f = new Fixture();
    f.put(mutexKey('jobs', 'a1', 10), mutexKey('jobs', 'a2', 11), mutexKey('jobs', 'a3', 12));
    const r = new TimelineReducer({ longHoldMs: LONG_HOLD, keepEndedMs: 60_000, maxEnded: 1 });
    r.update([f.source()], f.now);
    f.delete('jobs/a1');
    f.now += 1;
    f.delete('jobs/a2');
    const d = r.update([f.source()], f.now);
    assert.equal(d.ended.length, 1, 'the older of two ended bars is dropped at once (cap 1)');
    assert.equal(d.removed.length, 1);
    assert.equal(r.row(d.ended[0].id)!.key, 'jobs/a2');
    assert.deepEqual(r.update([f.source()], f.now + 60_000).removed, []);
    assert.deepEqual(r.update([f.source()], f.now + 60_001).removed, [d.ended[0].id]);
    assert.deepEqual(r.snapshot().map((x) => x.key), ['jobs/a3']);
  });

  test('a connection that goes away takes its rows with it (removed, not ended)', () => {
    const a = new Fixture('a');
    const b = new Fixture('b');
    a.put(mutexKey('jobs', 'a1', 10));
    b.put(mutexKey('jobs', 'a1', 10));
    const r = reducer();
    assert.equal(r.update([a.source(), b.source()], T0).upserts.length, 2);
    const d = r.update([a.source()], T0 + 1);
    assert.deepEqual(d.ended, []);
    assert.deepEqual(d.removed, [rowId('b', lockId(Buffer.from('jobs'), 'go-mutex'), Buffer.from('jobs/a1'), 'a1')]);
  });

  test('a key re-put with another lease is a new bar; the old one ends', () => {
    const f = new Fixture();
    f.put(singleKey('/locks/x', 'a1', 10));
    const r = reducer();
    r.update([f.source()], f.now);
    f.put({ ...singleKey('/locks/x', 'a2', 10), modRevision: 20 });
    const d = r.update([f.source()], f.now);
    assert.equal(d.upserts.length, 1);
    assert.equal(d.upserts[0].lease, 'a2');
    assert.equal(d.ended.length, 1);
    assert.equal(r.row(d.ended[0].id)!.lease, 'a1');
  });
});


/** What a webview would hold: every diff applied, in order, to a copy that went through JSON like a postMessage. */
function applied(view: Map<string, TimelineRow>, diff: TimelineDiff): void {
  const wire = JSON.parse(JSON.stringify({ type: 'diff', sentAt: 0, ...diff })) as unknown;
  assert.ok(isHostMessage(wire), 'every diff passes the webview guard');
  applyDiff(view, wire as TimelineDiff);
}

const sortedRows = (rows: Iterable<TimelineRow>) => JSON.parse(JSON.stringify([...rows].sort(compareRows))) as TimelineRow[];

describe('TimelineReducer property: applying the diffs to the previous snapshot gives the new one', () => {
  const NAMES = ['jobs', 'a', 'a/b', '/locks/<b>x</b>', 'leader'];
  const LEASES = ['1a', '2b', '3c', '4d', '5e', '694d7a1b2c3d4e5f'];

  for (const seed of [1, 2, 3, 42, 0xdeadbeef, Number(process.env.LOCKLENS_SEED ?? 7)]) {
    test(`seed ${seed}: 300 random steps on two connections`, () => {
      const rnd = mulberry32(seed);
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
      const conns = [new Fixture('one'), new Fixture('two')];
      const shown = new Set(['one', 'two']);
      const r = new TimelineReducer({ longHoldMs: 20_000, keepEndedMs: 30_000, maxEnded: 8 });
      const view = new Map<string, TimelineRow>();
      let revision = 100;
      for (let step = 0; step < 300; step++) {
        const f = pick(conns);
        const now = conns[0].now + Math.floor(rnd() * 3000);
        for (const c of conns) c.now = now;
        const op = rnd();
        const members = f.model.locks().flatMap((l) => (l.holder ? [l.holder, ...l.waiters] : [...l.waiters]));
        if (op < 0.3) {
          const name = pick(NAMES);
          const lease = pick(LEASES);
          f.put(rnd() < 0.2 ? singleKey(`/single/${lease}`, rnd() < 0.2 ? '' : lease, ++revision) : mutexKey(name, lease, ++revision, name === 'leader' ? 'p' : ''));
        } else if (op < 0.5 && members.length) {
          f.delete(pick(members).key);
        } else if (op < 0.8) {
          // a sweep: every lease counts down, some were kept alive, some expired
          for (const m of members) {
            if (!m.lease) continue;
            const info = f.leases.get(m.lease);
            const x = rnd();
            const ttl = x < 0.05 ? -1 : x < 0.35 || !info || info.state === 'expired' ? 60 : Math.max(0, Math.round(info.ttl - (now - info.observedAt) / 1000) - (x < 0.45 ? 5 : 0));
            f.sample(m.lease, ttl);
          }
        } else if (op < 0.87) {
          const pending = r.unsettled();
          if (pending.length) r.settle(pick(pending).id, rnd() < 0.5 ? 'released' : 'revokedOrExpired');
        } else if (op < 0.9) {
          // a connection disconnects or comes back
          const name = pick(conns).connection;
          if (shown.has(name)) shown.delete(name);
          else shown.add(name);
        }
        if (rnd() < 0.6 || step === 299) {
          const before = sortedRows(view.values());
          const diff = r.update(conns.filter((c) => shown.has(c.connection)).map((c) => c.source()), now);
          const ids = [...diff.upserts.map((u) => u.id), ...diff.removed];
          assert.equal(new Set(ids).size, ids.length, `seed ${seed} step ${step}: a row is upserted or removed once per diff`);
          applied(view, diff);
          assert.deepEqual(sortedRows(view.values()), sortedRows(r.snapshot()), `seed ${seed} step ${step}: diff applied to the previous snapshot`);
          if (diff.upserts.length + diff.ended.length + diff.removed.length === 0) assert.deepEqual(sortedRows(view.values()), before);

          // The live rows are the fresh picture, except for a countdown kept within a second and an earlier first sighting.
          const fresh = conns.filter((c) => shown.has(c.connection)).flatMap((c) => c.rows(20_000));
          const live = r.snapshot().filter((x) => x.endedAt === undefined);
          assert.deepEqual(live.map((x) => x.id), fresh.sort(compareRows).map((x) => x.id), `seed ${seed} step ${step}: live rows`);
          for (const [i, x] of live.entries()) {
            const y = fresh[i];
            assert.deepEqual({ ...x, ttl: 0, observedAt: 0, firstSeenAt: 0, firstSeenExact: true }, { ...y, ttl: 0, observedAt: 0, firstSeenAt: 0, firstSeenExact: true });
            if (x.ttl !== undefined && y.ttl !== undefined) {
              assert.ok(Math.abs(x.ttl - (y.observedAt! - x.observedAt!) / 1000 - y.ttl) <= 1, `seed ${seed} step ${step}: countdown within a second`);
            }
          }
          assert.ok(r.snapshot().filter((x) => x.endedAt !== undefined).length <= 8);
        }
      }
    });
  }
});

describe('2,000 leases', () => {
  test('2,000 leases in 200 locks: one row each; a quiet sweep sends nothing, 100 keepalives send 100 rows', () => {
    const f = new Fixture();
    let revision = 10;
    const leases: string[] = [];
    for (let lock = 0; lock < 200; lock++) {
      for (let i = 0; i < 10; i++) {
        const lease = (0x1000 + lock * 10 + i).toString(16);
        leases.push(lease);
        f.put(mutexKey(`/locks/job-${lock}`, lease, ++revision));
      }
    }
    for (const id of leases) f.sample(id, 60);
    const r = new TimelineReducer({ longHoldMs: LONG_HOLD, keepEndedMs: HOUR });
    const t0 = performance.now();
    const first = r.update([f.source()], f.now);
    const firstMs = performance.now() - t0;
    assert.equal(first.upserts.length, 2000);
    assert.equal(first.upserts.filter((x) => x.role === 'holder').length, 200);
    assert.ok(Buffer.byteLength(JSON.stringify(first)) < 2000 * 700, 'about half a kilobyte per row in the init');

    f.now += 2000;
    for (const id of leases) f.sample(id, 58);
    const t1 = performance.now();
    const quiet = r.update([f.source()], f.now);
    const quietMs = performance.now() - t1;
    assert.equal(quiet.upserts.length, 0);

    f.now += 2000;
    leases.forEach((id, i) => f.sample(id, i % 20 === 0 ? 60 : 56));
    const some = r.update([f.source()], f.now);
    assert.equal(some.upserts.length, 100);
    assert.ok(some.upserts.every((x) => x.refreshes.length === 1));

    f.delete(`/locks/job-7/${leases[70]}`);
    const one = r.update([f.source()], f.now);
    assert.equal(one.ended.length, 1);
    assert.equal(one.upserts.length, 9, "the lock's waiters move up one place");
    // Reported, not asserted: tests never assert speed (npm run bench measures it).
    console.log(`# 2,000 leases: first picture ${firstMs.toFixed(1)} ms, a quiet sweep ${quietMs.toFixed(1)} ms`);
  });
});

describe('protocol guards', () => {
  test('webview messages: only the known kinds with a row id', () => {
    assert.ok(isWebviewMessage({ type: 'ready' }));
    assert.ok(isWebviewMessage({ type: 'revoke', row: 'x' }));
    for (const bad of [null, 'ready', [], { type: 'revoke' }, { type: 'revoke', row: 5 }, { type: 'revoke', row: '' }, { type: 'eval', row: 'x' }, { type: '__proto__' }]) {
      assert.equal(isWebviewMessage(bad), false, JSON.stringify(bad));
    }
  });

  test('host messages: rows with a wrong field are refused', () => {
    const f = new Fixture();
    f.put(mutexKey('jobs', 'a1', 10));
    const [row] = f.rows();
    const diff = (upserts: unknown[]) => ({ type: 'diff', sentAt: 1, upserts, ended: [], removed: [] });
    assert.ok(isHostMessage(diff([row])));
    assert.equal(isHostMessage(diff([{ ...row, role: 'king' }])), false);
    assert.equal(isHostMessage(diff([{ ...row, lockName: { toString: 1 } }])), false);
    assert.equal(isHostMessage(diff([{ ...row, refreshes: ['1'] }])), false);
    assert.equal(isHostMessage({ type: 'init', sentAt: 1, rows: [row], config: { longHoldMs: 1, readOnly: false, windowsMs: [] }, strings: {} }), false);
  });
});

describe('the replayed past', () => {
  const history: LockHistory = {
    name: Buffer.from('/locks/<b>jobs</b>'),
    lockId: 'x',
    fromRevision: 40,
    toRevision: 90,
    compactedAt: 40,
    skippedBefore: null,
    endedOnSilence: false,
    events: 12,
    holds: [
      { key: Buffer.from('/locks/<b>jobs</b>/1a'), lease: '1a', owner: '1a', token: 31, acquiredRevision: 40, beforeHistory: true, endedRevision: 52, end: 'revokedOrExpired', waiters: [Buffer.from('/locks/<b>jobs</b>/2b')], waiterCount: 1 },
      { key: Buffer.from([0x2f, 0xff, 0x2f, 0x32]), lease: '2b', owner: '2b', token: 45, acquiredRevision: 52, beforeHistory: false, endedRevision: null, end: null, waiters: [], waiterCount: 0 },
    ],
  };

  test('pastMessage: keys as display text, waiters counted, and it passes the webview guard', () => {
    const message = pastMessage(history, 'local');
    assert.equal(message.lockName, '/locks/<b>jobs</b>');
    assert.deepEqual(message.holds.map((h) => [h.key, h.waiters, h.end, h.endedRevision]), [
      ['/locks/<b>jobs</b>/1a', 1, 'revokedOrExpired', 52],
      ['/\\xff/2', 0, null, null],
    ]);
    assert.ok(isHostMessage(JSON.parse(JSON.stringify(message))));
  });

  test('pastMessage sends the newest holds only, and counts the older ones', () => {
    const many: LockHistory = { ...history, holds: Array.from({ length: MAX_PAST_HOLDS + 7 }, (_, i) => ({ ...history.holds[0], acquiredRevision: i })) };
    const message = pastMessage(many, 'local');
    assert.equal(message.holds.length, MAX_PAST_HOLDS);
    assert.equal(message.older, 7);
    assert.equal(message.holds[0].acquiredRevision, 7, 'oldest first, from the eighth');
  });

  test('the guard refuses a past with a wrong field, and the webview may say it closed the past', () => {
    const message = pastMessage(history, 'local');
    assert.equal(isHostMessage({ ...message, compactedAt: '40' }), false);
    assert.equal(isHostMessage({ ...message, holds: [{ ...message.holds[0], end: 'stolen' }] }), false);
    assert.equal(isHostMessage({ ...message, holds: [{ ...message.holds[0], waiters: [] }] }), false);
    assert.ok(isWebviewMessage({ type: 'closePast' }));
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { lockId } from '../../src/core/etcd/lockModel';
import { holdEnd } from '../../src/core/history';
import { HoldReplay, type KeyChange, type ReplayHold } from '../../src/core/etcd/replay';
import type { KeyRecord } from '../../src/core/etcd/records';
import { mutexKey, rec } from '../harness/records';
import { mulberry32 } from '../harness/random';

const put = (r: KeyRecord): KeyChange => ({ put: r });
const del = (key: string): KeyChange => ({ delete: Buffer.from(key) });

/** The holds as `key token acquired→ended [waiters]` lines, compact enough to read a whole history at a glance. */
function summary(holds: readonly ReplayHold[]): string[] {
  return holds.map((h) => `${h.key} ${h.token} ${h.beforeHistory ? '≤' : ''}${h.acquiredRevision}→${h.endedRevision ?? '…'} [${h.waiters.join(',')}]`);
}

describe('HoldReplay: holds rebuilt from history', () => {
  test('a queue: each waiter holds from the revision its predecessor went, with the waiters of that moment', () => {
    const r = new HoldReplay(Buffer.from('jobs'), false);
    r.apply(2, [put(mutexKey('jobs', 'a1', 2))]);
    r.apply(3, [put(mutexKey('jobs', 'b2', 3))]);
    r.apply(4, [put(mutexKey('jobs', 'c3', 4))]);
    r.apply(5, [del('jobs/a1')]);
    r.apply(6, [del('jobs/b2')]);
    r.apply(7, [del('jobs/c3')]);
    assert.deepEqual(summary(r.holds()), ['jobs/a1 2 2→5 []', 'jobs/b2 3 5→6 [jobs/c3]', 'jobs/c3 4 6→7 []']);
    assert.deepEqual(r.holds().map((h) => h.waiterCount), [0, 1, 0]);
    assert.equal(r.events, 6);
    assert.equal(r.lockId, lockId(Buffer.from('jobs'), 'go-mutex'));
  });

  test('a waiter that leaves before its turn never holds; one still holding has no end', () => {
    const r = new HoldReplay(Buffer.from('jobs'), false);
    r.apply(10, [put(mutexKey('jobs', 'a1', 10))]);
    r.apply(11, [put(mutexKey('jobs', 'b2', 11))]);
    r.apply(12, [put(mutexKey('jobs', 'c3', 12))]);
    r.apply(13, [del('jobs/b2')]);
    r.apply(14, [del('jobs/a1')]);
    assert.deepEqual(summary(r.holds()), ['jobs/a1 10 10→14 []', 'jobs/c3 12 14→… []']);
  });

  test('a lease revoke deletes several keys at one revision: the next holder is decided after all of them', () => {
    // UUID-recipe keys, the holder and the first waiter on one lease.
    const [u1, u2, u3] = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003'];
    const r = new HoldReplay(Buffer.from('q'), false);
    r.apply(20, [put(rec(`q/${u1}`, { create: 20, lease: 'aa' }))]);
    r.apply(21, [put(rec(`q/${u2}`, { create: 21, lease: 'aa' }))]);
    r.apply(22, [put(rec(`q/${u3}`, { create: 22, lease: 'bb' }))]);
    r.apply(23, [del(`q/${u1}`), del(`q/${u2}`)]);
    assert.deepEqual(summary(r.holds()), [`q/${u1} 20 20→23 []`, `q/${u3} 22 23→… []`], 'the revoked waiter never held');
    assert.equal(r.holds()[1].lease, 'bb');
    assert.equal(r.holds()[1].owner, 'bb', 'the owner is the lease, as for a live member');
  });

  test('a free lock taken again holds from its new key; a put that only rewrites the holder does not split its hold', () => {
    const r = new HoldReplay(Buffer.from('jobs'), false);
    r.apply(3, [put(mutexKey('jobs', 'a1', 3))]);
    r.apply(4, [put(mutexKey('jobs', 'a1', 3, 4))]);
    r.apply(5, [del('jobs/a1')]);
    r.apply(9, [put(mutexKey('jobs', 'd4', 9))]);
    assert.deepEqual(summary(r.holds()), ['jobs/a1 3 3→5 []', 'jobs/d4 9 9→… []']);
  });

  test('a single key re-created is a new hold with a new token; the queue of the same name is another lock', () => {
    const r = new HoldReplay(Buffer.from('/locks/x'), true);
    r.apply(3, [put(rec('/locks/x', { create: 3, lease: 'aa', value: 'locked' }))]);
    r.apply(4, [put(mutexKey('/locks/x', 'bb', 4))]); // a queue member of `/locks/x`, not the single key
    r.apply(5, [del('/locks/x')]);
    r.apply(7, [put(rec('/locks/x', { create: 7, value: 'locked' }))]);
    assert.deepEqual(summary(r.holds()), ['/locks/x 3 3→5 []', '/locks/x 7 7→… []']);
    assert.equal(r.holds()[1].lease, '', 'no lease');
    assert.equal(r.lockId, lockId(Buffer.from('/locks/x'), 'single-key'));
  });

  test("the queue is Go's: a nested lock's key that came first holds it under its own key; the single key of its name is another lock", () => {
    // Go's Mutex on `jobs` reads the whole prefix `jobs/`: `jobs/b2` waits for `jobs/sub/a1`, a key of the lock below.
    const r = new HoldReplay(Buffer.from('jobs'), false);
    r.apply(2, [put(rec('jobs', { create: 2, value: 'x' }))]);
    r.apply(3, [put(mutexKey('jobs/sub', 'a1', 3))]);
    r.apply(4, [put(mutexKey('jobs', 'b2', 4))]);
    r.apply(5, [put(rec('jobs/config', { create: 5, value: 'anything' }))]);
    r.apply(6, [del('jobs/sub/a1')]);
    r.apply(7, [del('jobs/b2')]);
    r.apply(8, [del('jobs')]);
    assert.deepEqual(summary(r.holds()), ['jobs/sub/a1 3 3→6 []', 'jobs/b2 4 6→7 [jobs/config]', 'jobs/config 5 7→… []']);
    assert.equal(r.events, 7, 'every event of the range counts, this lock’s or not');
  });

  test('a thundering herd: each hold keeps the first 100 waiters and counts them all', () => {
    const r = new HoldReplay(Buffer.from('herd'), false);
    const n = 5000;
    const lease = (i: number) => (0x1000 + i).toString(16);
    for (let i = 0; i < n; i++) r.apply(2 + i, [put(mutexKey('herd', lease(i), 2 + i))]);
    for (let i = 0; i < n; i++) r.apply(2 + n + i, [del(`herd/${lease(i)}`)]);
    const holds = r.holds();
    assert.equal(holds.length, n);
    assert.equal(holds[0].waiterCount, 0, 'it took a free lock');
    assert.equal(holds[1].waiterCount, n - 2, 'everyone behind it waited');
    assert.equal(holds[1].waiters.length, 100);
    assert.deepEqual(holds[1].waiters.slice(0, 2).map(String), [`herd/${lease(2)}`, `herd/${lease(3)}`], 'in queue order');
    assert.equal(holds.at(-1)!.waiterCount, 0);
    holds.forEach((h, i) => assert.equal(h.key.toString(), `herd/${lease(i)}`, `hold ${i}`));
  });

  test('after compaction, the keys present at its revision hold from before history', () => {
    const r = new HoldReplay(Buffer.from('jobs'), false);
    r.begin([mutexKey('jobs', 'b2', 30), mutexKey('jobs', 'a1', 20)], 50);
    r.apply(55, [del('jobs/a1')]);
    assert.deepEqual(summary(r.holds()), ['jobs/a1 20 ≤50→55 [jobs/b2]', 'jobs/b2 30 55→… []']);
    assert.deepEqual(r.holds().map((h) => h.waiterCount), [1, 0]);
    assert.equal(r.events, 1, 'the keys read at the compaction revision are not events');
  });

  test('a key first seen with an older create revision than the holder takes over: Go orders by create revision', () => {
    const r = new HoldReplay(Buffer.from('jobs'), false);
    r.apply(10, [put(mutexKey('jobs', 'b2', 10))]);
    r.apply(11, [put(mutexKey('jobs', 'c3', 11))]);
    // Only where a read begins can a key come in older than the newest (its creation was not read).
    r.apply(12, [put(rec('jobs/a1', { create: 5, mod: 12, lease: 'a1' }))]);
    r.apply(13, [del('jobs/a1')]);
    assert.deepEqual(summary(r.holds()), ['jobs/b2 10 10→12 []', 'jobs/a1 5 12→13 [jobs/b2,jobs/c3]', 'jobs/b2 10 13→… [jobs/c3]']);
  });

  test('random queues, nested keys among them: the replayed holder at every revision is the lowest create revision under the prefix', () => {
    const seed = Number(process.env.LOCKLENS_SEED ?? 7);
    const random = mulberry32(seed);
    const r = new HoldReplay(Buffer.from('jobs'), false);
    const present = new Map<string, number>();
    const truth: (string | null)[] = [];
    let revision = 1;
    for (let i = 0; i < 3000; i++) {
      revision++;
      const changes: KeyChange[] = [];
      const keys = [...present.keys()];
      // Up to three changes at one revision (a txn or a revoke), never two on one key.
      const touched = new Set<string>();
      for (let k = 0; k < 1 + Math.floor(random() * 3); k++) {
        if (keys.length && random() < 0.5) {
          const key = keys[Math.floor(random() * keys.length)];
          if (touched.has(key)) continue;
          touched.add(key);
          changes.push(del(key));
          present.delete(key);
        } else {
          const lease = (0x100 + i * 4 + k).toString(16);
          // One in five is a nested lock's key, which Go's Mutex on `jobs` waits for as well.
          const name = random() < 0.2 ? 'jobs/sub' : 'jobs';
          touched.add(`${name}/${lease}`);
          changes.push(put(mutexKey(name, lease, revision)));
          present.set(`${name}/${lease}`, revision);
        }
      }
      r.apply(revision, changes);
      const lowest = [...present].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))[0];
      truth[revision] = lowest ? `${lowest[0]}@${lowest[1]}` : null;
    }
    const replayed: (string | null)[] = [];
    for (const h of r.holds()) for (let v = h.acquiredRevision; v < (h.endedRevision ?? revision + 1); v++) replayed[v] = `${h.key}@${h.token}`;
    for (let v = 2; v <= revision; v++) assert.equal(replayed[v] ?? null, truth[v], `revision ${v} (seed ${seed})`);
  });
});

describe('holdEnd: how a hold ended, from its lease now', () => {
  test('a key without a lease was deleted: released', () => {
    assert.equal(holdEnd('', undefined), 'released');
  });
  test('a lease still alive: its key was deleted on its own', () => {
    assert.equal(holdEnd('ab', true), 'released');
  });
  test('a lease gone: revoked, expired, or a session closed after unlocking', () => {
    assert.equal(holdEnd('ab', false), 'revokedOrExpired');
  });
  test('a lease not answered: nothing is said', () => {
    assert.equal(holdEnd('ab', undefined), null);
  });
});

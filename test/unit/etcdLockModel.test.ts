import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockModel, lockId } from '../../src/core/etcd/lockModel';
import { type LockState } from '../../src/core/lockState';
import { keyId } from '../../src/core/keys';
import type { KeyRecord } from '../../src/core/etcd/records';
import { mutexKey, rec } from '../harness/records';
import { mulberry32 } from '../harness/random';

const id = (name: string) => lockId(Buffer.from(name), 'go-mutex');
/** The id of a single-key lock: marked, so it cannot collide with a queue of the same name. */
const singleId = (name: string) => lockId(Buffer.from(name), 'single-key');
const keys = (members: readonly { key: Buffer }[]) => members.map((m) => m.key.toString('latin1'));
const holderKey = (s: LockState | undefined) => s?.holder?.key.toString('latin1');

describe('LockModel holder and waiters', () => {
  test('the holder is the member with the lowest create revision', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.put(mutexKey('jobs', 'a2', 11));
    const s = m.lock(id('jobs'))!;
    assert.equal(holderKey(s), 'jobs/a1');
    assert.deepEqual(keys(s.waiters), ['jobs/a2']);
    assert.equal(s.kind, 'queue');
  });

  test('waiters are ordered by create revision even when puts arrive out of order', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'c3', 30));
    m.put(mutexKey('jobs', 'c1', 10));
    m.put(mutexKey('jobs', 'c4', 40));
    m.put(mutexKey('jobs', 'c2', 20));
    const s = m.lock(id('jobs'))!;
    assert.equal(holderKey(s), 'jobs/c1');
    assert.deepEqual(keys(s.waiters), ['jobs/c2', 'jobs/c3', 'jobs/c4']);
  });

  test('members carry their convention', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    assert.equal(m.lock(id('jobs'))!.holder!.convention, 'go-mutex');
  });

  test('deleting the holder promotes the next waiter', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.put(mutexKey('jobs', 'a2', 11));
    m.put(mutexKey('jobs', 'a3', 12));
    m.delete(Buffer.from('jobs/a1'), 13);
    const s = m.lock(id('jobs'))!;
    assert.equal(holderKey(s), 'jobs/a2');
    assert.deepEqual(keys(s.waiters), ['jobs/a3']);
  });

  test('deleting a waiter keeps the holder and the other waiters in order', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.put(mutexKey('jobs', 'a2', 11));
    m.put(mutexKey('jobs', 'a3', 12));
    m.delete(Buffer.from('jobs/a2'), 13);
    const s = m.lock(id('jobs'))!;
    assert.equal(holderKey(s), 'jobs/a1');
    assert.deepEqual(keys(s.waiters), ['jobs/a3']);
  });

  test('a single key is a single lock with no waiters', () => {
    const m = new LockModel();
    m.put(rec('/locks/mylock', { create: 5, lease: 'abc', value: 'locked' }));
    const s = m.lock(singleId('/locks/mylock'))!;
    assert.equal(s.kind, 'single');
    assert.equal(holderKey(s), '/locks/mylock');
    assert.deepEqual(s.waiters, []);
  });

  test('an election with an empty-proposal leader and candidates is an election', () => {
    const m = new LockModel();
    m.put(rec('leader/a1', { create: 1, lease: 'a1' }));
    m.put(rec('leader/a2', { create: 2, lease: 'a2', value: 'node-2' }));
    assert.equal(m.lock(id('leader'))!.kind, 'election');
  });

  test('lock() of an unknown id is undefined', () => {
    assert.equal(new LockModel().lock(id('nope')), undefined);
  });
});

describe('LockModel puts and deletes', () => {
  test('a re-put of the same key (new mod revision) does not duplicate the member', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.put(mutexKey('jobs', 'a2', 11));
    m.put(mutexKey('jobs', 'a1', 10, 12));
    const s = m.lock(id('jobs'))!;
    assert.equal(holderKey(s), 'jobs/a1');
    assert.equal(s.holder!.modRevision, 12);
    assert.deepEqual(keys(s.waiters), ['jobs/a2']);
    assert.equal(m.keyCount, 2);
  });

  test('a re-put that changes the lease moves the key to the lock it now belongs to', () => {
    const m = new LockModel();
    m.put(rec('jobs/a1', { create: 10, lease: 'a1' })); // go-mutex in lock "jobs"
    m.put(rec('jobs/a1', { create: 10, mod: 11, lease: 'b2' })); // no longer matches: single key "jobs/a1"
    assert.equal(m.lock(id('jobs')), undefined);
    assert.equal(holderKey(m.lock(singleId('jobs/a1'))), 'jobs/a1');
    assert.equal(m.keyCount, 1);
    assert.equal(m.locks().length, 1);
  });

  test('deleting the last member removes the lock', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.takeChanges();
    m.delete(Buffer.from('jobs/a1'), 11);
    assert.equal(m.lock(id('jobs')), undefined);
    assert.deepEqual(m.locks(), []);
    assert.equal(m.keyCount, 0);
    const changes = m.takeChanges();
    assert.deepEqual(changes.removed, [id('jobs')]);
    assert.deepEqual(changes.changed, []);
  });

  test('deleting an unknown key changes nothing but advances the revision', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.takeChanges();
    m.delete(Buffer.from('other/key'), 20);
    assert.equal(m.hasChanges(), false);
    assert.equal(m.revision, 20);
    assert.equal(m.locks().length, 1);
  });

  test('revision is the highest revision applied, never going back', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10, 15));
    assert.equal(m.revision, 15);
    m.put(mutexKey('jobs', 'a2', 11));
    assert.equal(m.revision, 15);
    m.delete(Buffer.from('jobs/a2'), 16);
    assert.equal(m.revision, 16);
  });

  test('a lock state is immutable: a later put gives a new state object and leaves the old one as it was', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    const before = m.lock(id('jobs'))!;
    assert.equal(m.lock(id('jobs')), before); // cached while unchanged
    m.put(mutexKey('jobs', 'a2', 11));
    const after = m.lock(id('jobs'))!;
    assert.notEqual(after, before);
    assert.equal(before.waiters.length, 0);
    assert.equal(after.waiters.length, 1);
  });
});

describe('LockModel takeChanges', () => {
  test('a new model has no changes', () => {
    const m = new LockModel();
    assert.equal(m.hasChanges(), false);
    assert.deepEqual(m.takeChanges(), { revision: 0, changed: [], removed: [], resynced: false });
  });

  test('coalesces many puts into one change set with each touched lock once', () => {
    const m = new LockModel();
    for (let i = 0; i < 20; i++) m.put(mutexKey('jobs', `a${i}`, 100 + i));
    for (let i = 0; i < 5; i++) m.put(mutexKey('mail', `b${i}`, 200 + i));
    m.put(rec('/locks/x', { create: 300 }));
    assert.equal(m.hasChanges(), true);
    const changes = m.takeChanges();
    assert.deepEqual(changes.changed.map((c) => c.id).sort(), [singleId('/locks/x'), id('jobs'), id('mail')].sort());
    assert.deepEqual(changes.removed, []);
    assert.equal(changes.revision, 300);
    assert.equal(changes.resynced, false);
    assert.equal(changes.changed.find((c) => c.id === id('jobs'))!.waiters.length, 19);
  });

  test('drains: a second call right after reports nothing', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.takeChanges();
    assert.equal(m.hasChanges(), false);
    const again = m.takeChanges();
    assert.deepEqual(again.changed, []);
    assert.deepEqual(again.removed, []);
    assert.equal(again.revision, 10);
  });

  test('reports only the locks touched since the last call', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.put(mutexKey('mail', 'b1', 11));
    m.takeChanges();
    m.put(mutexKey('mail', 'b2', 12));
    assert.deepEqual(m.takeChanges().changed.map((c) => c.id), [id('mail')]);
  });

  test('a changed lock is reported with its current state', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.put(mutexKey('jobs', 'a2', 11));
    m.delete(Buffer.from('jobs/a1'), 12);
    const [state] = m.takeChanges().changed;
    assert.equal(holderKey(state), 'jobs/a2');
    assert.deepEqual(state.waiters, []);
  });

  test('a lock removed and re-created in the same batch is reported as changed, not removed', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.takeChanges();
    m.delete(Buffer.from('jobs/a1'), 11);
    m.put(mutexKey('jobs', 'a2', 12));
    const changes = m.takeChanges();
    assert.deepEqual(changes.removed, []);
    assert.deepEqual(changes.changed.map((c) => c.id), [id('jobs')]);
    assert.equal(holderKey(changes.changed[0]), 'jobs/a2');
  });

  test('a key that moves between locks reports both: the old one removed, the new one changed', () => {
    const m = new LockModel();
    m.put(rec('jobs/a1', { create: 10, lease: 'a1' }));
    m.takeChanges();
    m.put(rec('jobs/a1', { create: 10, mod: 11, lease: 'b2' }));
    const changes = m.takeChanges();
    assert.deepEqual(changes.removed, [id('jobs')]);
    assert.deepEqual(changes.changed.map((c) => c.id), [singleId('jobs/a1')]);
  });
});

describe('LockModel reload', () => {
  test('loads records into an empty model and marks the change set resynced', () => {
    const m = new LockModel();
    m.reload(() => true, [mutexKey('jobs', 'a2', 11), mutexKey('jobs', 'a1', 10)], 50);
    const changes = m.takeChanges();
    assert.equal(changes.resynced, true);
    assert.equal(changes.revision, 50);
    assert.deepEqual(changes.changed.map((c) => c.id), [id('jobs')]);
    assert.equal(holderKey(changes.changed[0]), 'jobs/a1');
  });

  test('removes owned keys that are gone, and reports their locks removed', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.put(mutexKey('mail', 'b1', 11));
    m.takeChanges();
    m.reload(() => true, [mutexKey('mail', 'b1', 11)], 20);
    const changes = m.takeChanges();
    assert.deepEqual(changes.removed, [id('jobs')]);
    assert.deepEqual(changes.changed, []);
    assert.deepEqual(m.locks().map((l) => l.id), [id('mail')]);
  });

  test('with an owns predicate, only removes keys it owns', () => {
    const m = new LockModel();
    m.put(mutexKey('a/jobs', 'a1', 10));
    m.put(mutexKey('b/jobs', 'b1', 11));
    m.takeChanges();
    const ownsA = (k: Buffer) => k.toString('latin1').startsWith('a/');
    m.reload(ownsA, [], 20);
    assert.deepEqual(m.locks().map((l) => l.id), [id('b/jobs')]);
    const changes = m.takeChanges();
    assert.deepEqual(changes.removed, [id('a/jobs')]);
    assert.deepEqual(changes.changed, []);
  });

  test('reports only locks that actually changed', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.put(mutexKey('mail', 'b1', 11));
    m.put(mutexKey('cron', 'c1', 12));
    m.takeChanges();
    m.reload(
      () => true,
      [
        mutexKey('jobs', 'a1', 10), // unchanged
        mutexKey('mail', 'b1', 11, 13), // re-put
        mutexKey('cron', 'c1', 12), // unchanged
        mutexKey('cron', 'c2', 14), // new waiter
      ],
      14,
    );
    const changes = m.takeChanges();
    assert.deepEqual(changes.changed.map((c) => c.id).sort(), [id('cron'), id('mail')]);
    assert.deepEqual(changes.removed, []);
    assert.equal(changes.resynced, true);
  });

  test('a reload that finds nothing new still reports resynced, with no locks changed', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.takeChanges();
    m.reload(() => true, [mutexKey('jobs', 'a1', 10)], 30);
    assert.equal(m.hasChanges(), true);
    const changes = m.takeChanges();
    assert.equal(changes.resynced, true);
    assert.deepEqual(changes.changed, []);
    assert.deepEqual(changes.removed, []);
    assert.equal(changes.revision, 30);
    assert.equal(m.takeChanges().resynced, false);
  });

  test('a reload keeps the same state object for an unchanged lock', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    const before = m.lock(id('jobs'));
    m.reload(() => true, [mutexKey('jobs', 'a1', 10)], 30);
    assert.equal(m.lock(id('jobs')), before);
  });

  test('a reload that removes the holder promotes the next waiter', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10));
    m.put(mutexKey('jobs', 'a2', 11));
    m.reload(() => true, [mutexKey('jobs', 'a2', 11)], 30);
    const s = m.lock(id('jobs'))!;
    assert.equal(holderKey(s), 'jobs/a2');
    assert.deepEqual(s.waiters, []);
  });

  test('a reload sets the revision of its read, even an older one (etcd restored or wiped)', () => {
    const m = new LockModel();
    m.put(mutexKey('jobs', 'a1', 10, 40));
    m.reload(() => true, [mutexKey('jobs', 'a1', 2, 2)], 3);
    assert.equal(m.revision, 3);
  });

  test('a single key and a queue of the same name stay two locks', () => {
    const m = new LockModel();
    m.put(rec('/locks/foo', { create: 5, lease: '1b' }));
    m.put(mutexKey('/locks/foo', '1a', 6));
    assert.equal(m.locks().length, 2);
    assert.equal(holderKey(m.lock(id('/locks/foo'))), '/locks/foo/1a');
    assert.equal(m.lock(id('/locks/foo'))!.kind, 'queue');
    assert.equal(holderKey(m.lock(singleId('/locks/foo'))), '/locks/foo');
  });
});

describe('LockModel locks()', () => {
  test('sorts locks by name in byte order, not locale order', () => {
    const m = new LockModel();
    const names = [Buffer.from('b'), Buffer.from('a/b'), Buffer.from([0xff, 0x61]), Buffer.from('a'), Buffer.from('B'), Buffer.from('a-')];
    names.forEach((name, i) => m.put(rec(name, { create: i + 1 })));
    const expected = [...names].sort(Buffer.compare).map((n) => n.toString('latin1'));
    assert.deepEqual(expected, ['B', 'a', 'a-', 'a/b', 'b', '\u00ffa']);
    assert.deepEqual(
      m.locks().map((l) => l.name.toString('latin1')),
      expected,
    );
  });

  test('two keys whose names differ only in invalid bytes stay separate locks', () => {
    const m = new LockModel();
    const n1 = Buffer.from([0x6a, 0xff]);
    const n2 = Buffer.from([0x6a, 0xfe]);
    assert.equal(n1.toString('utf8'), n2.toString('utf8')); // a lossy decode would merge them
    m.put(rec(Buffer.concat([n1, Buffer.from('/a1')]), { create: 1, lease: 'a1' }));
    m.put(rec(Buffer.concat([n2, Buffer.from('/a2')]), { create: 2, lease: 'a2' }));
    const locks = m.locks();
    assert.equal(locks.length, 2);
    assert.deepEqual(locks.map((l) => l.name), [n2, n1]);
    assert.deepEqual(locks.map((l) => l.id), [keyId(n2), keyId(n1)]);
    assert.equal(m.lock(keyId(n1))!.waiters.length, 0);
  });

  test('nested locks a and a/b stay separate', () => {
    const m = new LockModel();
    m.put(mutexKey('a', 'a1', 1));
    m.put(mutexKey('a/b', 'a2', 2));
    m.put(mutexKey('a', 'a3', 3));
    assert.deepEqual(
      m.locks().map((l) => [l.name.toString(), holderKey(l), keys(l.waiters)]),
      [
        ['a', 'a/a1', ['a/a3']],
        ['a/b', 'a/b/a2', []],
      ],
    );
  });
});


function summary(locks: readonly LockState[]) {
  return locks.map((l) => ({ id: l.id, kind: l.kind, holder: holderKey(l), waiters: keys(l.waiters) }));
}

describe('LockModel property: incremental updates equal a fresh reload', () => {
  const NAMES = [Buffer.from('jobs'), Buffer.from('a'), Buffer.from('a/b'), Buffer.from('/locks/a/'), Buffer.from([0x6a, 0xff]), Buffer.from([0x6a, 0xfe])];
  const LEASES = ['1a', '2b', '3c', '694d7a1b2c3d4e5f', ''];

  function randomKey(rnd: () => number): { key: Buffer; lease: string; value: string } {
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
    const name = pick(NAMES);
    const lease = pick(LEASES);
    const r = rnd();
    let segment: string;
    if (r < 0.5) segment = lease || '1a'; // Go mutex / election key, or a single key when the lease does not match
    else if (r < 0.65) segment = pick(['0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9', '11111111-2222-4333-8444-555555555555']);
    else if (r < 0.8) segment = lease ? BigInt('0x' + lease).toString(10) : '26'; // npm etcd3 election
    else segment = pick(['x', '', 'lock']);
    const key = r < 0.9 ? Buffer.concat([name, Buffer.from('/' + segment)]) : name;
    return { key, lease, value: rnd() < 0.3 ? 'proposal' : '' };
  }

  for (const seed of [1, 2, 3, 42, 0xdeadbeef]) {
    test(`seed ${seed}: 400 random puts and deletes, checked after every step`, () => {
      const rnd = mulberry32(seed);
      const model = new LockModel();
      const truth = new Map<string, KeyRecord>();
      // What a view would hold if it only ever applied takeChanges().
      const view = new Map<string, LockState>();
      let revision = 1;
      for (let step = 0; step < 400; step++) {
        revision++;
        const existing = [...truth.values()];
        const op = rnd();
        if (op < 0.3 && existing.length) {
          const victim = existing[Math.floor(rnd() * existing.length)];
          truth.delete(keyId(victim.key));
          model.delete(victim.key, revision);
        } else if (op < 0.4 && existing.length) {
          // lease revoke: every key of one lease deleted at one revision
          const lease = existing[Math.floor(rnd() * existing.length)].lease;
          for (const r of existing.filter((e) => e.lease === lease)) {
            truth.delete(keyId(r.key));
            model.delete(r.key, revision);
          }
        } else {
          const { key, lease, value } = randomKey(rnd);
          const prev = truth.get(keyId(key));
          const r = rec(key, { create: prev?.createRevision ?? revision, mod: revision, lease, value, version: (prev?.version ?? 0) + 1 });
          truth.set(keyId(key), r);
          model.put(r);
        }
        if (rnd() < 0.3 || step === 399) {
          const changes = model.takeChanges();
          for (const c of changes.changed) view.set(c.id, c);
          for (const gone of changes.removed) view.delete(gone);
        }
        if (step % 10 === 9 || step === 399) {
          const fresh = new LockModel();
          fresh.reload(() => true, truth.values(), revision);
          assert.deepEqual(summary(model.locks()), summary(fresh.locks()), `seed ${seed}, step ${step}`);
          assert.equal(model.keyCount, truth.size);
          assert.equal(model.revision, revision);
        }
      }
      const viewed = [...view.values()].sort((x, y) => Buffer.compare(x.name, y.name) || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
      assert.deepEqual(summary(viewed), summary(model.locks()), `seed ${seed}: view built from takeChanges`);
    });
  }

  test('seed 7: reloading the model itself from the truth after random steps reports no lock changed', () => {
    const rnd = mulberry32(7);
    const model = new LockModel();
    const truth = new Map<string, KeyRecord>();
    for (let revision = 2; revision < 302; revision++) {
      const existing = [...truth.values()];
      if (rnd() < 0.3 && existing.length) {
        const victim = existing[Math.floor(rnd() * existing.length)];
        truth.delete(keyId(victim.key));
        model.delete(victim.key, revision);
      } else {
        const { key, lease, value } = randomKey(rnd);
        const prev = truth.get(keyId(key));
        const r = rec(key, { create: prev?.createRevision ?? revision, mod: revision, lease, value });
        truth.set(keyId(key), r);
        model.put(r);
      }
    }
    model.takeChanges();
    model.reload(() => true, truth.values(), 302);
    const changes = model.takeChanges();
    assert.deepEqual(changes.changed, []);
    assert.deepEqual(changes.removed, []);
    assert.equal(changes.resynced, true);
  });
});

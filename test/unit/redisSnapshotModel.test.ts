import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SnapshotModel, mergeChangeSets, sameLock } from '../../src/core/snapshotModel';
import type { LockMember, LockState } from '../../src/core/lockState';
import { keyId } from '../../src/core/keys';
import { TtlTable } from '../../src/core/redis/ttlTable';

function member(owner: string, extra: Partial<LockMember> = {}): LockMember {
  return { key: Buffer.from(owner), convention: 'redis-token', owner, expiresWith: 'ttl', lease: 'l', token: null, holds: null, valuePreview: Buffer.from(owner), valueSize: owner.length, ...extra };
}
function lock(name: string, holder: string | null, waiters: string[] = []): LockState {
  const n = Buffer.from(name);
  return { id: keyId(n), name: n, kind: 'single', holder: holder === null ? null : member(holder), waiters: waiters.map((w) => member(w)) };
}

describe('SnapshotModel (polling stores coalesce like a watch)', () => {
  test('a first read emits everything; the same read again emits nothing', () => {
    const m = new SnapshotModel();
    const first = m.replaceAll([lock('b', 'x'), lock('a', 'y')]);
    assert.deepEqual(first?.changed.map((l) => l.name.toString()), ['a', 'b']);
    assert.equal(first?.resynced, true);
    assert.equal(m.replaceAll([lock('a', 'y'), lock('b', 'x')]), undefined);
    assert.deepEqual(m.locks().map((l) => l.name.toString()), ['a', 'b']);
  });

  test('locks() follows every change in name order, and a caller changing its copy changes nothing', () => {
    const m = new SnapshotModel();
    m.replaceAll([lock('b', 'x'), lock('c', 'x')]);
    const names = () => m.locks().map((l) => `${l.name.toString()}=${l.holder?.owner}`);
    assert.deepEqual(names(), ['b=x', 'c=x']);
    m.locks().splice(0);
    assert.deepEqual(names(), ['b=x', 'c=x']);
    m.replaceSome([keyId(Buffer.from('a'))], [lock('a', 'y')]);
    assert.deepEqual(names(), ['a=y', 'b=x', 'c=x']);
    m.replaceAll([lock('a', 'y'), lock('c', 'z')]);
    assert.deepEqual(names(), ['a=y', 'c=z']);
    m.clear();
    assert.deepEqual(names(), []);
  });

  test('only the locks that changed, and the ids removed', () => {
    const m = new SnapshotModel();
    m.replaceAll([lock('a', 'x'), lock('b', 'x'), lock('c', 'x')]);
    const set = m.replaceAll([lock('a', 'x'), lock('b', 'NEW'), lock('d', 'x')], false)!;
    assert.deepEqual(set.changed.map((l) => l.name.toString()), ['b', 'd']);
    assert.deepEqual(set.removed, [keyId(Buffer.from('c'))]);
    assert.equal(set.resynced, false);
    assert.ok(set.revision > 1);
  });

  test('compareAll finds what replaceAll would change, and the states it replaces, leaving the model as it was until commit', () => {
    const m = new SnapshotModel();
    m.replaceAll([lock('a', 'x'), lock('b', 'x'), lock('c', 'x')]);
    const diff = m.compareAll([lock('c', 'x'), lock('a', 'y')]);
    assert.deepEqual([diff.changed.map((l) => `${l.name}=${l.holder?.owner}`), diff.removed], [['a=y'], [keyId(Buffer.from('b'))]]);
    assert.deepEqual(m.replaced(diff).map((l) => `${l.name}=${l.holder?.owner}`), ['a=x', 'b=x']);
    assert.deepEqual(m.locks().map((l) => `${l.name}=${l.holder?.owner}`), ['a=x', 'b=x', 'c=x'], 'nothing taken yet');
    const set = m.commit(diff, false);
    assert.deepEqual([set?.changed.map((l) => l.name.toString()), set?.removed, set?.resynced], [['a'], [keyId(Buffer.from('b'))], false]);
    assert.deepEqual(m.locks().map((l) => `${l.name}=${l.holder?.owner}`), ['a=y', 'c=x']);
    assert.equal(m.commit(m.compareAll([lock('a', 'y'), lock('c', 'x')]), false), undefined, 'the same read again: nothing');
  });

  test('a partial read touches only what it read', () => {
    const m = new SnapshotModel();
    m.replaceAll([lock('a', 'x'), lock('b', 'x')]);
    const ids = ['a', 'z'].map((s) => keyId(Buffer.from(s)));
    assert.equal(m.replaceSome(ids, [lock('a', 'x')]), undefined, 'a unchanged, z never existed');
    const set = m.replaceSome([keyId(Buffer.from('a'))], [])!;
    assert.deepEqual(set.removed, [keyId(Buffer.from('a'))]);
    assert.equal(m.lock(keyId(Buffer.from('b')))?.holder?.owner, 'x', 'b untouched');
  });

  test('every visible field counts: waiter order, holds, deadlines, lease, preview, extra fields', () => {
    const base = lock('a', 'x', ['w1', 'w2']);
    const variants: LockState[] = [
      lock('a', 'x', ['w2', 'w1']),
      { ...base, holder: member('x', { holds: 2 }) },
      { ...base, holder: member('x', { lease: '' }) },
      { ...base, holder: member('x', { valuePreview: Buffer.from('y') }) },
      { ...base, waiters: [member('w1', { deadline: 5 }), member('w2')] },
      { ...base, holder: member('x', { quorum: { agree: 2, of: 3 } } as Partial<LockMember>) },
      { ...base, kind: 'queue' },
      { ...base, sharedWith: [] },
      { ...base, permits: { limit: 2, free: 1, holdersRecorded: true } },
    ];
    for (const v of variants) assert.ok(!sameLock(v, base) && !sameLock(base, v), JSON.stringify(v));
    assert.ok(sameLock(lock('a', 'x', ['w1', 'w2']), base));
  });

  test('merged change sets: each lock once, latest state wins, removal after change wins', () => {
    const a1 = lock('a', '1');
    const a2 = lock('a', '2');
    const merged = mergeChangeSets([
      { revision: 1, changed: [a1, lock('b', '1')], removed: [], resynced: false },
      { revision: 2, changed: [a2], removed: [keyId(Buffer.from('b'))], resynced: true },
    ])!;
    assert.deepEqual(merged.changed, [a2]);
    assert.deepEqual(merged.removed, [keyId(Buffer.from('b'))]);
    assert.equal(merged.revision, 2);
    assert.equal(merged.resynced, true);
    assert.equal(mergeChangeSets([]), undefined);
  });
});

describe('TtlTable (Redis PTTL as leases)', () => {
  const keys = [Buffer.from('k')];
  test('granted TTL: the highest seen since the last refresh; a jump up is a refresh', () => {
    const t = new TtlTable();
    const t0 = 1_000_000;
    let [info] = t.observe([{ id: 'k', ms: 20_000, keys }], t0);
    assert.equal(info.grantedTtl, 20);
    [info] = t.observe([{ id: 'k', ms: 18_000, keys }], t0 + 2000);
    assert.equal(info.grantedTtl, 20);
    assert.deepEqual(info.refreshes, []);
    // Redisson's watchdog renews a 30 s lease: back up to 30.
    [info] = t.observe([{ id: 'k', ms: 30_000, keys }], t0 + 4000);
    assert.equal(info.grantedTtl, 30);
    assert.deepEqual(info.refreshes, [t0 + 4000]);
    [info] = t.observe([{ id: 'k', ms: 29_000, keys }], t0 + 5000);
    assert.equal(info.grantedTtl, 30);
    [info] = t.observe([{ id: 'k', ms: 9_000, keys }], t0 + 25_000);
    assert.equal(info.stalled, true, 'nobody renews: below half');
    [info] = t.observe([{ id: 'k', ms: -2, keys }], t0 + 40_000);
    assert.equal(info.state, 'expired');
  });

  test('countedDown: the last sample counted down, while it is alive and has time left', () => {
    const t = new TtlTable();
    t.observe([{ id: 'k', ms: 5000, keys }, { id: 'gone', ms: -2, keys }], 1000);
    assert.equal(t.countedDown('k', 3000), 3000);
    assert.equal(t.countedDown('k', 6000), undefined, 'ran out: to be asked');
    assert.equal(t.countedDown('gone', 1000), undefined);
    assert.equal(t.countedDown('unknown', 1000), undefined);
  });

  test('retain forgets ids no member uses, reporting them expired once', () => {
    const t = new TtlTable();
    t.observe([{ id: 'a', ms: 5000, keys }, { id: 'b', ms: 5000, keys }], 0);
    const gone = t.retain(new Set(['a']), 100);
    assert.deepEqual(gone.map((g) => [g.id, g.state]), [['b', 'expired']]);
    assert.equal(t.get('b'), undefined);
    assert.ok(t.get('a'));
  });

  test('an expiry the server told of: marked once, whether the key was alive or a PTTL had found it gone first', () => {
    const t = new TtlTable();
    t.observe([{ id: 'a', ms: 5000, keys }, { id: 'b', ms: 5000, keys }], 0);
    t.observe([{ id: 'b', ms: -2, keys }], 5000);
    for (const id of ['a', 'b']) {
      const told = t.expire(id, 5000)!;
      assert.deepEqual([told.state, told.expiryTold], ['expired', true], id);
      assert.equal(t.expire(id, 5001), undefined, `${id}: told once`);
    }
    assert.equal(t.expire('unknown'), undefined);
  });
});

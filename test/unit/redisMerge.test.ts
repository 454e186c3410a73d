import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hasMajority } from '../../src/core/lockState';
import { mergeInstances, mergeNodes } from '../../src/core/redis/merge';
import { recognize, type KeyRecord } from '../../src/core/redis/recognize';

const b = (s: string) => Buffer.from(s);
const labels = ['a:1', 'b:2', 'c:3'];

/** What one instance's read recognises: token strings (value, PTTL) by key. */
function instance(keys: Record<string, [string, number]>) {
  const records: KeyRecord[] = Object.entries(keys).map(([k, [v, pttl]]) => ({ key: b(k), type: 'string', pttl, value: b(v), valueSize: v.length }));
  return recognize(records, new Map(), [b('p/')], 0);
}

describe('redlock merge of independent instances', () => {
  test('one token on all three: one holder on 3/3, TTL the lowest PTTL, sampled on all three with its token', () => {
    const merged = mergeInstances([instance({ 'p/x': ['tok', 30_000] }), instance({ 'p/x': ['tok', 10_000] }), instance({ 'p/x': ['tok', 20_000] })], labels);
    assert.equal(merged.locks.length, 1);
    const [lock] = merged.locks;
    assert.deepEqual(lock.holder?.quorum, { agree: 3, of: 3, instances: labels });
    assert.equal(lock.sharedWith, undefined);
    assert.ok(hasMajority(lock.holder!));
    const source = merged.ttls.get(lock.holder!.lease)!;
    assert.equal(source.ms, 10_000);
    assert.deepEqual(source.nodes, labels);
    assert.deepEqual(source.value, b('tok'));
  });

  test('on two of three, the third empty or unreachable: 2/3, a majority', () => {
    for (const third of [instance({}), undefined]) {
      const [lock] = mergeInstances([instance({ 'p/x': ['tok', 5000] }), third, instance({ 'p/x': ['tok', 5000] })], labels).locks;
      assert.deepEqual(lock.holder?.quorum, { agree: 2, of: 3, instances: ['a:1', 'c:3'] });
      assert.ok(hasMajority(lock.holder!));
    }
  });

  test('a split: the largest group holds, the others are further members, each with its quorum', () => {
    const [lock] = mergeInstances([instance({ 'p/x': ['one', 5000] }), instance({ 'p/x': ['two', 5000] }), instance({ 'p/x': ['two', 5000] })], labels).locks;
    assert.equal(lock.holder?.owner, 'two');
    assert.deepEqual(lock.holder?.quorum, { agree: 2, of: 3, instances: ['b:2', 'c:3'] });
    assert.deepEqual(lock.sharedWith?.map((m) => [m.owner, m.quorum?.agree, hasMajority(m)]), [['one', 1, false]]);
    assert.notEqual(lock.sharedWith![0].lease, lock.holder!.lease, 'two tokens of one key are sampled apart');
  });

  test('1/1/1: nobody has a majority; ties go to the instance configured first', () => {
    const [lock] = mergeInstances([instance({ 'p/x': ['one', 5000] }), instance({ 'p/x': ['two', 5000] }), instance({ 'p/x': ['three', 5000] })], labels).locks;
    assert.deepEqual([lock.holder!, ...lock.sharedWith!].map((m) => [m.owner, m.quorum?.agree, m.quorum?.of, hasMajority(m)]), [
      ['one', 1, 3, false],
      ['two', 1, 3, false],
      ['three', 1, 3, false],
    ]);
  });

  test('no expiry on one agreeing instance: the lowest of the others; none expiring: no lease', () => {
    let [lock] = mergeInstances([instance({ 'p/x': ['t', -1] }), instance({ 'p/x': ['t', 7000] }), instance({})], labels).locks;
    assert.deepEqual(mergeInstances([instance({ 'p/x': ['t', -1] }), instance({ 'p/x': ['t', 7000] }), instance({})], labels).ttls.get(lock.holder!.lease)?.ms, 7000);
    [lock] = mergeInstances([instance({ 'p/x': ['t', -1] }), instance({ 'p/x': ['t', -1] }), instance({})], labels).locks;
    assert.equal(lock.holder?.lease, '');
  });

  test("a cluster's masters are a union; each TTL remembers its master", () => {
    const merged = mergeNodes([instance({ 'p/x': ['t', 5000] }), instance({ 'p/y': ['u', 6000] })], ['m1', 'm2']);
    assert.deepEqual(merged.locks.map((l) => [l.name.toString(), l.holder?.quorum]), [['p/x', undefined], ['p/y', undefined]]);
    assert.deepEqual([...merged.ttls.values()].map((s) => s.nodes), [['m1'], ['m2']]);
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseLayout, layoutOfLock, layoutsInOrder, prefixOf, reasonText } from '../../src/core/freeNameLayout';
import { LockModel } from '../../src/core/etcd/lockModel';
import type { KeyRecord } from '../../src/core/etcd/records';
import type { LockMember, LockState } from '../../src/core/lockState';
import { LockStats } from '../../src/core/lockStats';
import { STORES } from '../../src/core/stores';
import type { FreeNameLayouts } from '../../src/core/storeLayouts';

const redis: FreeNameLayouts = STORES.redis.freeNameLayouts;
const zookeeper: FreeNameLayouts = STORES.zookeeper.freeNameLayouts;

function member(convention: string): LockMember {
  return { key: Buffer.from('m'), convention, owner: 'o', expiresWith: 'ttl', lease: 'l', token: null, holds: null, valuePreview: Buffer.alloc(0), valueSize: 0 };
}

function lock(name: string, ...conventions: string[]): LockState {
  const [holder, ...waiters] = conventions.map(member);
  return { id: name, name: Buffer.from(name), kind: 'queue', holder: holder ?? null, waiters };
}

const choose = (name: string, evidence: Omit<Parameters<typeof chooseLayout>[1], 'name' | 'separator'> = {}, layouts = redis, separator = ':') =>
  chooseLayout(layouts, { name: Buffer.from(name), separator, ...evidence });

describe('the layout of a free name', () => {
  test('nothing known: the store default, and why', () => {
    const choice = choose('lock:jobs:nightly');
    assert.equal(choice.layout.id, 'redisson');
    assert.deepEqual(choice.reason, { kind: 'default' });
    assert.match(reasonText(redis, choice.reason), /^the default: token clients .* wait on a Redisson lock, while Redisson clients fail with WRONGTYPE/);
    assert.equal(choose('/locks/job', {}, zookeeper, '/').layout.id, 'curator');
  });

  test('the siblings under the same prefix decide when they agree, counted in the reason', () => {
    const locks = [lock('lock:jobs:a', 'redis-token'), lock('lock:jobs:b', 'redis-token'), lock('lock:other:c', 'redisson-lock'), lock('lock:jobs:nightly:x', 'redis-token')];
    const choice = choose('lock:jobs:nightly', { locks });
    assert.equal(choice.layout.id, 'token');
    assert.deepEqual(choice.reason, { kind: 'siblings', count: 3, prefix: 'lock:jobs:' });
    assert.equal(reasonText(redis, choice.reason), 'the 3 other locks under lock:jobs: are in this layout');
    assert.equal(reasonText(redis, { kind: 'siblings', count: 1, prefix: 'lock:jobs:' }), 'the other lock under lock:jobs: is in this layout');
  });

  test('siblings that disagree, or whose layout is none of the listed ones, decide nothing', () => {
    assert.deepEqual(choose('lock:jobs:n', { locks: [lock('lock:jobs:a', 'redis-token'), lock('lock:jobs:b', 'redisson-lock')] }).reason, { kind: 'default' });
    assert.deepEqual(choose('lock:jobs:n', { locks: [lock('lock:jobs:a', 'shedlock')] }).reason, { kind: 'default' });
    // A lock whose members are of two layouts has none.
    assert.equal(layoutOfLock(redis, lock('lock:jobs:a', 'redisson-lock', 'redis-token')), undefined);
  });

  test('a name at the top has no siblings: every lock of the store is not a family', () => {
    assert.deepEqual(choose('nightly', { locks: [lock('other', 'redis-token'), lock('third', 'redis-token')] }).reason, { kind: 'default' });
    assert.equal(prefixOf(Buffer.from('nightly'), ':'), '');
    assert.equal(prefixOf(Buffer.from('/nightly'), '/'), '', 'the root is no family');
    assert.equal(prefixOf(Buffer.from('/locks/jobs/nightly'), '/'), '/locks/jobs/');
    // A trailing separator belongs to the name: its prefix is the one before.
    assert.equal(prefixOf(Buffer.from('/locks/jobs/'), '/'), '/locks/');
  });

  test('what LockLens saw on the name itself comes before the siblings: the newest hold in a listed layout', () => {
    const locks = [lock('lock:jobs:a', 'redis-token'), lock('lock:jobs:b', 'redis-token')];
    const seen = [
      { convention: 'redis-token', at: 1_000 },
      { convention: 'redisson-fair-lock', at: 5_000 },
      { convention: 'shedlock', at: 9_000 },
    ];
    const choice = choose('lock:jobs:nightly', { locks, seen });
    assert.equal(choice.layout.id, 'redisson-fair');
    assert.deepEqual(choice.reason, { kind: 'seen', at: 5_000 });
    assert.equal(reasonText(redis, choice.reason, 5_000 + 3 * 3600_000), 'LockLens saw this name held in this layout 3h 0m ago');
  });

  test('the user asked: that layout, whatever was seen; an unknown id names the ids', () => {
    const choice = choose('lock:jobs:nightly', { asked: 'token', seen: [{ convention: 'redisson-lock', at: 1 }] });
    assert.equal(choice.layout.id, 'token');
    assert.deepEqual(choice.reason, { kind: 'asked' });
    assert.throws(() => choose('lock:x', { asked: 'redlock' }), { code: 'INVALID_ARGUMENT', message: "unknown layout 'redlock': redisson, redisson-fair, redisson-rw, token (default redisson)" });
  });

  test("a mode takes the store's read/write layout where it has one (Redisson's); elsewhere the mode goes with any layout", () => {
    assert.equal(choose('lock:jobs:n', { mode: true, locks: [lock('lock:jobs:a', 'redis-token')] }).layout.id, 'redisson-rw');
    assert.equal(choose('/locks/n', { mode: true }, zookeeper, '/').layout.id, 'curator');
  });

  test('a pick offers the chosen layout first, then the store order', () => {
    const token = redis.layouts.find((l) => l.id === 'token')!;
    assert.deepEqual(layoutsInOrder(redis, token).map((l) => l.id), ['token', 'redisson', 'redisson-fair', 'redisson-rw']);
  });

  test("every store's default is one of its layouts, and every layout's conventions are the store's", () => {
    for (const store of Object.values(STORES)) {
      const { freeNameLayouts: layouts, conventions } = store;
      assert.ok(layouts.layouts.some((l) => l.id === layouts.defaultId), store.kind);
      for (const l of layouts.layouts) for (const c of l.conventions) assert.ok(Object.hasOwn(conventions, c), `${store.kind} ${l.id} ${c}`);
    }
  });

  test("the records give the holds seen on a name with their layouts: an etcd queue's and the single key of the same name, not a longer name's", () => {
    const key = (k: string, create: number): KeyRecord => ({ key: Buffer.from(k), valuePreview: Buffer.alloc(0), valueSize: 0, createRevision: create, modRevision: create, version: 1, lease: 'a1' });
    const model = new LockModel();
    const stats = new LockStats();
    const options = { hasLeases: true, hasRevisions: true, sampledTtls: true, lease: () => undefined };
    const step = (now: number, record: KeyRecord) => {
      model.put(record);
      stats.observe('c', model.takeChanges(), options, now);
    };
    step(1_000, key('/locks/job/a1', 1));
    step(2_000, key('/locks/job', 2));
    step(3_000, key('/locks/jobs/a1', 3));
    const seen = stats.holdsNamed('c', Buffer.from('/locks/job'));
    assert.deepEqual(seen.sort((a, b) => a.at - b.at), [
      { convention: 'go-mutex', at: 1_000 },
      { convention: 'single-key', at: 2_000 },
    ]);
    assert.deepEqual(stats.holdsNamed('other', Buffer.from('/locks/job')), []);
    assert.equal(chooseLayout(STORES.etcd.freeNameLayouts, { name: Buffer.from('/locks/job'), seen, separator: '/' }).layout.id, 'single-key');
  });
});

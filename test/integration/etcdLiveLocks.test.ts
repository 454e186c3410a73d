import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../harness/etcd';
import { etcdSuite } from '../harness/suite';
import type { LiveState } from '../../src/core/backend';
import { LiveLocks } from '../../src/core/etcd/liveLocks';
import { LockModel, type EtcdLockState } from '../../src/core/etcd/lockModel';
import type { ChangeSet } from '../../src/core/lockState';
import { readPrefixes } from '../../src/core/etcd/keyspace';
import { leaseDecimal } from '../../src/core/keys';
import type { EtcdConnection } from '../../src/core/etcd/connect';

/** A comparable picture of the locks: name, kind, holder and waiters with their revisions and leases. */
function picture(locks: readonly EtcdLockState[]) {
  const entry = (m: EtcdLockState['holder']) => m && `${m.key.toString('hex')}@${m.createRevision}/${m.modRevision}/${m.lease}`;
  return locks.map((l) => ({ name: l.name.toString('hex'), kind: l.kind, holder: entry(l.holder), waiters: l.waiters.map(entry) }));
}

/** What a fresh range GET of the same prefixes says. */
async function truth(conn: EtcdConnection, prefixes: Buffer[]) {
  const read = await readPrefixes(conn, prefixes);
  const model = new LockModel();
  model.reload(() => true, read.records, read.revision);
  return picture(model.locks());
}

/** mulberry32: a small seeded PRNG, so a failing sequence can be replayed from its seed. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('LiveLocks: the model stays equal to a fresh range GET', () => {
  const t = etcdSuite({ profile: { dialTimeoutMs: 3000 } });

  async function follow(prefixes: string[], options = {}) {
    const live = new LiveLocks(t.conn, prefixes.map((p) => Buffer.from(p)), options);
    t.scope.defer(() => live.dispose());
    await live.start();
    return live;
  }

  async function assertConverged(live: LiveLocks) {
    let last: { model: unknown; etcd: unknown } | undefined;
    try {
      await eventually(async () => {
        await live.sync();
        last = { model: picture(live.model.locks()), etcd: await truth(t.conn, [...live.prefixes]) };
        return JSON.stringify(last.model) === JSON.stringify(last.etcd);
      }, 15_000, 'model equal to a range GET');
    } catch (e) {
      if (!last) throw e;
      assert.deepEqual(last.model, last.etcd, `model at revision ${live.revision} differs from a range GET`);
    }
  }

  test('randomized puts, deletes, lease grants, revokes and multi-key txns (property test)', async () => {
    const seed = Number(process.env.LOCKLENS_SEED ?? Date.now() % 100_000);
    const random = prng(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)];
    const live = await follow(['prop/', 'single/']);
    const names = ['prop/a', 'prop/b', 'prop/a/b', 'prop/c'];
    const leases: string[] = [];
    const keys = new Set<string>();
    for (let step = 0; step < 250; step++) {
      const r = random();
      if (r < 0.15 || leases.length === 0) {
        const res = await t.conn.client.leaseClient.leaseGrant({ TTL: 60 });
        leases.push(BigInt(res.ID).toString(16));
      } else if (r < 0.55) {
        const lease = pick(leases);
        const style = random();
        const key = style < 0.6 ? `${pick(names)}/${lease}` : style < 0.8 ? `${pick(names)}/${crypto.randomUUID()}` : `single/${Math.floor(random() * 5)}`;
        await t.conn.client.kv.put({ key: Buffer.from(key), value: Buffer.from(random() < 0.2 ? 'proposal' : ''), lease: leaseDecimal(lease) });
        keys.add(key);
      } else if (r < 0.75 && keys.size) {
        const key = pick([...keys]);
        await t.conn.client.kv.deleteRange({ key: Buffer.from(key) });
        keys.delete(key);
      } else if (r < 0.85) {
        const lease = leases.splice(Math.floor(random() * leases.length), 1)[0];
        await t.conn.client.leaseClient.leaseRevoke({ ID: leaseDecimal(lease) });
        for (const k of [...keys]) if (k.endsWith(lease)) keys.delete(k);
      } else {
        const lease = pick(leases);
        const batch = Array.from({ length: 1 + Math.floor(random() * 8) }, () => `${pick(names)}/${crypto.randomUUID()}`);
        await t.conn.client.kv.txn({ success: batch.map((k) => ({ request_put: { key: Buffer.from(k), value: Buffer.alloc(0), lease: leaseDecimal(lease) } })) });
        batch.forEach((k) => keys.add(k));
      }
      if (step % 50 === 49) await assertConverged(live);
    }
    await assertConverged(live);
    assert.ok(live.model.locks().length > 0, `seed ${seed} produced locks`);
  });

  test('reconnects after an etcd restart and reconciles what changed meanwhile', async () => {
    const live = await follow(['restart/']);
    const states: LiveState[] = [];
    live.onDidChangeStatus((s) => states.push(s.state));
    await t.conn.client.put(`restart/a/${crypto.randomUUID()}`).value('');
    await assertConverged(live);
    await t.etcd.stop();
    await eventually(() => live.status.state === 'reconnecting', 15_000, 'reconnecting reported');
    await t.etcd.start();
    await t.conn.client.put(`restart/b/${crypto.randomUUID()}`).value('');
    await t.conn.client.delete().prefix('restart/a/');
    await eventually(() => live.status.state === 'live', 20_000, 'live again');
    await assertConverged(live);
    assert.ok(states.includes('reconnecting') && states.at(-1) === 'live', states.join(','));
    assert.deepEqual(live.model.locks().map((l) => l.name.toString()), ['restart/b']);
  });

  test('an etcd wiped and restarted empty: every lock disappears from the model', async () => {
    const live = await follow(['wipe/']);
    await t.conn.client.put('wipe/a').value('');
    await t.conn.client.put('wipe/b').value('');
    await assertConverged(live);
    assert.equal(live.model.locks().length, 2);
    await t.etcd.restart({ wipe: true });
    await eventually(() => live.model.locks().length === 0, 20_000, 'locks gone after wipe');
    await t.conn.client.put('wipe/c').value('');
    await assertConverged(live);
  });

  test('compaction past the watch start: the watch is cancelled and the model fully resyncs', async () => {
    const snapshot = await readPrefixes(t.conn, [Buffer.from('compact/')]);
    await t.conn.client.put('compact/a').value('');
    await t.conn.client.put('compact/b').value('');
    const del = await t.conn.client.delete().key('compact/a');
    await t.conn.client.kv.compact({ revision: Number(del.header.revision), physical: true });
    const logs: string[] = [];
    const live = new LiveLocks(t.conn, [Buffer.from('compact/')], { log: (m) => logs.push(m) });
    t.scope.defer(() => live.dispose());
    await live.start(snapshot);
    await eventually(() => logs.some((l) => l.includes('compaction')), 10_000, 'the compaction was noticed and logged');
    await assertConverged(live);
    assert.deepEqual(live.model.locks().map((l) => l.name.toString()), ['compact/b']);
  });

  test("a crashed holder's lease expires and its key leaves the model", async () => {
    const live = await follow(['expire/']);
    const lease = await t.conn.client.leaseClient.leaseGrant({ TTL: 2 });
    const hex = BigInt(lease.ID).toString(16);
    await t.conn.client.kv.put({ key: Buffer.from(`expire/job/${hex}`), value: Buffer.alloc(0), lease: lease.ID });
    await eventually(() => live.model.locks().length === 1);
    assert.equal(live.model.locks()[0].holder?.lease, hex);
    await eventually(() => live.model.locks().length === 0, 15_000, 'expired key removed');
  });

  test('a burst inside one transaction reaches views as one change set', async () => {
    const live = await follow(['burst/']);
    const sets: ChangeSet[] = [];
    live.onDidChange((c) => sets.push(c));
    const puts = Array.from({ length: 100 }, (_, i) => ({ request_put: { key: Buffer.from(`burst/l${i % 10}/${crypto.randomUUID()}`), value: Buffer.alloc(0) } }));
    await t.conn.client.kv.txn({ success: puts });
    await live.sync();
    assert.equal(sets.length, 1);
    assert.equal(sets[0].changed.length, 10, 'each touched lock once');
  });

  test('overlapping prefixes are watched once; the empty prefix watches everything', async () => {
    await t.conn.client.put('ov/x').value('');
    await t.conn.client.put('other/y').value('');
    const live = await follow(['ov/', 'ov/x/', '']);
    assert.deepEqual(live.prefixes.map(String), ['']);
    assert.ok(live.model.locks().some((l) => l.name.toString() === 'other/y'));
    await assertConverged(live);
  });

  test('with a namespace, only keys under it are seen, without the namespace', async () => {
    const nsConn = await t.scope.connect(t.etcd.endpoint, { namespace: 'tenant-b/' });
    const live = new LiveLocks(nsConn, [Buffer.from('jobs/')]);
    t.scope.defer(() => live.dispose());
    await live.start();
    await t.conn.client.put(`tenant-b/jobs/x/${crypto.randomUUID()}`).value('');
    await t.conn.client.put(`jobs/outside/${crypto.randomUUID()}`).value('');
    await eventually(async () => (await live.sync(), live.model.locks().length === 1), 10_000, 'namespaced lock seen');
    assert.deepEqual(live.model.locks().map((l) => l.name.toString()), ['jobs/x']);
  });

  test('keys with HTML, non-UTF-8 bytes and 10,000-byte names are kept exactly', async () => {
    const live = await follow(['odd/']);
    const html = Buffer.from('odd/<img src=x onerror=alert(1)>');
    const binary = Buffer.concat([Buffer.from('odd/'), Buffer.from([0xff, 0x00, 0xfe])]);
    const binary2 = Buffer.concat([Buffer.from('odd/'), Buffer.from([0xff, 0x00, 0xfd])]);
    const long = Buffer.from(`odd/${'k'.repeat(10_000)}`);
    for (const key of [html, binary, binary2, long]) await t.conn.client.kv.put({ key, value: Buffer.from('v') });
    await assertConverged(live);
    const names = live.model.locks().map((l) => l.name);
    assert.equal(names.length, 4, 'two binary names differing in one byte stay apart');
    assert.ok(names.some((n) => n.equals(binary)) && names.some((n) => n.equals(binary2)));
  });

  test('values of 1.5 MB: the model keeps a bounded preview and the real size', async () => {
    const live = await follow(['big/']);
    const value = Buffer.alloc(1_500_000, 0x61);
    await t.conn.client.kv.put({ key: Buffer.from('big/blob'), value });
    await t.conn.client.kv.put({ key: Buffer.from('big/blob2'), value });
    await assertConverged(live);
    const holder = live.model.locks()[0].holder!;
    assert.equal(holder.valueSize, value.length);
    assert.ok(holder.valuePreview.length <= 1024);
  });
});

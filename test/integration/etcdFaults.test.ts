import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdCluster, eventually, sleep, startCluster } from '../harness/etcd';
import { etcdSuite } from '../harness/suite';
import { Session } from '../../src/core/etcd/session';
import { Scope } from '../harness/core';
import { LiveLocks } from '../../src/core/etcd/liveLocks';
import { LockModel } from '../../src/core/etcd/lockModel';
import { Mutex } from '../../src/core/etcd/mutex';
import { readPrefixes } from '../../src/core/etcd/keyspace';
import type { EtcdConnection } from '../../src/core/etcd/connect';

async function sameAsRangeGet(live: LiveLocks, conn: EtcdConnection): Promise<boolean> {
  await live.sync();
  const read = await readPrefixes(conn, live.prefixes);
  const fresh = new LockModel();
  fresh.reload(() => true, read.records, read.revision);
  const picture = (m: LockModel) => JSON.stringify(m.locks().map((l) => [l.id, l.holder?.key.toString('hex'), l.waiters.map((w) => w.key.toString('hex'))]));
  return picture(live.model) === picture(fresh);
}

describe('faults: a 3-member cluster loses its leader', () => {
  let cluster: EtcdCluster;
  const scope = new Scope();

  before(async () => {
    cluster = await startCluster(3);
  });
  after(async () => {
    await scope.dispose();
    await cluster.dispose();
  });

  test('the model converges and a held lock is either still held or reported lost, never silently assumed', async () => {
    const conn = await scope.connect(cluster.endpoints, { dialTimeoutMs: 3000 });
    const live = new LiveLocks(conn, [Buffer.from('fo/')]);
    scope.defer(() => live.dispose());
    await live.start();
    const session = await scope.session(conn, 5);
    const hold = await new Mutex(session, 'fo/job').acquire();
    let lost = false;
    hold.onDidLose(() => (lost = true));
    for (let i = 0; i < 5; i++) await conn.client.put(`fo/w${i}/${crypto.randomUUID()}`).value('');

    const leader = await cluster.leader();
    await leader.stop('SIGKILL');
    // Keep writing through the surviving members while the cluster elects a new leader.
    await eventually(async () => {
      await conn.client.put(`fo/after/${crypto.randomUUID()}`).value('');
      return true;
    }, 20_000, 'writes accepted by the new leader');
    await eventually(() => sameAsRangeGet(live, conn), 20_000, 'model equal to a range GET after failover');

    const keyStillOurs = (await conn.client.get(hold.key.toString()).exec()).kvs[0];
    if (lost) assert.ok(hold.lost, 'lost is reported through the hold');
    else assert.equal(Number(keyStillOurs?.create_revision), hold.fencingToken, 'not reported lost, so the key must still be ours');

    await leader.start();
    await conn.client.put(`fo/back/${crypto.randomUUID()}`).value('');
    await eventually(() => sameAsRangeGet(live, conn), 20_000, 'model equal after the member returns');
    if (!lost) await hold.release();
  });
});

describe('faults: etcd frozen (SIGSTOP) for longer than the lease TTL', () => {
  const t = etcdSuite();

  test('the holder is told its lock is lost, the lease expires, the model drops the key and a waiter takes over', async () => {
    const conn = await t.scope.connect(t.etcd.endpoint, { dialTimeoutMs: 2000 });
    const live = new LiveLocks(conn, [Buffer.from('frozen/')]);
    t.scope.defer(() => live.dispose());
    await live.start();
    const holderSession = await t.scope.session(conn, 2);
    const hold = await new Mutex(holderSession, 'frozen/job').acquire();
    await eventually(() => live.model.locks()[0]?.holder?.lease === holderSession.leaseId, 10_000, 'holder in the model');
    const lost = new Promise((resolve) => hold.onDidLose(resolve));
    t.etcd.pause();
    await sleep(4000);
    t.etcd.resume();
    await lost; // no keepalive acknowledged for a whole TTL: the session cannot vouch for the lease any more
    assert.ok(hold.lost);
    // etcd's lessor sees the expired lease once it runs again: the key goes, and the model says so.
    await eventually(() => live.model.locks().length === 0, 20_000, 'the expired holder leaves the model');
    const waiter = await t.scope.session(conn, 5);
    const next = await new Mutex(waiter, 'frozen/job').acquire();
    assert.ok(next.fencingToken > hold.fencingToken);
    await next.release();
  });
});

describe('faults: the mutex while etcd is killed and restarted', () => {
  const t = etcdSuite();

  test('every hold is confirmed by etcd history: at the revision it claims, its key was first in the queue', async () => {
    const name = 'crashy';
    const conns = [await t.scope.connect(t.etcd.endpoint, { dialTimeoutMs: 2000 }), await t.scope.connect(t.etcd.endpoint, { dialTimeoutMs: 2000 })];
    const holds: { key: string; token: number; revision: number }[] = [];
    let inside = 0;
    let maxInside = 0;
    let restarted = false;
    const target = 40;
    const contender = async (i: number) => {
      while (holds.length < target) {
        try {
          const session = await Session.create(conns[i % 2], 3);
          try {
            while (holds.length < target && !session.lost) {
              const hold = await new Mutex(session, name).acquire({ signal: AbortSignal.timeout(15_000) });
              if (!hold.lost) {
                inside++;
                maxInside = Math.max(maxInside, inside);
                holds.push({ key: hold.key.toString(), token: hold.fencingToken, revision: hold.revision });
                await sleep(5);
                inside--;
              }
              await hold.release();
            }
          } finally {
            await session.revoke().catch(() => session.dispose());
          }
        } catch {
          await sleep(200); // etcd down or the session lost: start again, as a service would
        }
        if (!restarted && holds.length >= target / 3) {
          restarted = true;
          await t.etcd.stop('SIGKILL');
          await t.etcd.start();
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, i) => contender(i)));
    assert.ok(restarted);
    assert.equal(maxInside, 1, 'never two holders in this process at once');
    assert.equal(new Set(holds.map((h) => h.token)).size, holds.length, 'fencing tokens are unique');
    const conn = conns[0];
    for (const h of holds) {
      const first = await eventually(() =>
        conn.client.kv.range({
          key: Buffer.from(`${name}/`), range_end: Buffer.from(`${name}0`), revision: h.revision, sort_target: 'Create', sort_order: 'Ascend', limit: 1,
        }),
      );
      assert.equal(first.kvs[0]?.key.toString(), h.key, `at revision ${h.revision} etcd's first-created key is the holder's`);
    }
  });
});

describe('faults: a holder that took the lock from the queue, its guard being the queue watch', () => {
  const t = etcdSuite();

  /** b queues behind a, a releases: b holds, and its queue watch goes on as its guard. */
  async function handedOver(name: string) {
    const conn = await t.scope.connect(t.etcd.endpoint, { dialTimeoutMs: 2000 });
    const [a, b] = [await t.scope.session(conn, 30), await t.scope.session(conn, 30)];
    const ha = await new Mutex(a, name).acquire();
    let queued = false;
    const waiting = new Mutex(b, name).acquire({ onQueue: () => (queued = true) });
    await eventually(() => queued, 10_000, 'b queued');
    await ha.release();
    const hb = await waiting;
    let lost: unknown;
    hb.onDidLose((e) => (lost = e));
    return { conn, b, hb, told: () => lost };
  }

  test('etcd killed and restarted under it: its key deleted afterwards is still reported', async () => {
    const { b, hb, told } = await handedOver('guard/restart');
    await t.etcd.stop('SIGKILL');
    await t.etcd.start();
    await t.etcd.etcdctl(['del', `guard/restart/${b.leaseId}`]);
    await eventually(() => told(), 20_000, 'the hold is told its key is gone');
    assert.match(hb.lost?.message ?? '', /lock key .* (was deleted|is gone)/, 'by its guard, not by the session');
  });

  test('history compacted past where the queue watch started: its key deleted afterwards is still reported', async () => {
    const { conn, b, hb, told } = await handedOver('guard/compact');
    for (let i = 0; i < 5; i++) await conn.client.put(`guard/other/${i}`).value('');
    const revision = Number((await conn.client.put('guard/other/last').value('')).header.revision);
    await t.etcd.etcdctl(['compaction', String(revision)]);
    await t.etcd.etcdctl(['del', `guard/compact/${b.leaseId}`]);
    await eventually(() => told(), 20_000, 'the hold is told its key is gone');
    assert.match(hb.lost?.message ?? '', /lock key .* (was deleted|is gone)/, 'by its guard, not by the session');
  });
});

describe('bad input at scale', () => {
  const t = etcdSuite();

  test('100,000 keys under one prefix load, and follow changes', async () => {
    const conn = await t.scope.connect(t.etcd.endpoint);
    for (let i = 0; i < 100_000; i += 125) {
      await conn.client.kv.txn({
        success: Array.from({ length: 125 }, (_, k) => ({ request_put: { key: Buffer.from(`big/l${(i + k) % 5000}/${crypto.randomUUID()}`), value: Buffer.alloc(0) } })),
      });
    }
    const live = new LiveLocks(conn, [Buffer.from('big/')]);
    t.scope.defer(() => live.dispose());
    await live.start();
    assert.equal(live.model.keyCount, 100_000);
    assert.equal(live.model.locks().length, 5000);
    await conn.client.delete().prefix('big/l42/');
    await eventually(async () => (await live.sync(), live.model.locks().length === 4999), 15_000, 'a deleted lock leaves the model');
    assert.ok(await sameAsRangeGet(live, conn));
  });

  test('a prefix full of regex and glob characters matches literally', async () => {
    const conn = await t.scope.connect(t.etcd.endpoint);
    const odd = 'locks/[a-z]*.+?(x)|^$\\{1}/';
    await conn.client.put(`${odd}job/${crypto.randomUUID()}`).value('');
    await conn.client.put(`locks/a/job/${crypto.randomUUID()}`).value('');
    const live = new LiveLocks(conn, [Buffer.from(odd)]);
    t.scope.defer(() => live.dispose());
    await live.start();
    assert.deepEqual(live.model.locks().map((l) => l.name.toString()), [`${odd}job`]);
  });
});

import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { eventually, sleep } from '../harness/etcd';
import { etcdSuite } from '../harness/suite';
import { Session } from '../../src/core/etcd/session';
import { Mutex } from '../../src/core/etcd/mutex';
import { LockLensError, isLockLensError } from '../../src/core/errors';
import { readPrefix } from '../../src/core/etcd/keyspace';
import { OwnKeyGuard } from '../../src/core/etcd/ownKeyGuard';
import { QueueWatch } from '../../src/core/etcd/queueWatch';

describe('Mutex (Go concurrency.Mutex compatible) against a real etcd', () => {
  const t = etcdSuite();
  let name = '';
  let n = 0;
  beforeEach(() => {
    name = `locks/m${++n}`;
  });

  const keysUnder = async (prefix: string) => (await readPrefix(t.conn, Buffer.from(prefix))).records;

  test('the key is <name>/<lease hex> and the fencing token is its create revision', async () => {
    const session = await t.scope.session(t.conn);
    const hold = await new Mutex(session, name).acquire();
    const [record] = await keysUnder(`${name}/`);
    assert.equal(record.key.toString(), `${name}/${session.leaseId}`);
    assert.equal(record.lease, session.leaseId);
    assert.equal(record.valueSize, 0, 'Go writes an empty value');
    assert.equal(hold.fencingToken, record.createRevision);
    assert.equal(await hold.release(), true);
    assert.deepEqual(await keysUnder(`${name}/`), []);
  });

  test('many contenders: never two holders, served in create-revision order (FIFO), tokens strictly increase', async () => {
    const contenders = 12;
    const sessions = await Promise.all(Array.from({ length: contenders }, () => t.scope.session(t.conn)));
    // Queue them one after another so the expected order is known.
    const mutexes = sessions.map((s) => new Mutex(s, name));
    const first = await mutexes[0].acquire();
    const enqueued: number[] = [];
    const order: number[] = [];
    let inside = 0;
    let maxInside = 0;
    const runs = mutexes.slice(1).map(async (m, i) => {
      const tokens: number[] = [];
      const hold = await m.acquire({ onQueue: (p) => tokens.push(p.fencingToken) });
      assert.ok(tokens.every((t) => t === hold.fencingToken), 'the token announced while queued is the one held');
      inside++;
      maxInside = Math.max(maxInside, inside);
      order.push(i + 1);
      enqueued.push(hold.fencingToken);
      await sleep(5);
      inside--;
      await hold.release();
    });
    await eventually(async () => (await keysUnder(`${name}/`)).length === contenders, 10_000, 'all queued');
    const queue = (await keysUnder(`${name}/`)).sort((a, b) => a.createRevision - b.createRevision).map((r) => r.lease);
    await first.release();
    await Promise.all(runs);
    assert.equal(maxInside, 1, 'mutual exclusion');
    const servedLeases = order.map((i) => sessions[i].leaseId);
    assert.deepEqual(servedLeases, queue.slice(1), 'served in create-revision order');
    assert.deepEqual([...enqueued].sort((a, b) => a - b), enqueued, 'fencing tokens increase');
  });

  test('randomized: waiters abort and leases are revoked mid-queue; every hold is one etcd agrees with', async () => {
    const seed = Number(process.env.LOCKLENS_SEED ?? Date.now() % 100_000);
    let state = seed;
    const random = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const holds: { key: string; revision: number; start: number; end: number; lost: boolean }[] = [];
    const contender = async () => {
      for (let round = 0; round < 6; round++) {
        const session = await Session.create(t.conn, 10);
        const abort = new AbortController();
        const r = random();
        // A third of the waiters give up after a while; some others lose their lease to a revoke while queued.
        if (r < 0.33) setTimeout(() => abort.abort(), 5 + random() * 40);
        else if (r < 0.5) setTimeout(() => void t.etcd.etcdctl(['lease', 'revoke', session.leaseId]).catch(() => undefined), 5 + random() * 40);
        try {
          const hold = await new Mutex(session, name).acquire({ signal: abort.signal });
          const start = performance.now();
          await sleep(random() * 3);
          const end = performance.now();
          // release() deletes only if the key is still ours: false means the lease was revoked under the hold.
          const kept = await hold.release();
          holds.push({ key: hold.key.toString(), revision: hold.revision, start, end, lost: !kept });
        } catch (e) {
          assert.ok(isLockLensError(e, 'CANCELLED') || isLockLensError(e, 'LOCK_LOST'), String(e));
        } finally {
          await session.revoke().catch(() => undefined);
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, contender));
    assert.ok(holds.length > 0, `seed ${seed}: somebody held the lock`);
    // A hold whose lease was revoked under it overlaps its successor until it hears it is lost (that is what fencing
    // tokens are for); holds that were never lost must not overlap at all.
    const kept = holds.filter((h) => !h.lost).sort((a, b) => a.start - b.start);
    for (let i = 1; i < kept.length; i++) assert.ok(kept[i].start >= kept[i - 1].end, `seed ${seed}: two holders at once`);
    for (const h of holds) {
      const first = await t.conn.client.kv.range({
        key: Buffer.from(`${name}/`), range_end: Buffer.from(`${name}0`), revision: h.revision, sort_target: 'Create', sort_order: 'Ascend', limit: 1,
      });
      assert.equal(first.kvs[0]?.key.toString(), h.key, `seed ${seed}: at revision ${h.revision} the holder's key was first in the queue`);
    }
    assert.deepEqual(await keysUnder(`${name}/`), [], 'nothing left behind');
  });

  test('reports the queue position when queued and each time one of the two keys just ahead leaves', async () => {
    const [a, b, c] = await Promise.all([t.scope.session(t.conn), t.scope.session(t.conn), t.scope.session(t.conn)]);
    const ha = await new Mutex(a, name).acquire();
    const hbPromise = new Mutex(b, name).acquire();
    await eventually(async () => (await keysUnder(`${name}/`)).length === 2);
    const positions: number[] = [];
    const hcPromise = new Mutex(c, name).acquire({ onQueue: (p) => positions.push(p.ahead) });
    await eventually(() => positions.length === 1);
    assert.deepEqual(positions, [2]);
    await ha.release();
    const hb = await hbPromise;
    await eventually(() => positions.length === 2, 10_000, 'c re-read when a, two ahead, left');
    assert.deepEqual(positions, [2, 1]);
    await hb.release();
    const hc = await hcPromise;
    assert.deepEqual(positions, [2, 1], 'c took the lock when b left, without another read');
    await hc.release();
  });

  test('a waiter that leaves the middle of the queue moves those behind it up, without waking them early', async () => {
    const [a, b, c] = await Promise.all([t.scope.session(t.conn), t.scope.session(t.conn), t.scope.session(t.conn)]);
    const ha = await new Mutex(a, name).acquire();
    const leave = new AbortController();
    const hb = new Mutex(b, name).acquire({ signal: leave.signal });
    await eventually(async () => (await keysUnder(`${name}/`)).length === 2);
    const positions: number[] = [];
    let cHeld = false;
    const hc = new Mutex(c, name).acquire({ onQueue: (p) => positions.push(p.ahead) }).then((h) => ((cHeld = true), h));
    await eventually(() => positions.length === 1);
    leave.abort();
    await assert.rejects(hb, (e) => isLockLensError(e, 'CANCELLED'));
    await eventually(() => positions.length === 2);
    assert.deepEqual(positions, [2, 1]);
    assert.equal(cHeld, false, 'still behind the holder');
    assert.equal((await keysUnder(`${name}/`)).length, 2, "the cancelled waiter's key is gone");
    await ha.release();
    await (await hc).release();
  });

  test('tryAcquire on a held lock throws LOCKED naming the holder and leaves no key behind', async () => {
    const [a, b] = await Promise.all([t.scope.session(t.conn), t.scope.session(t.conn)]);
    const ha = await new Mutex(a, name).tryAcquire();
    await assert.rejects(new Mutex(b, name).tryAcquire(), (e) => isLockLensError(e, 'LOCKED') && e.message.includes(a.leaseId));
    assert.equal((await keysUnder(`${name}/`)).length, 1);
    await ha.release();
    const hb = await new Mutex(b, name).tryAcquire();
    await hb.release();
  });

  test('re-acquiring on the same session returns at once with the same key (Go semantics)', async () => {
    const s = await t.scope.session(t.conn);
    const h1 = await new Mutex(s, name).acquire();
    const h2 = await new Mutex(s, name).acquire();
    assert.equal(h2.fencingToken, h1.fencingToken);
    await h1.release();
    h2.dispose();
  });

  test('release is owner-only: it never deletes a newer key of the same name', async () => {
    const s = await t.scope.session(t.conn);
    const m = new Mutex(s, name);
    const old = await m.acquire();
    await old.release();
    const fresh = await m.acquire();
    assert.equal(await old.release(), false);
    assert.equal(await m.deleteOwnKey(old.fencingToken), false, 'a stale token deletes nothing');
    assert.equal((await keysUnder(`${name}/`)).length, 1);
    await fresh.release();
  });

  test('lost signal: revoking the holder lease fires onDidLose at once', async () => {
    const s = await t.scope.session(t.conn, 30);
    const hold = await new Mutex(s, name).acquire();
    const lost = new Promise((resolve) => hold.onDidLose(resolve));
    await t.etcd.etcdctl(['lease', 'revoke', s.leaseId]);
    const error = await lost;
    assert.ok(isLockLensError(error, 'LOCK_LOST'));
    assert.equal(hold.lost, error);
    assert.equal(await hold.release(), false);
  });

  test('a waiter whose lease is revoked fails with LOCK_LOST instead of waiting forever', async () => {
    const [a, b] = await Promise.all([t.scope.session(t.conn), t.scope.session(t.conn)]);
    const ha = await new Mutex(a, name).acquire();
    const waiting = new Mutex(b, name).acquire();
    await eventually(async () => (await keysUnder(`${name}/`)).length === 2);
    const failed = assert.rejects(waiting, (e) => isLockLensError(e, 'LOCK_LOST'));
    await t.etcd.etcdctl(['lease', 'revoke', b.leaseId]);
    await failed;
    await ha.release();
  });

  test('holder and waiter deleted in one revision (etcdctl del --prefix): the waiter is told it is gone, not that it holds', async () => {
    const a = await t.scope.session(t.conn);
    const b = await t.scope.session(t.conn);
    assert.ok(Buffer.compare(Buffer.from(a.leaseId), Buffer.from(b.leaseId)) < 0, 'the holder key sorts first, so its delete is listed first');
    const ha = await new Mutex(a, name).acquire();
    const waiting = new Mutex(b, name).acquire();
    await eventually(async () => (await keysUnder(`${name}/`)).length === 2);
    const failed = assert.rejects(waiting, (e) => isLockLensError(e, 'LOCK_LOST'));
    await t.etcd.etcdctl(['del', '--prefix', `${name}/`]);
    await failed;
    ha.dispose();
  });

  test('the key ahead deleted, then the waiter\'s own key, both heard in one watch response: it is told it is gone, never that it holds', async () => {
    const [a, b] = await Promise.all([t.scope.session(t.conn), t.scope.session(t.conn)]);
    const ha = await new Mutex(a, name).acquire();
    const del = (key: string) => execFileSync('etcdctl', [`--endpoints=${t.etcd.url}`, 'del', key], { env: { ...process.env, ETCDCTL_API: '3' } });
    let deleted = false;
    let told: number | undefined;
    const waiting = new Mutex(b, name).acquire({
      // Synchronously, before the waiter has opened its watch (which starts at its own PUT): the holder's key goes at
      // one revision and the waiter's (a force-release, say) at the next, and the watch delivers both in one response.
      onQueue: () => {
        if (deleted) return;
        deleted = true;
        del(`${name}/${a.leaseId}`);
        del(`${name}/${b.leaseId}`);
      },
      onHeld: (p) => (told = p.revision),
    });
    await assert.rejects(waiting, (e) => isLockLensError(e, 'LOCK_LOST'));
    assert.equal(told, undefined, 'the lock was never said to be ours: a CLI would have let its command run');
    ha.dispose();
  });

  test("a holder's guard taking over a queue watch that has already brought our key's DELETE reports it to the hold", async () => {
    // What a waiter's queue watch holds when it becomes the guard: the DELETE of the key ahead consumed, and one of our
    // own key at a later revision, delivered in the same response, still buffered.
    const ahead = Buffer.from(`${name}/ahead`);
    const own = Buffer.from(`${name}/own`);
    await t.conn.client.put(ahead).value('');
    const created = Number((await t.conn.client.put(own).value('')).header.revision);
    await t.conn.client.delete().key(ahead);
    await t.conn.client.delete().key(own);
    const watch = new QueueWatch(t.conn, [ahead], own, created);
    const woke = await watch.next([ahead], undefined, () => ({ dispose: () => undefined }), () => new LockLensError('LOCK_LOST', 'own key deleted first'));
    assert.equal(woke.kind, 'deleted');
    const guard = new OwnKeyGuard(t.conn, own, created, created + 2, watch);
    t.scope.defer(() => guard.dispose());
    // A Hold subscribes right after constructing its guard, as here.
    let lost: unknown;
    guard.onDidDelete((e) => (lost = e));
    await eventually(() => lost !== undefined, 5_000, 'the guard reports the delete it took over');
    assert.ok(isLockLensError(lost, 'LOCK_LOST'));
  });

  test('an abort that arrives while the waiter is still enqueueing ends the wait', async () => {
    const [a, b] = await Promise.all([t.scope.session(t.conn), t.scope.session(t.conn)]);
    const ha = await new Mutex(a, name).acquire();
    const abort = new AbortController();
    const waiting = new Mutex(b, name).acquire({ signal: abort.signal });
    abort.abort(); // acquire is awaiting its enqueue transaction now, not listening yet
    await assert.rejects(waiting, (e) => isLockLensError(e, 'CANCELLED'));
    await eventually(async () => (await keysUnder(`${name}/`)).length === 1, 10_000, "the aborted waiter's key is removed");
    await ha.release();
  });

  test('a waiter that gave up and queues again on the same session keeps its new place', async () => {
    const [a, b] = await Promise.all([t.scope.session(t.conn), t.scope.session(t.conn)]);
    const ha = await new Mutex(a, name).acquire();
    const abort = new AbortController();
    const first = new Mutex(b, name).acquire({ signal: abort.signal });
    await eventually(async () => (await keysUnder(`${name}/`)).length === 2);
    abort.abort();
    await assert.rejects(first, (e) => isLockLensError(e, 'CANCELLED'));
    assert.equal((await keysUnder(`${name}/`)).length, 1, 'the key was gone before acquire rejected');
    const again = new Mutex(b, name).acquire();
    await eventually(async () => (await keysUnder(`${name}/`)).length === 2);
    await ha.release();
    const hb = await again;
    assert.equal(hb.lost, undefined);
    assert.deepEqual((await keysUnder(`${name}/`)).map((r) => r.lease), [b.leaseId]);
    await hb.release();
  });

  test('a lost session tells late listeners at once, and acquiring on it fails', async () => {
    const s = await t.scope.session(t.conn, 3);
    await t.etcd.etcdctl(['lease', 'revoke', s.leaseId]);
    await eventually(() => s.lost !== undefined, 10_000, 'the keepalive learns the lease is gone');
    const told = await new Promise((resolve) => s.onDidLose(resolve));
    assert.ok(isLockLensError(told, 'LOCK_LOST'));
    await assert.rejects(new Mutex(s, name).acquire(), (e) => isLockLensError(e, 'LOCK_LOST'));
  });

  test('a crashed holder (no more keepalives) hands the lock over after its TTL', async () => {
    const crashed = await t.scope.session(t.conn, 2);
    await new Mutex(crashed, name).acquire();
    crashed.dispose(); // stops renewing without revoking: what a killed process leaves
    const waiter = await t.scope.session(t.conn);
    const hold = await new Mutex(waiter, name).acquire();
    assert.deepEqual((await keysUnder(`${name}/`)).map((r) => r.lease), [waiter.leaseId]);
    await hold.release();
  });

  test('interop: waits behind `etcdctl lock` and gets the lock after etcdctl exits', async () => {
    const holder = spawn('etcdctl', [`--endpoints=${t.etcd.endpoint}`, 'lock', name], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.scope.defer(() => holder.kill('SIGKILL'));
    const [line] = (await once(holder.stdout!, 'data')) as [Buffer];
    assert.match(line.toString(), new RegExp(`^${name}/[0-9a-f]+`), 'etcdctl holds');
    const s = await t.scope.session(t.conn);
    let held = false;
    const acquiring = new Mutex(s, name).acquire().then((h) => ((held = true), h));
    await eventually(async () => (await keysUnder(`${name}/`)).length === 2, 10_000, 'queued behind etcdctl');
    assert.equal(held, false);
    holder.kill('SIGINT'); // etcdctl releases on interrupt
    const hold = await acquiring;
    assert.deepEqual((await keysUnder(`${name}/`)).map((r) => r.lease), [s.leaseId]);
    await hold.release();
  });

  test('interop: `etcdctl lock` waits behind a LockLens holder and gets the lock after release', async () => {
    const s = await t.scope.session(t.conn);
    const hold = await new Mutex(s, name).acquire();
    const waiter = spawn('etcdctl', [`--endpoints=${t.etcd.endpoint}`, 'lock', name], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.scope.defer(() => waiter.kill('SIGKILL'));
    let printed = '';
    waiter.stdout!.on('data', (d: Buffer) => (printed += d.toString()));
    await eventually(async () => (await keysUnder(`${name}/`)).length === 2, 10_000, 'etcdctl queued');
    assert.equal(printed, '', 'etcdctl does not hold while LockLens does');
    await hold.release();
    await eventually(() => printed.startsWith(`${name}/`), 10_000, 'etcdctl acquired');
    waiter.kill('SIGINT');
  });

  test('acquire with an already-aborted signal enqueues nothing', async () => {
    const s = await t.scope.session(t.conn);
    const c = new AbortController();
    c.abort();
    await assert.rejects(new Mutex(s, name).acquire({ signal: c.signal }), (e) => isLockLensError(e, 'CANCELLED'));
    assert.deepEqual(await keysUnder(`${name}/`), []);
  });

  test('with a namespace, the key lives under it in etcd and excludes etcdctl using the full name', async () => {
    const nsConn = await t.scope.connect(t.etcd.endpoint, { namespace: 'tenant-a/' });
    const s = await t.scope.session(nsConn);
    const hold = await new Mutex(s, name).acquire();
    assert.deepEqual((await keysUnder(`tenant-a/${name}/`)).map((r) => r.key.toString()), [`tenant-a/${name}/${s.leaseId}`]);
    const waiter = spawn('etcdctl', [`--endpoints=${t.etcd.endpoint}`, 'lock', `tenant-a/${name}`], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.scope.defer(() => waiter.kill('SIGKILL'));
    let printed = '';
    waiter.stdout!.on('data', (d: Buffer) => (printed += d.toString()));
    await eventually(async () => (await keysUnder(`tenant-a/${name}/`)).length === 2, 10_000, 'etcdctl queued on the full name');
    assert.equal(printed, '', 'etcdctl waits behind the namespaced holder');
    await hold.release();
    await eventually(() => printed.startsWith(`tenant-a/${name}/`), 10_000, 'etcdctl acquired after release');
    waiter.kill('SIGINT');
  });

  test('names are bytes: a non-UTF-8 lock name works and stays distinct', async () => {
    const s = await t.scope.session(t.conn);
    const raw = Buffer.from([0x6c, 0x2f, 0xff, 0xfe]);
    const hold = await new Mutex(s, raw).acquire();
    const [record] = await keysUnder('l/');
    assert.deepEqual(record.key, Buffer.concat([raw, Buffer.from(`/${s.leaseId}`)]));
    await hold.release();
  });
});

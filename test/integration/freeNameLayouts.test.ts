import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { appendFileSync, writeFileSync } from 'node:fs';
import { Redisson } from 'node-redisson';
import { show, type Proc } from '../harness/cli';
import { fixture, linesOf, MARK_WAIT_MARK } from '../harness/cliFixture';
import { eventually } from '../harness/etcd';
import { PythonEtcd3Lock } from '../harness/pythonEtcd3';
import { Etcd3, EtcdLockFailedError } from 'etcd3';
import { EtcdBackend } from '../../src/core/etcd/etcdBackend';
import { redisCli } from '../harness/redisCli';
import { FakeRedisson, REDISSON_UUID } from '../harness/redisson';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import { lockChannel } from '../../src/core/redis/redissonNames';
import { zookeeperCli } from '../harness/zookeeperCli';

/**
 * A name that holds nothing, taken by `locklens acquire` in a layout (`--layout`, else the siblings', else the store's
 * default), contended by the real clients of that layout: each waits for LockLens rather than failing or taking the
 * lock beside it, and gets it once LockLens releases.
 */

/** Starts `locklens acquire ARGS -- <mark start, wait for the gate, mark end>`; resolves once its command runs. */
async function holding(procs: { locklens(args: readonly string[]): Proc }, dir: string, args: readonly string[]): Promise<{ proc: Proc; log: string; release: () => void }> {
  const log = join(dir, 'order');
  const gate = join(dir, 'go');
  const proc = procs.locklens(['acquire', ...args, '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', gate, 'locklens-end']);
  await eventually(() => linesOf(log).includes('locklens-start'), 15_000, 'locklens holds and runs its command');
  return { proc, log, release: () => writeFileSync(gate, '') };
}

describe('a free Redis name, taken in a layout, against node-redisson and redis-py', () => {
  const f = redisCli();
  const { url, peer, list } = f;

  /**
   * node-redisson, closed after the test. A lock() that waited leaves a timer of the holder's PTTL behind it (its
   * waitSubscribeOnce does not clear it), which unsubscribes when it fires: closing waits for it (`waitedMs`), or
   * that unsubscribe fails on the closed connection after the test.
   */
  const redisson = (waitedMs = 0) => {
    const { hostname, port } = new URL(url());
    const client = new Redisson({ redis: { options: { host: hostname, port: Number(port) } } });
    f.defer(async () => {
      await new Promise((resolve) => setTimeout(resolve, waitedMs));
      await client.quit();
    });
    return client;
  };

  /** redis-py's try is refused while locklens holds `name`; its blocking acquire waits, and holds once locklens released. */
  const redisPyWaitsFor = async (name: string, ours: Awaited<ReturnType<typeof holding>>) => {
    assert.equal(await peer(name, 'try').until(['busy', 'acquired']), 'busy', "redis-py's SET NX is refused");
    const waiter = peer(name, 'hold');
    await waiter.until(['waiting']);
    ours.release();
    assert.equal((await ours.proc.wait()).code, 0);
    await waiter.until(['acquired']);
    waiter.release();
    await waiter.until(['released']);
  };

  test("by default a Redisson lock: node-redisson's lock() waits instead of failing, and gets it once locklens releases", async () => {
    const name = 'jobs:nightly';
    const ours = await holding(f.procs, f.dir, [name, '--ttl', '2', '--url', url()]);
    assert.match(ours.proc.stderr, /^locklens: jobs:nightly holds no lock: taking it as Redisson RLock: Redisson, node-redisson \(layout redisson: the default: token clients .* wait on a Redisson lock, while Redisson clients fail with WRONGTYPE on a token\)$/m);
    const [listed] = await list(name);
    assert.equal(listed.holder?.convention, 'redisson-lock');

    const lock = redisson(2_000).getLock(name);
    assert.equal(await lock.tryLock(0, true), false, 'node-redisson sees it held, no WRONGTYPE');
    const got = lock.lock().then(() => appendFileSync(ours.log, 'node-redisson acquired\n'));
    ours.release();
    const r = await ours.proc.wait();
    assert.equal(r.code, 0, show(r));
    await got;
    assert.deepEqual(linesOf(ours.log), ['locklens-start', 'locklens-end', 'node-redisson acquired']);
    assert.equal(await lock.isLocked(), true);
    await lock.unlock();
  });

  test("redis-py's Lock waits on locklens's Redisson lock and gets it after the release", async () => {
    const name = 'jobs:report';
    await redisPyWaitsFor(name, await holding(f.procs, f.dir, [name, '--url', url()]));
  });

  test('--layout token: redis-py waits and gets it; node-redisson fails with WRONGTYPE on that string, which is why it is not the default', async () => {
    const name = 'jobs:tokens';
    const ours = await holding(f.procs, f.dir, [name, '--layout', 'token', '--url', url()]);
    assert.match(ours.proc.stderr, /taking it as token: redis-py, redlock, Spring, SET NX PX \(layout token: as asked\)$/m);
    assert.equal((await list(name))[0].holder?.convention, 'redis-token');
    await assert.rejects(redisson().getLock(name).tryLock(0, true), /WRONGTYPE/);
    await redisPyWaitsFor(name, ours);
  });

  test("--layout redisson-fair: Redisson's fair lock script queues behind locklens and holds once locklens released", async () => {
    const name = 'jobs:fair';
    const ours = await holding(f.procs, f.dir, [name, '--layout', 'redisson-fair', '--url', url()]);
    const fair = FakeRedisson.connect(url());
    f.defer(() => fair.dispose());
    assert.notEqual(await fair.fairLock(name, 1), null, 'refused: locklens holds');
    const queued = await list(name);
    assert.equal(queued[0].holder?.convention, 'redisson-fair-lock');
    assert.deepEqual(queued[0].waiters.map((w) => w.owner), [`${REDISSON_UUID}:1`], 'the Redisson thread queues behind locklens');
    ours.release();
    assert.equal((await ours.proc.wait()).code, 0);
    assert.equal(await fair.fairLock(name, 1), null, 'the head of the queue takes it');
  });

  test('a waiter whose Redisson lock became a token meanwhile takes it as a token, instead of failing with WRONGTYPE', async () => {
    const name = 'jobs:switch';
    const fair = FakeRedisson.connect(url());
    f.defer(() => fair.dispose());
    assert.equal(await fair.lock(name, 1, 60_000), null);
    const backend = await RedisBackend.open({ store: 'redis', endpoints: [url()] });
    f.defer(() => backend.close());
    // Told once as a Redisson waiter, and again as a token waiter once it has looked again.
    const waits: (() => void)[] = [];
    const told = [0, 1].map((i) => new Promise<void>((resolve) => (waits[i] = resolve)));
    let times = 0;
    const taking = backend.acquire(Buffer.from(name), { ttlSeconds: 10, onQueue: (p) => p.ahead > 0 && waits[times++]?.() });
    await told[0];
    // A token client takes the name the moment the Redisson holder lets go; the waiter is woken by the unlock message.
    await f.server.cli(['EVAL', "redis.call('del', KEYS[1]); return redis.call('set', KEYS[1], 'token-client', 'PX', 60000)", '1', name]);
    await f.server.cli(['PUBLISH', lockChannel(Buffer.from(name)).toString(), '0']);
    await told[1];
    await f.server.cli(['DEL', name]);
    const hold = await taking;
    assert.equal(await f.server.cli(['GET', name]), hold.owner, 'held as a token, with its own');
    assert.equal(await hold.release(), true);
  });

  test('the siblings under the prefix decide when they agree; a contradicting --layout on a held name and an unknown one exit 2', async () => {
    const py = peer('tok:one', 'hold');
    await py.until(['acquired']);
    await f.server.cli(['SET', 'tok:two', 'someone', 'PX', '60000']);
    const r = await f.procs.run(['acquire', 'tok:new', '--url', url(), '--', 'true']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stderr, /^locklens: tok:new holds no lock: taking it as token: .* \(layout token: the 2 other locks under tok: are in this layout\)$/m);

    const held = await f.procs.run(['acquire', 'tok:one', '--layout', 'redisson', '--try', '--url', url()]);
    assert.equal(held.code, 2, show(held));
    assert.match(held.stderr, /tok:one is held as token: .* \(layout token\): it is taken in its own layout, not --layout redisson/);
    const unknown = await f.procs.run(['acquire', 'tok:x', '--layout', 'redlock', '--url', url()]);
    assert.equal(unknown.code, 2, show(unknown));
    assert.match(unknown.stderr, /unknown layout 'redlock': redisson, redisson-fair, redisson-rw, token \(default redisson\)/);
  });
});

describe('a free ZooKeeper path, taken in a layout, against kazoo', { timeout: 180_000 }, () => {
  const f = zookeeperCli();
  const { url, kazoo, listed } = f;

  test("by default Curator's node names: kazoo told to count them (extra_lock_patterns) waits, and gets it after the release", async () => {
    const name = '/layouts/curator';
    const ours = await holding(f.procs, f.dir, [name, '--url', url()]);
    assert.match(ours.proc.stderr, /^locklens: \/layouts\/curator holds no lock: taking it as Curator: .* \(layout curator: the default: Curator's node names are counted by/m);
    const lock = await listed(name, (l) => l.holder !== null, 'locklens holds');
    assert.match(lock.holder!.key, /\/_c_[0-9a-f-]{36}-lock-\d{10}$/);
    assert.equal(await kazoo(name, { mode: 'try', extraLockPatterns: ['-lock-'] }).until(['busy', 'acquired']), 'busy');
    const waiter = kazoo(name, { identifier: 'kazoo-waiter', extraLockPatterns: ['-lock-'] });
    await waiter.until(['waiting']);
    await listed(name, (l) => l.waiters[0]?.data === 'kazoo-waiter', 'kazoo queued behind locklens');
    ours.release();
    assert.equal((await ours.proc.wait()).code, 0);
    await waiter.until(['acquired']);
    assert.deepEqual(await waiter.contenders(), ['kazoo-waiter']);
  });

  test("a free path whose siblings are kazoo locks is taken in kazoo's names, which kazoo's Lock counts", async () => {
    const sibling = kazoo('/sib/one', { identifier: 'sibling' });
    await sibling.until(['acquired']);
    const ours = await holding(f.procs, f.dir, ['/sib/two', '--url', url()]);
    assert.match(ours.proc.stderr, /^locklens: \/sib\/two holds no lock: taking it as kazoo: .* \(layout kazoo: the other lock under \/sib\/ is in this layout\)$/m);
    assert.equal(await kazoo('/sib/two', { mode: 'try' }).until(['busy', 'acquired']), 'busy');
    ours.release();
    assert.equal((await ours.proc.wait()).code, 0);
  });

  test("--layout kazoo: kazoo's own Lock waits and gets it after the release", async () => {
    const name = '/layouts/kazoo';
    const ours = await holding(f.procs, f.dir, [name, '--layout', 'kazoo', '--url', url()]);
    const lock = await listed(name, (l) => l.holder !== null, 'locklens holds');
    assert.match(lock.holder!.key, /\/[0-9a-f]{32}__lock__\d{10}$/);
    assert.equal(await kazoo(name, { mode: 'try' }).until(['busy', 'acquired']), 'busy');
    const waiter = kazoo(name, { identifier: 'kazoo-waiter' });
    await waiter.until(['waiting']);
    ours.release();
    assert.equal((await ours.proc.wait()).code, 0);
    await waiter.until(['acquired']);
  });
});

describe('a free etcd name, taken in a layout, against python-etcd3 and etcdctl lock', () => {
  const f = fixture();
  const pyLock = (name: string, mode: 'hold' | 'try') => {
    const p = new PythonEtcd3Lock(f.etcd.endpoint, name, mode);
    f.procs.defer(() => p.dispose());
    return p;
  };

  test("--layout single-key: python-etcd3's Lock on /locks/<name> waits and gets it after the release", async () => {
    const ours = await holding(f.procs, f.dir, ['/locks/report', '--layout', 'single-key', '--endpoints', f.ep]);
    assert.match(ours.proc.stderr, /taking it as single key with a lease: python-etcd3 Lock .* \(layout single-key: as asked\)$/m);
    assert.deepEqual(await f.keys('/locks/report'), ['/locks/report']);
    assert.equal(await pyLock('report', 'try').until(['busy', 'acquired']), 'busy');
    const waiter = pyLock('report', 'hold');
    await waiter.until(['waiting']);
    ours.release();
    assert.equal((await ours.proc.wait()).code, 0);
    await waiter.until(['acquired']);
    waiter.release();
    assert.equal(await waiter.until(['released']), 'released true');
  });

  test("--layout single-key: npm etcd3's Lock, which does not wait, is refused while locklens holds and takes it after", async () => {
    const ours = await holding(f.procs, f.dir, ['npm/report', '--layout', 'single-key', '--endpoints', f.ep]);
    const client = new Etcd3({ hosts: f.etcd.url });
    f.procs.defer(() => client.close());
    await assert.rejects(client.lock('npm/report').acquire(), EtcdLockFailedError);
    ours.release();
    assert.equal((await ours.proc.wait()).code, 0);
    const lock = await client.lock('npm/report').acquire();
    await lock.release();
  });

  test('a name python-etcd3 holds is taken in its single-key layout: refused while held, waited for, taken once deleted', async () => {
    const first = pyLock('batch', 'hold');
    await first.until(['acquired']);
    const busy = await f.procs.run(['acquire', '/locks/batch', '--try', '--endpoints', f.ep]);
    assert.equal(busy.code, 6, show(busy));
    assert.match(busy.stderr, /^locklens: '\/locks\/batch' is held by lease [0-9a-f]+\n$/, 'no layout said: the name keeps its own');
    const other = await f.procs.run(['acquire', '/locks/batch', '--layout', 'go-mutex', '--endpoints', f.ep]);
    assert.equal(other.code, 2, show(other));
    assert.match(other.stderr, /is held as single key with a lease: .* \(layout single-key\): it is taken in its own layout, not --layout go-mutex/);

    // The wait, through the backend, which says when it waits: a delete of the key wakes it.
    const backend = await EtcdBackend.open({ store: 'etcd', endpoints: [f.ep] });
    f.procs.defer(() => backend.close());
    let waiting!: () => void;
    const queued = new Promise<void>((resolve) => (waiting = resolve));
    const taking = backend.acquire(Buffer.from('/locks/batch'), { ttlSeconds: 10, onQueue: (p) => p.ahead > 0 && waiting() });
    await queued;
    first.release();
    assert.equal(await first.until(['released']), 'released true');
    const hold = await taking;
    assert.equal(hold.key.toString(), '/locks/batch', 'the single key, no queue key beside it');
    assert.deepEqual(await f.keys('/locks/batch'), ['/locks/batch']);
    const second = pyLock('batch', 'hold');
    await second.until(['waiting']);
    assert.equal(await hold.release(), true);
    await second.until(['acquired']);
  });

  test("by default Go's Mutex queue: etcdctl lock (Go's concurrency.Mutex) waits and gets it after the release", async () => {
    const ours = await holding(f.procs, f.dir, ['mutexjob', '--endpoints', f.ep]);
    assert.match(ours.proc.stderr, /taking it as queue <name>\/<lease>: Go concurrency.Mutex.* \(layout go-mutex: the default: etcd's own lock/m);
    const waiter = f.procs.etcdctl(['lock', 'mutexjob', '--', 'sh', '-c', `echo etcdctl >> "${ours.log}"`]);
    await eventually(async () => (await f.keys('mutexjob/')).length === 2, 15_000, 'etcdctl queued behind locklens');
    ours.release();
    assert.equal((await ours.proc.wait()).code, 0);
    assert.equal((await waiter.wait()).code, 0);
    assert.deepEqual(linesOf(ours.log), ['locklens-start', 'locklens-end', 'etcdctl']);
  });
});

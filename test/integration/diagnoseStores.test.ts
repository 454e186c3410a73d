import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LockBackend } from '../../src/core/backend';
import { ttlFit, TtlRenewals } from '../../src/core/diagnosis/ttlFit';
import { keyId } from '../../src/core/keys';
import { LockStats } from '../../src/core/lockStats';
import { openBackend } from '../../src/core/stores';
import { AcquirePair } from '../harness/acquirePair';
import { Procs, show } from '../harness/cli';
import { eventually } from '../harness/etcd';
import { KazooLock } from '../harness/kazoo';
import { PythonPeer } from '../harness/pythonPeer';
import { startRedis, type RedisServer } from '../harness/redis';
import { startZooKeeper, type ZooKeeperServer } from '../harness/zookeeper';

/**
 * `locklens diagnose` against ZooKeeper and Redis: two kazoo sessions deadlocked (found), two `locklens acquire`s each
 * taking two paths on one session in opposite orders (found, and ended by a SIGTERM to one), two
 * redis-py processes deadlocked on token locks (never guessed: a token lock's owner is its token, and redis-py's
 * blocking acquire is no visible queue), and a redis-py lock whose work outlives its timeout, flagged by the TTL fit
 * from the holds LockStats measures while a Redis watch follows it.
 */

interface DiagnoseJson {
  deadlocks: { members: { owner: string; holds: { lock: string }; waitsIn: { lock: string } }[] }[];
}

/** kazoo: holds `first` (a `Lock`), says `holding <path> <session hex>`; at its gate queues for `second`. */
const KAZOO_PAIR = String.raw`
import os, sys, time
from kazoo.client import KazooClient
gate, hosts, first, second = sys.argv[1:5]
zk = KazooClient(hosts=hosts, timeout=10)
zk.start(timeout=15)
session = '%x' % zk.client_id[0]
zk.Lock(first, 'pair').acquire()
print('holding', first, session, flush=True)
while not os.path.exists(gate):
    time.sleep(0.02)
print('waiting', second, session, flush=True)
zk.Lock(second, 'pair').acquire()
print('holding', second, session, flush=True)
time.sleep(600)
`;

/** redis-py: holds `first` (a token lock), says `holding <name> <token>`; at its gate spins for `second`. */
const REDIS_PY_PAIR = String.raw`
import os, sys, time, redis
gate, url, first, second = sys.argv[1:5]
r = redis.Redis.from_url(url)
a = r.lock(first, timeout=60, sleep=0.05)
a.acquire()
print('holding', first, a.local.token.decode(), flush=True)
while not os.path.exists(gate):
    time.sleep(0.02)
print('waiting', second, flush=True)
r.lock(second, timeout=60, sleep=0.05).acquire(blocking_timeout=120)
print('holding', second, flush=True)
`;

/** redis-py: `rounds` holds of a `Lock(timeout=TIMEOUT)` whose work takes WORK seconds, each said; then `done`. */
const REDIS_PY_LONG_WORK = String.raw`
import sys, time, redis
gate, url, name, timeout, work, rounds = sys.argv[1:7]
r = redis.Redis.from_url(url)
for i in range(int(rounds)):
    lock = r.lock(name, timeout=float(timeout), sleep=0.05)
    lock.acquire()
    print('acquired', i, flush=True)
    time.sleep(float(work))
    try:
        lock.release()
        print('released', i, flush=True)
    except Exception as e:
        print('release-failed', i, type(e).__name__, flush=True)
    time.sleep(0.5)
print('done', flush=True)
`;

const pairs = (peers: PythonPeer[]) => peers.map((p) => p.until(['holding']).then((l) => l.split(' ')[2]));

describe('diagnose against ZooKeeper: sessions each holding a lock and queued for the other', () => {
  let zk: ZooKeeperServer;
  const peers: PythonPeer[] = [];
  const procs = new Procs('');
  before(async () => (zk = await startZooKeeper()));
  after(async () => {
    peers.forEach((p) => p.dispose());
    await procs.dispose();
    await zk?.dispose();
  });

  test('found: exit 10, both sessions and both paths named', async () => {
    const hosts = `127.0.0.1:${zk.port}`;
    peers.push(new PythonPeer('kazoo', KAZOO_PAIR, [hosts, '/zk/a', '/zk/b']), new PythonPeer('kazoo', KAZOO_PAIR, [hosts, '/zk/b', '/zk/a']));
    const [one, two] = await Promise.all(pairs(peers));
    peers.forEach((p) => p.release());
    await Promise.all(peers.map((p) => p.until(['waiting'])));
    const found = await eventually(async () => {
      const r = await procs.run(['diagnose', '--url', zk.url, '--prefix', '/zk/', '--json']);
      return r.code === 10 && r;
    }, 20_000, 'the deadlock found');
    const [cycle] = (JSON.parse(found.stdout) as DiagnoseJson).deadlocks;
    assert.deepEqual(cycle.members.map((m) => [m.owner, m.holds.lock, m.waitsIn.lock]).sort(), [[one, '/zk/a', '/zk/b'], [two, '/zk/b', '/zk/a']].sort(), show(found));
    const text = await procs.run(['diagnose', '--url', zk.url, '--prefix', '/zk/']);
    assert.equal(text.code, 10, show(text));
    assert.ok(text.stdout.includes(`  session ${one} holds /zk/a (`), show(text));
  });

  test('two locklens acquire processes, each taking /own/a and /own/b on one session in opposite orders: found; SIGTERM to one lets the other run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'locklens-diagnose-'));
    procs.defer(() => rmSync(dir, { recursive: true, force: true }));
    const ran = join(dir, 'ran');
    // Each gate is a lock held by kazoo.
    const gates = ['/gate/one', '/gate/two'].map((path) => new KazooLock(`127.0.0.1:${zk.port}`, path));
    peers.push(...gates);
    await Promise.all(gates.map((g) => g.until(['acquired'])));
    const connection = ['--url', zk.url];
    const [one, two] = [new AcquirePair(procs, connection, '/own/a', '/gate/one', '/own/b', ran, 'one'), new AcquirePair(procs, connection, '/own/b', '/gate/two', '/own/a', ran, 'two')];
    const [oneSession, twoSession] = await Promise.all([one.holdsFirst(), two.holdsFirst()]);
    gates.forEach((g) => g.release());
    await Promise.all([one.waitsForSecond(), two.waitsForSecond()]);

    const found = await eventually(async () => {
      const r = await procs.run(['diagnose', '--url', zk.url, '--prefix', '/own/', '--json']);
      return r.code === 10 && r;
    }, 20_000, 'the deadlock found');
    const [cycle] = (JSON.parse(found.stdout) as DiagnoseJson).deadlocks;
    assert.deepEqual(cycle.members.map((m) => [m.owner, m.holds.lock, m.waitsIn.lock]).sort(), [[oneSession, '/own/a', '/own/b'], [twoSession, '/own/b', '/own/a']].sort(), show(found));

    two.proc.signal('SIGTERM');
    const [stopped, done] = await Promise.all([two.proc.wait(), one.proc.wait()]);
    assert.equal(stopped.code, 130, show(stopped));
    assert.equal(done.code, 0, show(done));
    assert.equal(readFileSync(ran, 'utf8'), 'one\n', 'the other took both and ran its command; the interrupted one never ran');
    const after = await procs.run(['diagnose', '--url', zk.url, '--prefix', '/own/']);
    assert.equal(after.code, 0, show(after));
  });
});

describe('diagnose and the TTL fit against Redis, with redis-py', () => {
  let redis: RedisServer;
  let backend: LockBackend | undefined;
  const peers: PythonPeer[] = [];
  const procs = new Procs('');
  before(async () => (redis = await startRedis()));
  afterEach(() => backend?.close());
  after(async () => {
    peers.forEach((p) => p.dispose());
    await procs.dispose();
    await redis?.dispose();
  });

  test('two redis-py processes deadlocked on token locks are never guessed into a cycle: exit 0', async () => {
    peers.push(new PythonPeer('redis-py', REDIS_PY_PAIR, [redis.url, 'rk:a', 'rk:b']), new PythonPeer('redis-py', REDIS_PY_PAIR, [redis.url, 'rk:b', 'rk:a']));
    await Promise.all(pairs(peers.slice(-2)));
    peers.slice(-2).forEach((p) => p.release());
    await Promise.all(peers.slice(-2).map((p) => p.until(['waiting'])));
    const r = await procs.run(['diagnose', '--url', redis.url, '--prefix', 'rk:', '--json']);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual((JSON.parse(r.stdout) as DiagnoseJson).deadlocks, []);
  });

  test("a redis-py Lock(timeout=2) whose work takes 3 s: the holds LockStats measures run until it expires, and the fit says so", async () => {
    backend = await openBackend({ store: 'redis', endpoints: [redis.url] });
    const watch = backend.watch([Buffer.from('fit:')], { pollIntervalMs: 200, leaseSampleIntervalMs: 200 });
    const stats = new LockStats();
    const renewals = new TtlRenewals();
    const id = keyId(Buffer.from('fit:report'));
    const options = { hasLeases: backend.leases !== undefined, hasRevisions: backend.history !== undefined, sampledTtls: backend.capabilities.ttl, lease: (l: string) => watch.lease(l) };
    watch.onDidChangeLocks((changes) => stats.observe('redis', changes, options));
    watch.onDidChangeLeases((infos) => {
      stats.observeLeases('redis', infos);
      const open = stats.holds('redis', id).at(-1);
      const holder = watch.lock(id)?.holder;
      for (const info of infos) if (open && open.endedAt === null && holder?.lease === info.id) renewals.observe(id, open.acquiredAt, info);
    });
    try {
      await watch.start();
      const worker = new PythonPeer('redis-py', REDIS_PY_LONG_WORK, [redis.url, 'fit:report', '2', '3', '3']);
      peers.push(worker);
      await worker.until(['done'], 30_000);
      assert.equal(worker.lines.filter((l) => l.startsWith('release-failed')).length, 3, 'redis-py itself finds its lock gone');
      await eventually(() => stats.holds('redis', id).filter((h) => h.endedAt !== null).length === 3, 10_000, 'three holds ended');
      const { ttlSeconds, renewal } = renewals.of(id)!;
      assert.ok(ttlSeconds > 1.5 && ttlSeconds <= 2, `the TTL seen: ${ttlSeconds}`);
      assert.notEqual(renewal, 'renewed');
      const fit = ttlFit({ id, name: 'fit:report' }, ttlSeconds, renewal, stats.holds('redis', id));
      assert.equal(fit?.level, 'exceeds', JSON.stringify(stats.holds('redis', id)));
      assert.equal(fit.expired, 3);
      assert.ok(fit.maxSeconds >= 1.5 && fit.maxSeconds < 3, `holds end as the key expires, not as the work does: ${fit.maxSeconds}`);
      assert.match(fit.text, /; the lock expires after (1\.\d|2) s with nothing renewing it; 3 of 3 holds ran until it expired: a second holder can get in$/);
    } finally {
      watch.dispose();
    }
  });
});

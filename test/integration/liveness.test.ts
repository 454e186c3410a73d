import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import type { LockBackend, LockWatch } from '../../src/core/backend';
import { EtcdBackend } from '../../src/core/etcd/etcdBackend';
import { keyId } from '../../src/core/keys';
import { openBackend } from '../../src/core/stores';
import { startEtcd, type EtcdServer } from '../harness/etcd';
import { memberLiveness, type Liveness } from '../../src/core/liveness';
import { ZooKeeperBackend } from '../../src/core/zookeeper/zookeeperBackend';
import { KazooLock } from '../harness/kazoo';
import { PythonPeer } from '../harness/pythonPeer';
import { eventually, startRedis, type RedisServer } from '../harness/redis';
import { startZooKeeper, type ZooKeeperServer } from '../harness/zookeeper';

/**
 * Whether a holder is alive, told against real servers and real clients: a paused holder (SIGSTOP) from a dead one
 * (SIGKILL), as far as each store can tell them apart.
 */

const b = (s: string) => Buffer.from(s);

describe('ZooKeeper: a holder\'s session, from cons', { timeout: 120_000 }, () => {
  let server: ZooKeeperServer;
  let backend: ZooKeeperBackend;
  const peers: KazooLock[] = [];
  const SESSION_S = 9;

  before(async () => {
    server = await startZooKeeper({ fourLetterWords: ['srvr', 'cons'], maxSessionTimeoutMs: 20_000 });
    backend = await ZooKeeperBackend.open({ store: 'zookeeper', endpoints: [server.url], dialTimeoutMs: 2000 });
  });
  after(async () => {
    backend.close();
    await server.dispose();
  });
  afterEach(async () => {
    for (const p of peers.splice(0)) p.dispose();
  });

  const holderLiveness = async (path: string): Promise<Liveness | undefined> => {
    const lock = (await backend.list([b(path)])).locks.find((l) => l.name.equals(b(path)));
    return lock?.holder ? memberLiveness(lock.holder, undefined) : undefined;
  };
  const hold = async (path: string) => {
    const peer = new KazooLock(`127.0.0.1:${server.port}`, path, { identifier: 'worker', sessionSeconds: SESSION_S });
    peers.push(peer);
    await peer.until(['acquired']);
    return peer;
  };

  test('a running holder is alive; frozen (SIGSTOP), paused while its connection stays open and silent', async () => {
    const peer = await hold('/live/paused');
    const alive = await holderLiveness('/live/paused');
    assert.equal(alive?.state, 'alive', alive?.evidence);
    assert.match(alive!.evidence, /its client 127\.0\.0\.1:\d+ is connected, heard from [\d.]+ s ago \(cons on 127\.0\.0\.1:\d+\)/);
    peer.signal('SIGSTOP');
    await eventually(async () => (await holderLiveness('/live/paused'))?.state === 'paused', 8_000, 'told paused');
    assert.match((await holderLiveness('/live/paused'))!.evidence, /connected but silent for [\d.]+ s/);
    peer.signal('SIGCONT');
    await eventually(async () => (await holderLiveness('/live/paused'))?.state === 'alive', 8_000, 'alive again once resumed');
  });

  test('a killed holder (SIGKILL) is gone while its node waits for the session to time out', async () => {
    const peer = await hold('/live/killed');
    peer.signal('SIGKILL');
    await eventually(async () => (await holderLiveness('/live/killed'))?.state === 'gone', 4_000, 'told gone before the session expires');
    assert.match((await holderLiveness('/live/killed'))!.evidence, /its session has no client connected/);
  });

  test('where cons is not allowed, nothing is claimed and the listing says what to enable', async () => {
    const plain = await startZooKeeper();
    const other = await ZooKeeperBackend.open({ store: 'zookeeper', endpoints: [plain.url], dialTimeoutMs: 2000 });
    try {
      const peer = new KazooLock(`127.0.0.1:${plain.port}`, '/live/plain', { identifier: 'worker' });
      peers.push(peer);
      await peer.until(['acquired']);
      const listing = await other.list([b('/live')]);
      assert.match(listing.hidden ?? '', /does not allow cons.*4lw\.commands\.whitelist=srvr,cons/);
      assert.equal(memberLiveness(listing.locks[0].holder!, undefined).state, 'unknown');
    } finally {
      other.close();
      await plain.dispose();
    }
  });
});

describe('etcd: a holder\'s lease, from its TTL', { timeout: 120_000 }, () => {
  let etcd: EtcdServer;
  let backend: EtcdBackend;
  const holders: ChildProcess[] = [];

  before(async () => {
    etcd = await startEtcd();
    backend = await EtcdBackend.open({ store: 'etcd', endpoints: [etcd.endpoint], dialTimeoutMs: 2000 });
  });
  after(async () => {
    for (const h of holders) h.kill('SIGKILL');
    backend.close();
    await etcd.dispose();
  });

  const holderLiveness = async (name: string): Promise<Liveness | undefined> => {
    const listing = await backend.list([b(name)]);
    const holder = listing.locks.find((l) => l.name.equals(b(name)))?.holder;
    return holder ? memberLiveness(holder, listing.lease(holder.lease)) : undefined;
  };
  /** `etcdctl lock` with a 4 s lease, renewed every third of it while the process runs. */
  const hold = async (name: string) => {
    const proc = spawn('etcdctl', [`--endpoints=${etcd.endpoint}`, 'lock', '--ttl=4', name], { stdio: ['ignore', 'pipe', 'inherit'] });
    holders.push(proc);
    await eventually(async () => (await holderLiveness(name)) !== undefined, 10_000, 'holding');
    return proc;
  };

  // etcd sees only keepalives: a frozen holder and a dead one both stop them, and both leases count down alike until
  // the lease runs out. Only then is the holder gone.
  for (const signal of ['SIGSTOP', 'SIGKILL'] as const) {
    test(`a renewing holder is alive; after ${signal}, paused-or-gone: etcd cannot tell which until the lease runs out`, async () => {
      const name = `live-${signal}`;
      const proc = await hold(name);
      const alive = await holderLiveness(name);
      assert.equal(alive?.state, 'alive', alive?.evidence);
      assert.match(alive!.evidence, /^renewed or granted [\d.]+ s ago \([\d.]+ s of 4 s left\)$/);
      proc.kill(signal);
      await eventually(async () => (await holderLiveness(name))?.state === 'paused', 6_000, 'told not renewed');
      assert.match((await holderLiveness(name))!.evidence, /is not being renewed .*paused, gone, or never renews it; the store cannot tell which/);
      await eventually(async () => (await holderLiveness(name)) === undefined, 8_000, 'the lease ran out and took the key');
      if (signal === 'SIGSTOP') proc.kill('SIGKILL');
    });
  }
});

/**
 * redis-py: a `Lock(timeout=4)` kept by a thread that extends it back to 4 s every second (reacquire), as a worker
 * renews a lock it holds for long; says `acquired <token>`.
 */
const REDIS_PY_RENEWING = String.raw`
import os, sys, threading, time, redis
gate, url, name = sys.argv[1:4]
# thread_local=False: the renewing thread must see the token the main thread acquired with.
lock = redis.Redis.from_url(url).lock(name, timeout=4, sleep=0.05, thread_local=False)
lock.acquire()
def renew():
    while True:
        time.sleep(1)
        lock.reacquire()
threading.Thread(target=renew, daemon=True).start()
print('acquired', lock.local.token.decode(), flush=True)
while not os.path.exists(gate):
    time.sleep(0.05)
`;

describe('Redis: a holder\'s key, from PTTL samples', { timeout: 120_000 }, () => {
  let redis: RedisServer;
  let backend: LockBackend;
  let watch: LockWatch;
  const peers: PythonPeer[] = [];

  before(async () => {
    redis = await startRedis({ notify: 'KEA' });
    backend = await openBackend({ store: 'redis', endpoints: [redis.url] });
    // Sampled as the tree's watch samples, only more often: one read cannot tell a renewal (Redis never says a grant).
    watch = backend.watch([b('live:')], { leaseSampleIntervalMs: 250, pollIntervalMs: 250 });
    await watch.start();
  });
  after(async () => {
    peers.forEach((p) => p.dispose());
    watch?.dispose();
    backend?.close();
    await redis?.dispose();
  });

  const holderLiveness = (name: string): Liveness | undefined => {
    const holder = watch.lock(keyId(b(name)))?.holder;
    return holder ? memberLiveness(holder, watch.lease(holder.lease)) : undefined;
  };

  // Redis sees only the PEXPIREs: a frozen holder and a dead one both stop them, and both keys count down alike until
  // the key expires and its lock goes with it. Nothing in Redis tells a paused holder from a dead one, before or after.
  for (const signal of ['SIGSTOP', 'SIGKILL'] as const) {
    test(`a renewing redis-py holder is alive; after ${signal}, paused-or-gone: Redis cannot tell which, and the key expires either way`, async () => {
      const name = `live:${signal}`;
      const peer = new PythonPeer('redis-py', REDIS_PY_RENEWING, [redis.url, name]);
      peers.push(peer);
      await peer.until(['acquired']);
      await eventually(() => holderLiveness(name)?.state === 'alive', 8_000, 'a renewal seen');
      assert.match(holderLiveness(name)!.evidence, /^renewed [\d.]+ s ago \([\d.]+ s of [\d.]+ s left\)$/);
      peer.signal(signal);
      await eventually(() => holderLiveness(name)?.state === 'paused', 6_000, 'told not renewed');
      assert.match(holderLiveness(name)!.evidence, /^its TTL is not being renewed .*: its holder is paused, gone, or never renews it; the store cannot tell which until it runs out \(last renewal seen [\d.]+ s ago\)$/);
      await eventually(() => holderLiveness(name) === undefined, 8_000, 'the key expired and took the lock');
      if (signal === 'SIGSTOP') peer.signal('SIGKILL');
    });
  }
});

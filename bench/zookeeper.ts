import { DEFAULT_DIAL_TIMEOUT_MS } from '../src/core/profile';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { keyId } from '../src/core/keys';
import type { ChangeSet } from '../src/core/lockState';
import { sleep } from '../src/core/sleep';
import { ZooKeeperBackend } from '../src/core/zookeeper/zookeeperBackend';
import { startZooKeeper, type StandaloneOptions, type ZooKeeperServer } from '../test/harness/zookeeper';
import { handoffFigures, stampedRound, urlContender } from './handoff';
import { percentile, round } from './stats';
import { benchSession, createContender } from './zkNodeOwner';

/**
 * The ZooKeeper store's scenarios, against one Debian ZooKeeper server started here (standalone, loopback, the test
 * harness's settings) and, for the handoff, kazoo's own `Lock` (Debian's python3-kazoo, /usr/bin/python3) in the same
 * run. Every contender node is named as kazoo names its own (`<uuid4 hex>__lock__<seq>`), the layout LockLens joins
 * a lock in when its holder is a kazoo node, as the handoff's barrier is (a free name it takes in Curator's by default).
 */

export async function withZooKeeper<T>(f: (server: ZooKeeperServer) => Promise<T>, options: StandaloneOptions = {}): Promise<T> {
  // The harness gives a test's server, which holds a few nodes, a 128 MB heap. With zk_list's 100,000 nodes and the
  // replies queued for their reader it ran back-to-back full collections (0.3-0.8 s each, by jstat) while answering
  // the listing. HotSpot applies _JAVA_OPTIONS after the command line, so this heap wins; only the server's JVM is
  // started while it is set.
  const javaOptions = process.env._JAVA_OPTIONS;
  process.env._JAVA_OPTIONS = '-Xmx1g';
  let server: ZooKeeperServer;
  try {
    server = await startZooKeeper(options);
  } finally {
    if (javaOptions === undefined) delete process.env._JAVA_OPTIONS;
    else process.env._JAVA_OPTIONS = javaOptions;
  }
  try {
    return await f(server);
  } finally {
    await server.dispose();
  }
}

/**
 * `locks` × `perLock` contender nodes (kazoo's layout: a persistent parent per lock, ephemeral sequential children),
 * made by a process of their own (bench/zkNodeOwner.ts), then listed and recognised by `ZooKeeperBackend.list` (a
 * getChildren per parent, a getData per contender, at most 1,000 in flight): time and heap, at the default dial
 * timeout (each request's deadline starts when it is sent).
 */
export async function zkList(server: ZooKeeperServer, locks = 10_000, perLock = 10, dialTimeoutMs = DEFAULT_DIAL_TIMEOUT_MS) {
  const root = '/bench/list';
  const nodes = locks * perLock;
  const owner = fork(join(__dirname, 'zkNodeOwner.js'), [server.url, root, String(locks), String(perLock)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ended = once(owner, 'exit');
  try {
    const [{ createMs }] = (await Promise.race([once(owner, 'message'), ended.then(() => Promise.reject(new Error('zk_list: the node owner exited')))])) as [{ createMs: number }];
    const backend = await ZooKeeperBackend.open({ store: 'zookeeper', endpoints: [server.url], dialTimeoutMs });
    try {
      global.gc?.();
      const heapBefore = process.memoryUsage().heapUsed;
      const t0 = performance.now();
      const listing = await backend.list([Buffer.from(root)]);
      const ms = performance.now() - t0;
      global.gc?.();
      const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
      const members = listing.locks.reduce((n, l) => n + (l.holder ? 1 : 0) + l.waiters.length, 0);
      if (listing.locks.length !== locks || members !== nodes) throw new Error(`zk_list listed ${listing.locks.length} of ${locks} locks, ${members} of ${nodes} nodes`);
      return { nodes, locks, create_ms: round(createMs, 0), dial_timeout_ms: dialTimeoutMs, ms: round(ms, 0), heap_mb: round(heapMb, 1) };
    } finally {
      backend.close();
    }
  } finally {
    if (owner.connected) owner.disconnect();
    await ended;
  }
}

/**
 * Create or delete of a contender → the live watch's change set showing it (the lock held, or gone), at `perSecond`
 * over `locks` lock parents, alternating per lock (the first `warmup` not counted). The watch is ZooKeeper's own
 * one-shot watches, set again by every read that an event causes. The views' coalescing is off, as in etcd's
 * watch_to_model: their pacing is a policy, measured by etcd's storm.
 */
export async function zkWatchToModel(server: ZooKeeperServer, events = 1000, perSecond = 200, warmup = 100, locks = 50) {
  const root = '/bench/w2m';
  const parents = Array.from({ length: locks }, (_, i) => `${root}/l${i}`);
  const writer = await benchSession(server.url);
  const backend = await ZooKeeperBackend.open({ store: 'zookeeper', endpoints: [server.url] });
  const watch = backend.watch([Buffer.from(root)], { minNotifyIntervalMs: 0 });
  try {
    await Promise.all(parents.map((p) => writer.mkdirp(p)));
    await watch.start();
    const parentOf = new Map(parents.map((p) => [keyId(Buffer.from(p)), p]));
    // `<parent> held` when its contender was created, `<parent> free` when deleted: what the next change set must show.
    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    watch.onDidChangeLocks((c: ChangeSet) => {
      const now = performance.now();
      const seen = (what: string) => {
        const t = sentAt.get(what);
        if (t === undefined) return;
        latencies.push(now - t);
        sentAt.delete(what);
      };
      for (const lock of c.changed) if (lock.holder) seen(`${lock.name.toString()} held`);
      for (const id of c.removed) seen(`${parentOf.get(id)} free`);
    });
    const created = new Map<string, Promise<string>>();
    // How long ZooKeeper took to answer the writer (its commit, an fsync included): the part of the latency that is
    // the server's, whoever watches.
    const commits: number[] = [];
    const start = performance.now();
    for (let i = 0; i < warmup + events; i++) {
      const due = start + (i * 1000) / perSecond;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const parent = parents[i % locks];
      const create = Math.floor(i / locks) % 2 === 0;
      const sent = performance.now();
      if (i >= warmup) sentAt.set(`${parent} ${create ? 'held' : 'free'}`, sent);
      // A lock's create was answered long before its delete is due (1 / (perSecond / locks) s later).
      let write: Promise<unknown>;
      if (create) created.set(parent, (write = createContender(writer, parent)));
      else write = created.get(parent)!.then((path) => writer.remove(path));
      if (i >= warmup) void write.then(() => commits.push(performance.now() - sent));
    }
    await sleep(500);
    return {
      offered_per_s: perSecond,
      locks,
      events: latencies.length,
      p50: round(percentile(latencies, 50)),
      p99: round(percentile(latencies, 99)),
      commit_p50: round(percentile(commits, 50)),
      commit_p99: round(percentile(commits, 99)),
    };
  } finally {
    watch.dispose();
    backend.close();
    await writer.close();
  }
}

/**
 * kazoo's `Lock` as a contender: blocking acquire (a node, then a watch on the node just ahead), runs the command,
 * releases (deletes its node), ends its session. What a Python service using kazoo does.
 */
const KAZOO_CONTENDER = String.raw`
import subprocess, sys
from kazoo.client import KazooClient
hosts, path, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
zk = KazooClient(hosts=hosts)
zk.start(timeout=15)
lock = zk.Lock(path)
lock.acquire(timeout=120)
try:
    subprocess.run(cmd, check=True)
finally:
    lock.release()
    zk.stop()
`;

export type ZkTool = 'locklens' | 'kazoo';

/**
 * The handoff scenario of bench/handoff.ts on ZooKeeper: `contenders` processes of one tool queue on one lock, where a
 * barrier contender of the bench's own (a kazoo node) holds it until every one has its node; a handoff is the gap from
 * one holder's end stamp to the next one's start stamp. Both tools follow ZooKeeper's recipe (the lowest sequence
 * holds; a waiter is told when the node just ahead goes and reads the children again before it holds), so a handoff
 * is the holder's delete, the event to the next waiter, its read and its command's start. LockLens's waiters also
 * watch the lock's children, for their place in the queue: every waiting CLI wakes at each handoff, where only
 * kazoo's next holder does (docs/BENCHMARKS.md has what that costs).
 */
export async function zkHandoffRound(tool: ZkTool, server: ZooKeeperServer, contenders: number, name: string): Promise<number[]> {
  const session = await benchSession(server.url);
  try {
    await session.mkdirp(name);
    const barrier = await createContender(session, name, Buffer.from('bench barrier'));
    return await stampedRound(tool, contenders, urlContender(tool, server.url, name, KAZOO_CONTENDER, `127.0.0.1:${server.port}`), async () => {
      while (((await session.children(name)) ?? []).length < contenders + 1) await sleep(20);
      await sleep(300); // let every waiter settle into its watch
      await session.remove(barrier);
    });
  } finally {
    await session.close();
  }
}

export async function zkHandoff(server: ZooKeeperServer, contenders = 12, rounds = 5) {
  const samples: Record<ZkTool, number[]> = { locklens: [], kazoo: [] };
  for (let r = 0; r < rounds; r++) {
    for (const tool of ['kazoo', 'locklens'] as const) samples[tool].push(...(await zkHandoffRound(tool, server, contenders, `/bench/handoff/${tool}-${r}`)));
  }
  return handoffFigures(contenders, samples.locklens, samples.kazoo, 'kazoo');
}

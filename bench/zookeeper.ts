import { DEFAULT_DIAL_TIMEOUT_MS } from '../src/core/profile';
import { execFile, fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { promisify } from 'node:util';
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
 * kazoo listing a tree of locks as an expert user would: the root's children, then every lock's children and every
 * contender's data through the async API, all pipelined on the one session (each lock's reads sent as soon as its
 * children are in, while the other locks' lists are still on their way). It keeps what it read, as a listing does.
 */
const KAZOO_LISTER = String.raw`
import json, sys, time
from kazoo.client import KazooClient
hosts, root = sys.argv[1], sys.argv[2]
zk = KazooClient(hosts=hosts)
zk.start(timeout=15)
t0, cpu0 = time.perf_counter(), time.process_time()
locks = zk.get_children(root)
listed = [(lock, zk.get_children_async(root + '/' + lock)) for lock in locks]
reads = [zk.get_async(root + '/' + lock + '/' + child) for lock, children in listed for child in children.get()]
nodes = [read.get() for read in reads]
ms, cpu_ms = (time.perf_counter() - t0) * 1000, (time.process_time() - cpu0) * 1000
zk.stop()
print(json.dumps({'ms': ms, 'cpu_ms': cpu_ms, 'locks': len(locks), 'nodes': len(nodes)}))
`;

async function kazooList(server: ZooKeeperServer, root: string): Promise<{ ms: number; cpu_ms: number; locks: number; nodes: number }> {
  const { stdout } = await promisify(execFile)('/usr/bin/python3', ['-c', KAZOO_LISTER, `127.0.0.1:${server.port}`, root]);
  return JSON.parse(stdout) as { ms: number; cpu_ms: number; locks: number; nodes: number };
}

/**
 * `locks` × `perLock` contender nodes (kazoo's layout: a persistent parent per lock, ephemeral sequential children),
 * made by a process of their own (bench/zkNodeOwner.ts), then listed and recognised by `ZooKeeperBackend.list` at the
 * default dial timeout (time, and the heap the listing holds after a collection), and by kazoo (KAZOO_LISTER) in the
 * same run, alternately, `rounds` times each; `ratio` is LockLens's fastest over kazoo's fastest, `cpu_ratio` the CPU
 * time of those two listings (each process's own: user and system), which says more than the time on a busy machine.
 */
export async function zkList(server: ZooKeeperServer, locks = 10_000, perLock = 10, rounds = 2, dialTimeoutMs = DEFAULT_DIAL_TIMEOUT_MS) {
  const root = '/bench/list';
  const nodes = locks * perLock;
  const owner = fork(join(__dirname, 'zkNodeOwner.js'), [server.url, root, String(locks), String(perLock)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ended = once(owner, 'exit');
  try {
    const [{ createMs }] = (await Promise.race([once(owner, 'message'), ended.then(() => Promise.reject(new Error('zk_list: the node owner exited')))])) as [{ createMs: number }];
    const backend = await ZooKeeperBackend.open({ store: 'zookeeper', endpoints: [server.url], dialTimeoutMs });
    try {
      const kazoo: { ms: number; cpuMs: number }[] = [];
      const ours: { ms: number; cpuMs: number; heapMb: number }[] = [];
      for (let r = 0; r < rounds; r++) {
        const k = await kazooList(server, root);
        if (k.locks !== locks || k.nodes !== nodes) throw new Error(`zk_list: kazoo listed ${k.locks} of ${locks} locks, ${k.nodes} of ${nodes} nodes`);
        kazoo.push({ ms: k.ms, cpuMs: k.cpu_ms });
        global.gc?.();
        const heapBefore = process.memoryUsage().heapUsed;
        const t0 = performance.now();
        const cpu0 = process.cpuUsage();
        const listing = await backend.list([Buffer.from(root)]);
        const ms = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        global.gc?.();
        const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
        const members = listing.locks.reduce((n, l) => n + (l.holder ? 1 : 0) + l.waiters.length, 0);
        if (listing.locks.length !== locks || members !== nodes) throw new Error(`zk_list listed ${listing.locks.length} of ${locks} locks, ${members} of ${nodes} nodes`);
        ours.push({ ms, cpuMs: (cpu.user + cpu.system) / 1000, heapMb });
      }
      const fastest = (runs: { ms: number; cpuMs: number }[]) => runs.reduce((a, b) => (b.ms < a.ms ? b : a));
      const [best, kazooBest] = [fastest(ours), fastest(kazoo)];
      return {
        nodes,
        locks,
        create_ms: round(createMs, 0),
        dial_timeout_ms: dialTimeoutMs,
        ms: round(best.ms, 0),
        ms_max: round(Math.max(...ours.map((o) => o.ms)), 0),
        cpu_ms: round(best.cpuMs, 0),
        heap_mb: round(Math.max(...ours.map((o) => o.heapMb)), 1),
        kazoo_ms: round(kazooBest.ms, 0),
        kazoo_ms_max: round(Math.max(...kazoo.map((k) => k.ms)), 0),
        kazoo_cpu_ms: round(kazooBest.cpuMs, 0),
        ratio: round(best.ms / kazooBest.ms, 2),
        cpu_ratio: round(best.cpuMs / kazooBest.cpuMs, 2),
      };
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

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import type { ChangeSet } from '../src/core/lockState';
import { RedisBackend } from '../src/core/redis/redisBackend';
import { startRedis, type RedisServer } from '../test/harness/redis';
import { handoffFigures, stampedRound, urlContender } from './handoff';
import { percentile, round } from './stats';

/**
 * The Redis store's scenarios, against Debian's redis-server started here (loopback, no persistence), and redis-py
 * (Debian's python3-redis, /usr/bin/python3) in the same run: its SCAN and pipelines for the listing, its own `Lock`
 * for the handoff.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const run = promisify(execFile);

/** One server with keyspace notifications on (what LockLens uses when it may) and one without (it polls). */
export async function withRedis<T>(f: (servers: { notify: RedisServer; plain: RedisServer }) => Promise<T>): Promise<T> {
  const [notify, plain] = await Promise.all([startRedis({ notify: 'KEA' }), startRedis()]);
  try {
    return await f({ notify, plain });
  } finally {
    await Promise.all([notify.dispose(), plain.dispose()]);
  }
}

/**
 * The reference for redis_list: redis-py (Debian's python3-redis, no hiredis) reading what LockLens reads of a token
 * lock, as someone who knows Redis would: `SCAN` with a MATCH on the prefix and a COUNT of 1,000, and per page one
 * pipeline (no transaction) of TYPE, PTTL and GET of every key. Timed in the process, after connecting.
 */
const REDIS_PY_LISTER = String.raw`
import json, sys, time, redis
r = redis.Redis.from_url(sys.argv[1])
r.ping()
t0, c0 = time.perf_counter(), time.process_time()
found, cursor = 0, 0
while True:
    cursor, keys = r.scan(cursor, match=sys.argv[2] + '*', count=1000)
    if keys:
        p = r.pipeline(transaction=False)
        for k in keys:
            p.type(k)
            p.pttl(k)
            p.get(k)
        replies = p.execute(raise_on_error=False)
        found += sum(1 for i in range(0, len(replies), 3) if replies[i] == b'string' and replies[i + 2] is not None)
    if cursor == 0:
        break
print(json.dumps({'keys': found, 'ms': (time.perf_counter() - t0) * 1000, 'cpu_ms': (time.process_time() - c0) * 1000}))
`;

/**
 * `keys` token locks (redis-py's layout: a string with a PX), read and recognised by `list`: time, CPU and heap, and
 * redis-py reading the same keys (REDIS_PY_LISTER) just before, in the same run.
 */
export async function redisList(server: RedisServer, keys = 100_000) {
  const raw = new Redis(server.url, { protocol: 2 });
  try {
    for (let i = 0; i < keys; i += 1000) {
      const p = raw.pipeline();
      for (let k = i; k < Math.min(keys, i + 1000); k++) p.set(`bench/list/l${String(k).padStart(6, '0')}`, crypto.randomUUID(), 'PX', 600_000);
      await p.exec();
    }
    // CPU beside wall time, the client's and the server's: on a shared machine they hold where wall time does not.
    const serverCpu = async () => {
      const info = await raw.info('cpu');
      return 1000 * (Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]));
    };
    let server0 = await serverCpu();
    const { stdout } = await run('/usr/bin/python3', ['-c', REDIS_PY_LISTER, server.url, 'bench/list/']);
    const reference = JSON.parse(stdout) as { keys: number; ms: number; cpu_ms: number };
    const referenceServerMs = (await serverCpu()) - server0;
    if (reference.keys !== keys) throw new Error(`redis-py read ${reference.keys} of ${keys} token locks`);
    const backend = await RedisBackend.open({ store: 'redis', endpoints: [server.url] });
    try {
      global.gc?.();
      const heapBefore = process.memoryUsage().heapUsed;
      server0 = await serverCpu();
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      const listing = await backend.list([Buffer.from('bench/list/')]);
      const ms = performance.now() - t0;
      const used = process.cpuUsage(cpu);
      const serverMs = (await serverCpu()) - server0;
      global.gc?.();
      const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
      if (listing.locks.length !== keys) throw new Error(`redis_list listed ${listing.locks.length} of ${keys} locks`);
      return {
        keys,
        ms: round(ms, 0),
        cpu_ms: round((used.user + used.system) / 1000, 0),
        server_cpu_ms: round(serverMs, 0),
        heap_mb: round(heapMb, 1),
        redis_py_ms: round(reference.ms, 0),
        redis_py_cpu_ms: round(reference.cpu_ms, 0),
        redis_py_server_cpu_ms: round(referenceServerMs, 0),
        ratio: round(ms / reference.ms),
        cpu_ratio: round((used.user + used.system) / 1000 / reference.cpu_ms),
      };
    } finally {
      backend.close();
    }
  } finally {
    raw.disconnect();
  }
}

/**
 * SET of a token lock → the live watch's change set naming it, at `perSecond` (the first `warmup` not counted). With
 * keyspace notifications on, pushed; with them off, LockLens polls (`pollIntervalMs`), which bounds the latency.
 */
export async function redisWatchToModel(server: RedisServer, notifications: boolean, events = 1000, perSecond = 200, warmup = 100, pollIntervalMs = 250) {
  const backend = await RedisBackend.open({ store: 'redis', endpoints: [server.url] });
  const raw = new Redis(server.url, { protocol: 2 });
  // Coalescing off, as in etcd's watch_to_model: views' pacing is a policy, measured by etcd's storm.
  const watch = backend.watch([Buffer.from('bench/w2m/')], { pollIntervalMs: notifications ? 60_000 : pollIntervalMs, minNotifyIntervalMs: 0 });
  try {
    await watch.start();
    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    watch.onDidChangeLocks((c: ChangeSet) => {
      const now = performance.now();
      for (const lock of c.changed) {
        const token = lock.holder?.owner;
        const t = token === undefined ? undefined : sentAt.get(`${lock.name.toString()} ${token}`);
        if (t !== undefined) {
          latencies.push(now - t);
          sentAt.delete(`${lock.name.toString()} ${token}`);
        }
      }
    });
    const start = performance.now();
    for (let i = 0; i < warmup + events; i++) {
      const due = start + (i * 1000) / perSecond;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const name = `bench/w2m/l${i % 50}`;
      const token = `t${i}`;
      if (i >= warmup) sentAt.set(`${name} ${token}`, performance.now());
      void raw.set(name, token, 'PX', 60_000);
    }
    await sleep(notifications ? 500 : 3 * pollIntervalMs);
    return {
      notifications: notifications ? 1 : 0,
      offered_per_s: perSecond,
      poll_interval_ms: notifications ? 0 : pollIntervalMs,
      events: latencies.length,
      p50: round(percentile(latencies, 50)),
      p99: round(percentile(latencies, 99)),
    };
  } finally {
    watch.dispose();
    raw.disconnect();
    backend.close();
  }
}

/**
 * redis-py's `Lock` as a contender: blocking acquire (it polls every `sleep` s, 0.1 by default), runs the command,
 * releases. What a Python service using redis-py does.
 */
const REDIS_PY_CONTENDER = String.raw`
import subprocess, sys, redis
url, name, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
lock = redis.Redis.from_url(url).lock(name, timeout=10)
lock.acquire(blocking=True, blocking_timeout=120)
try:
    subprocess.run(cmd, check=True)
finally:
    lock.release()
`;

export type RedisTool = 'locklens' | 'redis-py';

/**
 * The handoff scenario of bench/handoff.ts on Redis: `contenders` processes of one tool contend for one token lock
 * while a barrier holder (a plain SET) keeps it until all have started; a handoff is the gap from one holder's end
 * stamp to the next one's start stamp. Neither tool queues on a token lock: both try again every 100 ms (LockLens's
 * waiter sleeps as redis-py's does), so the figures are polling figures.
 */
export async function redisHandoffRound(tool: RedisTool, server: RedisServer, contenders: number, name: string): Promise<number[]> {
  const raw = new Redis(server.url, { protocol: 2 });
  try {
    await raw.set(name, 'barrier', 'PX', 60_000);
    return await stampedRound(tool, contenders, urlContender(tool, server.url, name, REDIS_PY_CONTENDER, server.url), async () => {
      await sleep(tool === 'locklens' ? 1500 : 1000); // every contender started and polling
      await raw.del(name);
    });
  } finally {
    raw.disconnect();
  }
}

export async function redisHandoff(server: RedisServer, contenders = 12, rounds = 2) {
  const samples: Record<RedisTool, number[]> = { locklens: [], 'redis-py': [] };
  for (let r = 0; r < rounds; r++) {
    for (const tool of ['redis-py', 'locklens'] as const) samples[tool].push(...(await redisHandoffRound(tool, server, contenders, `bench/redis-handoff/${tool}-${r}`)));
  }
  return handoffFigures(contenders, samples.locklens, samples['redis-py'], 'redis_py');
}

import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTests } from '@vscode/test-electron';
import type { EtcdConnection } from '../src/core/etcd/connect';
import { readPrefixes } from '../src/core/etcd/keyspace';
import { leaseHex } from '../src/core/keys';
import { LeaseTracker } from '../src/core/etcd/leases';
import { LiveLocks } from '../src/core/etcd/liveLocks';
import { LockModel } from '../src/core/etcd/lockModel';
import { Mutex } from '../src/core/etcd/mutex';
import { Session } from '../src/core/etcd/session';
import { shimPath } from '../test/vscode/runTests';
import { handoffFigures, handoffRound, type Tool } from './handoff';
import { ROOT } from './paths';
import { percentile, round } from './stats';
import type { ExtensionHostFigures } from './vscode/extensionHost';

export interface Bench {
  readonly conn: EtcdConnection;
  /** A second connection, so load generators and the measured engine do not share one HTTP/2 session. */
  readonly load: EtcdConnection;
  readonly endpoint: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function handoff(b: Bench, contenders = 20, rounds = 3) {
  const samples: Record<Tool, number[]> = { locklens: [], etcdctl: [] };
  for (let r = 0; r < rounds; r++) {
    for (const tool of ['etcdctl', 'locklens'] as const) {
      samples[tool].push(...(await handoffRound(tool, b.conn, b.endpoint, contenders, `bench/handoff/${contenders}/${tool}-${r}`)));
    }
  }
  return handoffFigures(contenders, samples.locklens, samples.etcdctl, 'etcdctl');
}

/**
 * Acquire/release loops for `seconds`: `contenders` sessions of the core mutex in this process, against
 * `contenders` shell loops of `etcdctl lock NAME -- true` (the etcdctl-equivalent: it has no in-process API, so each
 * of its acquisitions includes a process start, which is what a script using it pays).
 */
export async function cycle(b: Bench, contenders = 20, seconds = 5) {
  const sessions = await Promise.all(Array.from({ length: contenders }, () => Session.create(b.conn, 30)));
  let acquires = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    sessions.map(async (s) => {
      const m = new Mutex(s, 'bench/cycle/core');
      while (Date.now() < until) {
        const hold = await m.acquire();
        acquires++;
        await hold.release();
      }
    }),
  );
  await Promise.all(sessions.map((s) => s.revoke()));
  const coreRate = acquires / seconds;

  let etcdctlAcquires = 0;
  const loops = Array.from({ length: contenders }, async () => {
    const end = Date.now() + seconds * 1000;
    while (Date.now() < end) {
      await new Promise<void>((resolve, reject) => {
        const p = spawn('etcdctl', [`--endpoints=${b.endpoint}`, 'lock', 'bench/cycle/etcdctl', '--', 'true'], { stdio: 'ignore' });
        p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`etcdctl lock exited ${code}`))));
      });
      etcdctlAcquires++;
    }
  });
  await Promise.all(loops);
  return { contenders, seconds, locklens_acquires_per_s: round(coreRate, 1), etcdctl_acquires_per_s: round(etcdctlAcquires / seconds, 1) };
}

/**
 * Put → change set, with the view coalescing off (it is a view policy, measured by `storm`). The first `warmup`
 * events are sent but not counted: the figure is the steady state, not V8's first compilation of the path.
 */
export async function watchToModel(b: Bench, events = 3000, perSecond = 1000, warmup = 300) {
  const live = new LiveLocks(b.conn, [Buffer.from('bench/w2m/')], { minNotifyIntervalMs: 0 });
  await live.start();
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  live.onDidChange((c) => {
    const now = performance.now();
    for (const lock of c.changed) {
      const key = lock.holder?.key.toString() ?? '';
      const t = sentAt.get(key);
      if (t !== undefined && Number(key.slice(key.lastIndexOf('/') + 1)) >= warmup) latencies.push(now - t);
    }
  });
  const start = performance.now();
  for (let i = 0; i < warmup + events; i++) {
    const key = `bench/w2m/l${i % 100}/${i}`;
    const due = start + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    sentAt.set(key, performance.now());
    void b.load.client.kv.put({ key: Buffer.from(key), value: Buffer.alloc(0) });
  }
  await sleep(500);
  live.dispose();
  return { events: latencies.length, offered_per_s: perSecond, p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) };
}

/** 100,000 keys over 10,000 locks (UUID-recipe keys, 10 a lock): range read + model build, time and heap. */
export async function initialLoad(b: Bench, keys = 100_000, locks = 10_000) {
  const perTxn = 128;
  const inFlight: Promise<unknown>[] = [];
  for (let i = 0; i < keys; i += perTxn) {
    const ops = [];
    for (let k = i; k < Math.min(keys, i + perTxn); k++) {
      ops.push({ request_put: { key: Buffer.from(`bench/load/lock${String(k % locks).padStart(5, '0')}/${crypto.randomUUID()}`), value: Buffer.alloc(0) } });
    }
    inFlight.push(b.load.client.kv.txn({ success: ops }));
    if (inFlight.length >= 16) await Promise.all(inFlight.splice(0));
  }
  await Promise.all(inFlight);
  global.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const read = await readPrefixes(b.conn, [Buffer.from('bench/load/')]);
  const model = new LockModel();
  model.reload(() => true, read.records, read.revision);
  const built = model.locks().length;
  const ms = performance.now() - t0;
  global.gc?.();
  const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  if (built !== locks || model.keyCount !== keys) throw new Error(`initial_load built ${built} locks of ${model.keyCount} keys`);
  return { keys, locks, ms: round(ms, 0), heap_mb: round(heapMb, 1) };
}

/** Offer ≥ 5,000 events/s for `seconds`; the model must keep up with a bounded backlog and few notifications. */
export async function storm(b: Bench, seconds = 10, target = 6000) {
  const live = new LiveLocks(b.conn, [Buffer.from('bench/storm/')]);
  await live.start();
  const startRevision = live.model.revision;
  let notifications = 0;
  live.onDidChange(() => notifications++);
  let offered = 0;
  let lastWritten = startRevision;
  let maxBacklog = 0;
  const sampler = setInterval(() => (maxBacklog = Math.max(maxBacklog, lastWritten - live.model.revision)), 50);
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  const writers = Array.from({ length: 48 }, async (_, w) => {
    let i = 0;
    while (performance.now() < end) {
      if (offered >= ((performance.now() - t0) / 1000) * target) {
        await sleep(1);
        continue;
      }
      offered++;
      const res = await b.load.client.kv.put({ key: Buffer.from(`bench/storm/l${w % 50}/${i++ % 20}`), value: Buffer.alloc(0) });
      lastWritten = Math.max(lastWritten, Number(res.header.revision));
    }
  });
  await Promise.all(writers);
  const elapsed = (performance.now() - t0) / 1000;
  while (live.model.revision < lastWritten) await sleep(10);
  const drained = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  live.dispose();
  return {
    seconds: round(elapsed, 1),
    offered_events_per_s: round(offered / elapsed, 0),
    applied_events_per_s: round((live.model.revision - startRevision) / drained, 0),
    max_backlog: maxBacklog,
    notifications,
    notifications_per_s: round(notifications / drained, 1),
  };
}

export async function leaseSweep(b: Bench, leases = 1000) {
  const ids = await Promise.all(
    Array.from({ length: leases }, () => b.load.client.leaseClient.leaseGrant({ TTL: 120 }).then((r) => leaseHex(r.ID))),
  );
  const tracker = new LeaseTracker(b.conn, { concurrency: 32 });
  const t0 = performance.now();
  await tracker.sweep(ids);
  const ms = performance.now() - t0;
  if (tracker.all().length !== leases) throw new Error(`lease_sweep sampled ${tracker.all().length} of ${leases}`);
  return { leases, concurrency: 32, ms: round(ms, 0) };
}

/**
 * LockLens in a real VS Code (code-server here, through @vscode/test-electron's runTests and the code-server shim of
 * test/vscode; desktop VS Code with LOCKLENS_VSCODE=desktop): the production bundle's size, then `runs` cold
 * extension hosts, each running bench/vscode/extensionHost.ts (activation, then the tree over `locks` Go-style lock
 * keys and a burst of `burst` writes to them). Medians over the runs; each run's output goes to
 * bench/results/extension-host.log.
 */
export async function extension(b: Bench, runs = 3, locks = 2000, burst = 5000, leases = 20) {
  const bundle = `${ROOT}/dist/extension.js`;
  const prefix = '/bench/';
  // `/bench/l<i>/<lease hex>` over `leases` leases (a Go session can hold many mutexes on one lease).
  const granted = await Promise.all(Array.from({ length: leases }, () => b.load.client.leaseClient.leaseGrant({ TTL: 600 })));
  const figures: ExtensionHostFigures[] = [];
  try {
    const txns: Promise<unknown>[] = [];
    for (let i = 0; i < locks; i += 125) {
      const success = [];
      for (let k = i; k < Math.min(locks, i + 125); k++) {
        const lease = granted[k % leases].ID;
        success.push({ request_put: { key: Buffer.from(`${prefix}l${k}/${leaseHex(lease)}`), value: Buffer.alloc(0), lease } });
      }
      txns.push(b.load.client.kv.txn({ success }));
    }
    await Promise.all(txns);
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    const log = createWriteStream(join(ROOT, 'bench/results/extension-host.log'));
    try {
      for (let r = 0; r < runs; r++) figures.push(await extensionHostRun({ LOCKLENS_BENCH_ENDPOINT: b.endpoint, LOCKLENS_BENCH_PREFIX: prefix, LOCKLENS_BENCH_LOCKS: String(locks), LOCKLENS_BENCH_BURST: String(burst) }, log));
    } finally {
      log.end();
    }
  } finally {
    await Promise.all(granted.map((l) => b.load.client.leaseClient.leaseRevoke({ ID: l.ID })));
  }
  if (figures.some((f) => f.was_active)) throw new Error('extension: LockLens was active before the benchmark activated it');
  const med = (k: keyof ExtensionHostFigures) => round(percentile(figures.map((f) => Number(f[k])), 50), 1);
  const size = (f: string) => (existsSync(f) ? statSync(f).size : 0);
  return {
    // What activation loads, then what the first connection of each kind loads (and what the .vsix ships besides).
    bundle_bytes: statSync(bundle).size,
    store_etcd_bytes: size(`${ROOT}/dist/stores/etcd.js`),
    store_redis_bytes: size(`${ROOT}/dist/stores/redis.js`),
    runs,
    activation_ms: med('activation_ms'),
    locks,
    load_ms: med('load_ms'),
    render_first_ms: med('render_first_ms'),
    render_ms: med('render_ms'),
    burst_writes: burst,
    burst_ms: med('burst_ms'),
    burst_fires: med('burst_fires'),
    render_after_burst_ms: med('render_after_burst_ms'),
  };
}

/** One cold VS Code running bench/vscode/extensionHost.ts; its figures. */
async function extensionHostRun(env: Record<string, string>, log: NodeJS.WritableStream): Promise<ExtensionHostFigures> {
  const tmp = mkdtempSync(join(tmpdir(), 'locklens-bench-vscode-'));
  const resultFile = join(tmp, 'result.json');
  const desktop = process.env.LOCKLENS_VSCODE === 'desktop';
  try {
    mkdirSync(join(tmp, 'workspace'));
    await runTests({
      extensionDevelopmentPath: ROOT,
      extensionTestsPath: join(ROOT, 'out/bench/vscode/extensionHost.js'),
      vscodeExecutablePath: desktop ? undefined : shimPath,
      launchArgs: [join(tmp, 'workspace'), `--user-data-dir=${join(tmp, 'user-data')}`, `--extensions-dir=${join(tmp, 'extensions')}`, ...(desktop ? ['--disable-extensions'] : [])],
      extensionTestsEnv: { ...env, LOCKLENS_BENCH_RESULT: resultFile },
      stdout: log,
      stderr: log,
    });
    if (!existsSync(resultFile)) throw new Error('extension: the extension host wrote no figures (see bench/results/extension-host.log)');
    return JSON.parse(readFileSync(resultFile, 'utf8')) as ExtensionHostFigures;
  } finally {
    rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
  }
}

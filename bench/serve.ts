import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../src/core/sleep';
import { Procs, type Proc } from '../test/harness/cli';
import { startMariaDb } from '../test/harness/mariadb';
import { startPostgres } from '../test/harness/postgres';
import { startRedis } from '../test/harness/redis';
import { get, logLines, parseExposition, servingUrl, valueOf, type Exposition } from '../test/harness/serve';
import { startZooKeeper } from '../test/harness/zookeeper';
import { CLI, ROOT } from './paths';
import type { Bench } from './scenarios';
import { etcdStore, mariaDbStore, PASSWORDS_ENV, postgresStore, redisStore, zooKeeperStore, type StoreUnderLoad } from './serveStores';
import { percentile, round } from './stats';

/**
 * `locklens serve` (dist/locklens.js, a process of its own, as deployed) watching five connections of different stores
 * (etcd, Redis with keyspace notifications, ZooKeeper, PostgreSQL, MariaDB), `locksPerStore` locks each (see
 * serveStores.ts for who holds them), at the default --max-locks. In turn, each phase measured on its own so that one's
 * requests do not count in another's figures:
 *
 * - quiet: no changes, a scrape every 15 s (Prometheus' interval in deploy/prometheus/scrape.yml): the serve process's
 *   CPU (utime + stime from /proc/<pid>/stat over the phase, % of one core) and RSS (/proc/<pid>/status, sampled every
 *   second, and its peak, the kernel's high-water mark): what the watches' polls and lease/TTL sampling cost with
 *   nothing happening;
 * - steady: `changesPerSecond` lock changes spread over the five stores (a hold released, or a free lock taken again by
 *   another holder) by a bounded load generator in this process, after `warmupS` of it, scraped every 15 s: CPU, RSS,
 *   over the phase and minute by minute (`cpu_pct_m1`…, `rss_peak_mb_m1`…). Long, as serve runs: V8 keeps compiling
 *   the paths the load made hot for a minute or two on its worker threads (3-10 % of a core at first), and its heap
 *   keeps growing for minutes where a short phase saw it settled (docs/BENCHMARKS.md, serve, the fifth round);
 * - scrapes: `scrapes` GET /metrics one after another `scrapeGapMs` apart, each timed from the request to the last
 *   byte of the answer, the load still on (and, after the quiet phase, serve's own CPU time per scrape: scrapeCpu);
 * - delay: per store, the probe lock's waiter joins and leaves, one change at a time, while /metrics is scraped every
 *   `followMs`: from sending the write to the end of the first scrape showing it. This includes the wait for the next
 *   scrape and the scrape itself, as a scraper sees it; the scrapes also make serve busier than Prometheus would.
 */
export async function serveUnderLoad(
  b: Bench,
  scale = 1,
  { locksPerStore = 2000, changesPerSecond = 200, quietS = 30, warmupS = 60, steadyS = 180, scrapes = 100, scrapeGapMs = 250, delayS = 60, followMs = 250 } = {},
) {
  // A shorter run (an A/B, a profile): every phase `scale` times as long.
  [quietS, warmupS, steadyS, scrapes, delayS] = [quietS, warmupS, steadyS, scrapes, delayS].map((n) => Math.round(n * scale));
  const [redis, zk, pg, maria] = await Promise.all([startRedis({ notify: 'KEA' }), startZooKeeper(), startPostgres(), startMariaDb()]);
  const stores: StoreUnderLoad[] = [];
  const procs = new Procs(b.endpoint);
  const dir = mkdtempSync(join(tmpdir(), 'locklens-bench-serve-'));
  try {
    // One store after another: set up all at once on a busy machine, the bench's ZooKeeper sessions missed their
    // pings and lost their connections mid-way. Each is pushed as it opens, to be closed below whatever follows.
    stores.push(await etcdStore(b.load, b.endpoint, locksPerStore));
    stores.push(await redisStore(redis, locksPerStore));
    stores.push(await zooKeeperStore(zk, locksPerStore));
    stores.push(await postgresStore(pg, locksPerStore));
    stores.push(await mariaDbStore(maria, locksPerStore));
    const config = join(dir, 'serve.yml');
    const writeConfig = (data?: string) =>
      writeFileSync(config, `listen: 127.0.0.1:0\n${data ? `data: ${data}\n` : ''}connections:\n${stores.map((s) => `  - ${s.config}\n`).join('')}`);
    // Where each store's load left off: the next build measured goes on from there (a lock released is taken next).
    const made = stores.map(() => 0);
    let builds = 0;
    const measure = async (entry: string, loaded: readonly number[]) => {
      const [last, ...flags] = entry.split(' ').filter(Boolean).reverse();
      // `floor`: not serve but what any watcher of these stores must do, with serve's client libraries (serveFloor.ts).
      const floor = last === 'floor';
      const cli = floor ? join(ROOT, 'out', 'bench', 'serveFloor.js') : last;
      // `--record` (not node's): serve records the history too, as deploy/locklens.example.yml has it, into a data dir
      // of its own (its size at the end is `data_mb`); without it nothing is recorded, as in the rounds before.
      const record = flags.indexOf('--record');
      const data = record < 0 ? undefined : (flags.splice(record, 1), join(dir, `data-${++builds}`));
      writeConfig(data);
      const started = performance.now();
      // e.g. LOCKLENS_BENCH_SERVE_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof': the profile is written at its SIGTERM.
      const nodeArgs = process.env.LOCKLENS_BENCH_SERVE_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
      const serve = procs.spawn(process.execPath, [...nodeArgs, ...flags.reverse(), cli, 'serve', '--config', config], { env: { ...PASSWORDS_ENV, ...UNIT_ENV } });
      const base = await servingUrl(serve);
      // Every lock seen: each connection's count is its locks and the probe lock, less one if a build measured before
      // left the load between a release and the taking again (an odd count of changes).
      if (floor) await serve.until((p) => logLines(p).some((l) => l.msg === 'ready'), 'the floor to read every store');
      else await until(base, (e) => stores.every((s, i) => valueOf(e, 'locklens_locks', { connection: s.name }) === locksPerStore + 1 - (made[i] % 2)));
      const readyMs = performance.now() - started;
      const loadBefore = loadavg()[0];

      const quiet = await observe(serve, base, quietS);
      const scrapeCpuMs = floor ? 0 : await scrapeCpu(serve, base, 20, quiet.cpuPct);
      // Each loaded store sees its share of the full load (changesPerSecond / stores), whichever others are loaded.
      const perSecond = (changesPerSecond * loaded.length) / stores.length;
      const load = startLoad(stores, loaded, made, locksPerStore, perSecond, warmupS + steadyS + (scrapes * scrapeGapMs) / 1000 + delayS + 60);
      await sleep(warmupS * 1000);
      const steady = await observe(serve, base, steadyS);
      // The floor has no lock series to scrape or follow.
      const scraped = floor ? { ms: [], bytes: 0, lockSeries: 0 } : await timeScrapes(base, scrapes, scrapeGapMs);
      const delays = floor ? new Map<string, { ms: number[]; unseen: number }>() : await probeDelays(stores, base, delayS, followMs);
      const changes = await load.stop();
      const loadAfter = loadavg()[0];

      serve.signal('SIGTERM');
      const exit = await serve.wait();
      const log = logLines(serve);
      // What it logs once told to stop (a read cut short by closing its connection) is not a complaint about the run.
      const stopping = log.findIndex((l) => l.msg === 'stopping');
      const complaints = log.slice(0, stopping < 0 ? log.length : stopping).filter((l) => l.level !== 'info');
      complaints.forEach((l) => process.stderr.write(`bench: serve said ${JSON.stringify(l)}\n`));
      if (exit.code !== 0) throw new Error(`serve: locklens serve exited ${exit.code}: ${exit.stderr}`);
      const all = [...delays.values()].flatMap((d) => d.ms);
      const figures = {
        connections: stores.length,
        locks: stores.length * locksPerStore,
        ready_ms: round(readyMs, 0),
        changes_offered_per_s: perSecond,
        changes_per_s: round(changes.perSecond, 1),
        quiet_cpu_pct: round(quiet.cpuPct),
        quiet_rss_mb: round(quiet.rssMb, 1),
        quiet_rss_peak_mb: round(quiet.rssPeakMb, 1),
        cpu_pct: round(steady.cpuPct),
        rss_mb: round(steady.rssMb, 1),
        rss_max_mb: round(steady.rssMaxMb, 1),
        rss_p99_mb: round(steady.rssP99Mb, 1),
        rss_peak_mb: round(steady.rssPeakMb, 1),
        ...Object.fromEntries(
          steady.minutes.flatMap((m, i) => [
            [`cpu_pct_m${i + 1}`, round(m.cpuPct)],
            [`rss_peak_mb_m${i + 1}`, round(m.rssPeakMb, 1)],
          ]),
        ),
        heap_mb: round(steady.heapMb, 1),
        young_mb: round(steady.youngMb, 1),
        scrape_p50_ms: round(percentile(scraped.ms, 50)),
        scrape_p99_ms: round(percentile(scraped.ms, 99)),
        scrape_cpu_ms: round(scrapeCpuMs),
        scrape_kb: round(scraped.bytes / 1024, 0),
        scrape_lock_series: scraped.lockSeries,
        delay_p50_ms: round(percentile(all, 50)),
        delay_p99_ms: round(percentile(all, 99)),
        delay_samples: all.length,
        delay_unseen: [...delays.values()].reduce((n, d) => n + d.unseen, 0),
        ...Object.fromEntries(
          [...delays].flatMap(([store, d]) => [
            [`delay_${store}_p50_ms`, round(percentile(d.ms, 50))],
            [`delay_${store}_p99_ms`, round(percentile(d.ms, 99))],
          ]),
        ),
        serve_complaints: complaints.length,
        ...(data ? { data_mb: round(dirBytes(data) / 2 ** 20, 1) } : {}),
        load_avg_before: round(loadBefore),
        load_avg_after: round(loadAfter),
      };
      return floor ? Object.fromEntries(Object.entries(figures).filter(([k]) => !/^(scrape|delay)_/.test(k))) : figures;
    };
    // LOCKLENS_BENCH_SERVE_CLIS=/tmp/before/dist/locklens.js,dist/locklens.js: builds measured in turn against the same
    // stores and load (an A/B in one run), each one's figures prefixed with its place in the list (`2_cpu_pct`); an entry
    // may start with node's flags for that process (`--max-semi-space-size=4 dist/locklens.js`) and `--record`; the entry
    // `floor` measures serveFloor.ts instead, quiet and under load only (it has no lock series to scrape or follow).
    const clis = process.env.LOCKLENS_BENCH_SERVE_CLIS?.split(',').filter(Boolean) ?? [CLI];
    // LOCKLENS_BENCH_SERVE_LOAD_ON=etcd,redis,all: each build measured once per entry, the load on that store alone
    // (its share of the full load, the other four watched but still) or on all: what each store's changes cost.
    const loadOn = process.env.LOCKLENS_BENCH_SERVE_LOAD_ON?.split(',').filter(Boolean) ?? ['all'];
    const runs = loadOn.flatMap((on) => clis.map((cli) => ({ cli, on })));
    const figures: Record<string, number> = {};
    for (const [i, { cli, on }] of runs.entries()) {
      const loaded = stores.flatMap((s, j) => (on === 'all' || s.name === on ? [j] : []));
      if (loaded.length === 0) throw new Error(`serve: LOCKLENS_BENCH_SERVE_LOAD_ON names ${on}, not one of ${stores.map((s) => s.name).join(', ')} or all`);
      const measured = await measure(cli, loaded);
      process.stderr.write(`bench: serve ${cli}, load on ${on}: ${JSON.stringify(measured)}\n`);
      for (const [k, v] of Object.entries(measured)) figures[runs.length === 1 ? k : `${i + 1}_${k}`] = v;
    }
    return figures;
  } finally {
    await procs.dispose();
    await Promise.all(stores.map((s) => s.close()));
    await Promise.all([redis.dispose(), zk.dispose(), pg.dispose(), maria.dispose()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function scrape(base: string): Promise<{ text: string; ms: number; endedAt: number }> {
  const t0 = performance.now();
  const r = await get(`${base}/metrics`);
  const endedAt = performance.now();
  if (r.status !== 200) throw new Error(`serve: /metrics answered ${r.status}: ${r.body}`);
  return { text: r.body, ms: endedAt - t0, endedAt };
}

async function until(base: string, check: (e: Exposition) => boolean, guardMs = 120_000): Promise<void> {
  const deadline = performance.now() + guardMs;
  for (let e = parseExposition((await scrape(base)).text); !check(e); e = parseExposition((await scrape(base)).text)) {
    if (performance.now() > deadline) {
      const counts = e.samples.filter((s) => s.name === 'locklens_locks').map((s) => `${s.labels.connection} ${s.value}`);
      throw new Error(`serve: locklens serve did not show every lock (hang guard; locks seen: ${counts.join(', ')})`);
    }
    await sleep(200);
  }
}

/** The bytes of the files under `dir`. */
function dirBytes(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).reduce((n, e) => n + (e.isFile() ? statSync(join(e.parentPath, e.name)).size : 0), 0);
}

/**
 * serve runs with the environment the shipped systemd unit gives it (its NODE_OPTIONS: the young generation's hard cap,
 * which serve's own sizing only approaches at best effort, src/cli/serve/heap.ts); LOCKLENS_BENCH_SERVE_PLAIN=1 runs it
 * without, as `node dist/locklens.js serve` from a shell. An entry's own node flags come after, and win.
 */
const UNIT_ENV: Record<string, string> =
  process.env.LOCKLENS_BENCH_SERVE_PLAIN === '1'
    ? {}
    : Object.fromEntries([...readFileSync(join(ROOT, 'deploy/systemd/locklens.service'), 'utf8').matchAll(/^Environment=(NODE_OPTIONS)=(.*)$/gm)].map((m) => [m[1], m[2]]));

const CLOCK_TICKS_PER_S = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

/** The process's CPU time so far (user + system), s: fields 14 and 15 of /proc/<pid>/stat, after the command's `)`. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
}

function rssMb(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/**
 * The greatest RSS of `pid` since the last call (the kernel's high-water mark, then reset: proc(5), clear_refs 5).
 * Samples a second apart miss what lasts less: a full collection that compacts copies the old generation into new pages
 * before it frees the old ones, tens of MB for tens of ms (docs/BENCHMARKS.md, serve, the seventh round).
 */
function rssPeakMb(pid: number): number {
  const peak = rssMb(pid, 'VmHWM');
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return peak;
}

/**
 * `seconds` of the serve process as Prometheus would see it (a scrape every 15 s, the first at the start): its CPU
 * over the phase, its RSS every second (mean, 99th percentile and greatest sample) and at its peak, its V8 heap in use
 * at the last scrape, and the CPU and peak RSS of each whole minute of it.
 */
async function observe(serve: Proc, base: string, seconds: number, scrapeEveryS = 15) {
  const rss: number[] = [];
  const minutes: { cpuPct: number; rssPeakMb: number }[] = [];
  let heapMb = 0;
  // The young generation's size at its largest (both semi-spaces once committed): did serve's cap hold (heap.ts)?
  let youngMb = 0;
  rssPeakMb(serve.pid); // the phase's peak is counted from here
  const cpu0 = cpuSeconds(serve.pid);
  const t0 = performance.now();
  let minute = { cpu: cpu0, at: t0 };
  for (let s = 0; s < seconds; s++) {
    if (s % scrapeEveryS === 0) {
      const e = parseExposition((await scrape(base)).text);
      heapMb = (valueOf(e, 'nodejs_heap_size_used_bytes', {}) ?? 0) / 2 ** 20;
      youngMb = Math.max(youngMb, (valueOf(e, 'nodejs_heap_space_size_total_bytes', { space: 'new' }) ?? 0) / 2 ** 20);
    }
    rss.push(rssMb(serve.pid));
    await sleep(t0 + (s + 1) * 1000 - performance.now());
    if ((s + 1) % 60 === 0) {
      const now = { cpu: cpuSeconds(serve.pid), at: performance.now() };
      minutes.push({ cpuPct: ((now.cpu - minute.cpu) / ((now.at - minute.at) / 1000)) * 100, rssPeakMb: rssPeakMb(serve.pid) });
      minute = now;
    }
  }
  const wallS = (performance.now() - t0) / 1000;
  const cpuPct = ((cpuSeconds(serve.pid) - cpu0) / wallS) * 100;
  // The whole minutes' peaks, and what came after the last of them.
  const peakMb = Math.max(rssPeakMb(serve.pid), ...minutes.map((m) => m.rssPeakMb));
  return { cpuPct, rssMb: rss.reduce((a, b) => a + b, 0) / rss.length, rssMaxMb: Math.max(...rss), rssP99Mb: percentile(rss, 99), rssPeakMb: peakMb, heapMb, youngMb, minutes };
}

/**
 * Serve's own CPU time per scrape: `count` scrapes one after another with no load on, less what serve costs quiet
 * (`quietCpuPct`) meanwhile. On a busy machine a scrape also waits for a core: its wall time says more about the
 * machine than about serve.
 */
async function scrapeCpu(serve: Proc, base: string, count: number, quietCpuPct: number): Promise<number> {
  const cpu0 = cpuSeconds(serve.pid);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await scrape(base);
  const cpuS = cpuSeconds(serve.pid) - cpu0 - ((performance.now() - t0) / 1000) * (quietCpuPct / 100);
  return (cpuS * 1000) / count;
}

async function timeScrapes(base: string, count: number, gapMs: number) {
  const ms: number[] = [];
  let last = '';
  for (let i = 0; i < count; i++) {
    const r = await scrape(base);
    ms.push(r.ms);
    last = r.text;
    await sleep(gapMs - r.ms);
  }
  const series = new Set(parseExposition(last).samples.filter((s) => s.name === 'locklens_lock_holders').map((s) => `${s.labels.connection} ${s.labels.lock} ${s.labels.kind}`));
  return { ms, bytes: Buffer.byteLength(last), lockSeries: series.size };
}

/**
 * `perSecond` changes spread over the `loaded` stores (indexes into `stores`) in turn, each store's in order: lock 0
 * released, then taken again, then lock 1…, so each store sees perSecond / loaded.length changes a second and every
 * lock is free for one store-period at a time. Changes to one lock wait for the one before; others are sent without
 * waiting. Stops when asked, or after `maxSeconds` whatever happens. `made` counts each store's changes so far, and goes
 * on counting.
 */
function startLoad(stores: readonly StoreUnderLoad[], loaded: readonly number[], made: number[], locks: number, perSecond: number, maxSeconds: number) {
  const t0 = performance.now();
  const previous = stores.map(() => new Map<number, Promise<void>>());
  let done = 0;
  let inFlight = 0;
  let failure: unknown;
  let stopping = false;
  const running = (async () => {
    for (let i = 0; !stopping && failure === undefined && performance.now() - t0 < maxSeconds * 1000; i++) {
      const wait = t0 + (i * 1000) / perSecond - performance.now();
      if (wait > 1) await sleep(wait);
      const s = loaded[i % loaded.length];
      const c = made[s]++;
      const lock = Math.floor(c / 2) % locks;
      if (inFlight > 10 * perSecond) {
        failure = new Error(`serve: ${inFlight} lock changes unanswered: the stores fell behind the load`);
        break;
      }
      inFlight++;
      const change = (previous[s].get(lock) ?? Promise.resolve())
        .then(() => stores[s].change(lock, c % 2 === 1))
        .then(
          () => void done++,
          (e: unknown) => void (failure ??= e),
        )
        .finally(() => inFlight--);
      previous[s].set(lock, change);
    }
  })();
  return {
    async stop(): Promise<{ perSecond: number }> {
      stopping = true;
      await running;
      const seconds = (performance.now() - t0) / 1000;
      await Promise.all(previous.flatMap((p) => [...p.values()]));
      if (failure !== undefined) throw failure;
      return { perSecond: done / seconds };
    },
  };
}

/**
 * /metrics scraped every `periodMs` (the next one starting when the last has ended, if it took longer), telling those
 * who wait for something to show when a scrape that started after they asked showed it.
 */
class Follower {
  private waits: { after: number; check: (e: Exposition) => boolean; seen: (at: number) => void }[] = [];
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(
    private readonly base: string,
    private readonly periodMs: number,
  ) {
    this.loop = this.run();
    // A failed scrape ends the loop; the waits then run out and stop() says why.
    this.loop.catch(() => undefined);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const started = performance.now();
      const r = await scrape(this.base);
      const e = parseExposition(r.text);
      this.waits = this.waits.filter((w) => !(w.after <= started && w.check(e) && (w.seen(r.endedAt), true)));
      await sleep(this.periodMs - (performance.now() - started));
    }
  }

  /** When a scrape showed `check` true (ms, performance.now()), or undefined if none did within `guardMs`. */
  seen(after: number, check: (e: Exposition) => boolean, guardMs = 15_000): Promise<number | undefined> {
    return new Promise((resolve) => {
      const w = { after, check, seen: (at: number | undefined) => (clearTimeout(timer), resolve(at)) };
      const timer = setTimeout(() => {
        this.waits = this.waits.filter((x) => x !== w);
        resolve(undefined);
      }, guardMs);
      this.waits.push(w);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

/** Each store's probe waiter joining and leaving, one change at a time, for `seconds`: the delays until /metrics showed each. */
async function probeDelays(stores: readonly StoreUnderLoad[], base: string, seconds: number, followMs: number) {
  const follower = new Follower(base, followMs);
  const end = performance.now() + seconds * 1000;
  const results = new Map<string, { ms: number[]; unseen: number }>();
  try {
    await Promise.all(
      stores.map(async (store) => {
        const result = { ms: [] as number[], unseen: 0 };
        results.set(store.name, result);
        const waiters = (e: Exposition) => valueOf(e, 'locklens_lock_waiters', { connection: store.name, lock: store.probeLock });
        for (let join = true; performance.now() < end || !join; join = !join) {
          const sent = performance.now();
          await store.probe(join);
          const at = await follower.seen(sent, (e) => (waiters(e) === 1) === join);
          if (at === undefined) result.unseen++;
          else result.ms.push(at - sent);
          // Off the beat of the stores' polls and of the scrapes.
          await sleep(100 + Math.random() * 200);
        }
      }),
    );
  } finally {
    await follower.stop();
  }
  return results;
}

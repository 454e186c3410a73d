// `npm run demo`: a local etcd, Redis, ZooKeeper and PostgreSQL, simulated services contending for locks in each (one
// stuck in each), and VS Code with LockLens connected to all four. Ctrl-C stops everything it started.
//
// Bundled by esbuild.mjs into dist/demo.js (not compiled with tsc into out/): it runs the core engine (src/core) the
// same way the `locklens` CLI does, from one self-contained file with etcd3's .proto files next to it in dist/proto,
// and `npm run build` already makes it. It is not part of the .vsix (.vscodeignore lets in only the extension's files).
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { splitEndpoints } from '../src/core/profile';
import { demoConnections } from './connections';
import { openEditor, type Editor } from './editor';
import { startEtcd, type DemoEtcd } from './etcd';
import { sleep } from '../src/core/sleep';
import { demoRulesText, startMonitor, type DemoMonitor } from './monitor';
import { killStragglers, processesWithEnv, RUN_VAR } from './processes';
import { postgresInstalled, startPostgres, type DemoPostgres } from './postgres';
import { INCIDENT_HOLDER, INCIDENT_WAITERS, POSTGRES_LOCKS, PostgresWorkload } from './postgresWorkload';
import { PYTHON } from './pythonServices';
import { startRedis, type DemoRedis } from './redis';
import { REDIS_LOCKS, REDIS_PREFIX, RedisWorkload } from './redisWorkload';
import { runStuckHolder } from './stuckHolder';
import { LOCKS, PREFIXES, Workload } from './workload';
import { startZooKeeper, type DemoZooKeeper } from './zookeeper';
import { zooKeeperInstalled } from './zookeeperJar';
import { ZOOKEEPER_LOCKS, ZOOKEEPER_PREFIX, ZooKeeperWorkload } from './zookeeperWorkload';

const HELP = `Usage: npm run demo [-- OPTIONS]      (or: node dist/demo.js [OPTIONS] after npm run build)

Starts a local etcd (Debian's etcd, on a free loopback port, data in a temp dir), simulated services contending for
locks under /locks/ and /election/ (Go-compatible Mutex services, etcdctl lock loops, a single-key try-lock, an
etcdctl election, one stuck holder to revoke, and two transfer services deadlocked until you force-release one of
their holds); a local Redis (Debian's redis-server, on a free loopback port,
nothing persisted, keyspace notifications on) with locks under ${REDIS_PREFIX} (a Redisson re-entrant lock, a Redisson
fair lock with two waiters, contending redis-py locks, redis-py locks whose 8 s timeout is shorter than their jobs, and
one stuck redis-py token with no expiry to force-release; and, under semaphore:app:, a redis-semaphore Semaphore of 3
permits contended by five workers);
a local ZooKeeper (Debian's, run from its jar on a free loopback port, data in the temp dir) with kazoo clients under
${ZOOKEEPER_PREFIX} (three kazoo Lock processes contending, a kazoo read/write lock, and one stuck holder in Curator's layout
that keeps its session alive, with a kazoo waiter behind it, to force-release); a local PostgreSQL (Debian's 15, a
cluster in the temp dir on a free loopback port, loopback connections trusted) with psycopg2 sessions on database app
(advisory lock ${POSTGRES_LOCKS.incident} held for minutes by ${INCIDENT_HOLDER} with two waiters, advisory lock ${POSTGRES_LOCKS.contended} contended, a ShedLock
job, and a stuck Liquibase lock to release); \`locklens serve\` watching all four, with its Prometheus metrics on a
loopback port, and, when Debian's prometheus and prometheus-alertmanager are installed, a Prometheus with the shipped
alert rules (thresholds shortened for the demo, so the stuck holders alert within a minute) and an Alertmanager, whose
alerts the demo prints; and VS Code with LockLens connected to all four: desktop VS Code when \`code\` is on PATH,
otherwise code-server on 127.0.0.1 (open the URL it prints).
Ctrl-C stops everything.

Options:
  --endpoints E     use this etcd (host:port, comma separated) instead of starting one. The workload writes keys
                    under ${PREFIXES.join(' and ')}; they go when it stops (etcdctl's within their 10-60 s lease TTLs).
  --no-redis        leave Redis out
  --no-zookeeper    leave ZooKeeper out
  --no-postgres     leave PostgreSQL out
  --no-monitor      leave out locklens serve, Prometheus and Alertmanager
  --no-editor       no VS Code (connect with your own, look with \`locklens list\`, or open the URLs it prints)
  --code-server     use code-server even where desktop VS Code is available
  --verbose         log every acquire and release, not only the stuck holder, lost locks and errors, and every
                    line locklens serve logs, not only its warnings
  -h, --help        this text`;

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      endpoints: { type: 'string' },
      'no-editor': { type: 'boolean' },
      'no-redis': { type: 'boolean' },
      'no-zookeeper': { type: 'boolean' },
      'no-postgres': { type: 'boolean' },
      'no-monitor': { type: 'boolean' },
      'code-server': { type: 'boolean' },
      verbose: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      // Internal: the demo's own child processes.
      service: { type: 'string' },
      lock: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (values.service === 'stuck-holder') return runStuckHolder(splitEndpoints(values.endpoints ?? ''), values.lock ?? LOCKS.payments);
  if (values.service) throw new Error(`unknown service '${values.service}'`);
  return runDemo({
    endpoints: values.endpoints === undefined ? undefined : splitEndpoints(values.endpoints),
    editor: !values['no-editor'],
    redis: !values['no-redis'],
    zookeeper: !values['no-zookeeper'],
    postgres: !values['no-postgres'],
    monitor: !values['no-monitor'],
    forceCodeServer: !!values['code-server'],
    verbose: !!values.verbose,
  });
}

interface DemoOptions {
  readonly endpoints?: string[];
  readonly editor: boolean;
  readonly redis: boolean;
  readonly zookeeper: boolean;
  readonly postgres: boolean;
  readonly monitor: boolean;
  readonly forceCodeServer: boolean;
  readonly verbose: boolean;
}

const time = () => new Date().toTimeString().slice(0, 8);
const say = (line: string) => process.stdout.write(`${line}\n`);

async function runDemo(options: DemoOptions): Promise<number> {
  const runId = randomUUID();
  const root = mkdtempSync(join(tmpdir(), 'locklens-demo-'));
  say(`${time()} temp dir    ${root}   (removed when the demo stops)`);
  let etcd: DemoEtcd | undefined;
  let workload: Workload | undefined;
  let redis: DemoRedis | undefined;
  let redisWorkload: RedisWorkload | undefined;
  let zookeeper: DemoZooKeeper | undefined;
  let zooKeeperWorkload: ZooKeeperWorkload | undefined;
  let postgres: DemoPostgres | undefined;
  let postgresWorkload: PostgresWorkload | undefined;
  let monitor: DemoMonitor | undefined;
  let editor: Editor | undefined;
  /** Steps under way (starting etcd, VS Code): a stop waits for them, so that what they start is stopped too. */
  const starting: Promise<unknown>[] = [];

  // Everything below is undone by `shutdown`, whichever way the demo ends: Ctrl-C, SIGTERM, SIGHUP, or a failure.
  let stopped: Promise<void> | undefined;
  const shutdown = (why: string): Promise<void> =>
    (stopped ??= (async () => {
      say(`\n${time()} stopping (${why})…`);
      const workloadStopped = workload?.stop().catch((e) => say(`  workload: ${String(e)}`));
      const redisWorkloadStopped = redisWorkload?.stop().catch((e) => say(`  Redis workload: ${String(e)}`));
      const zooKeeperWorkloadStopped = zooKeeperWorkload?.stop().catch((e) => say(`  ZooKeeper workload: ${String(e)}`));
      const postgresWorkloadStopped = postgresWorkload?.stop().catch((e) => say(`  PostgreSQL workload: ${String(e)}`));
      await Promise.all(starting.map((p) => p.catch(() => undefined)));
      // serve stops before the stores, so that it does not log them going away.
      const monitorStopped = monitor?.stop().catch((e) => say(`  locklens serve, Prometheus, Alertmanager: ${String(e)}`));
      await editor?.stop().catch((e) => say(`  VS Code: ${String(e)}`));
      await Promise.all([workloadStopped, redisWorkloadStopped, zooKeeperWorkloadStopped, postgresWorkloadStopped, monitorStopped]);
      await Promise.all([etcd?.group.stop(5000), redis?.group.stop(5000), zookeeper?.group.stop(5000), postgres?.group.stop(5000)]);
      // Anything still carrying this run's id (a window that left its group, a grandchild): ask, then kill.
      const left = processesWithEnv(RUN_VAR, runId);
      left.forEach((pid) => signalPid(pid, 'SIGTERM'));
      for (let i = 0; i < 30 && processesWithEnv(RUN_VAR, runId).length; i++) await sleep(100);
      const killed = killStragglers(runId);
      rmSync(root, { recursive: true, force: true, maxRetries: 3 });
      const what = [etcd && 'etcd', redis && 'Redis', zookeeper && 'ZooKeeper', postgres && 'PostgreSQL', (workload || redisWorkload || zooKeeperWorkload || postgresWorkload) && 'the workload', monitor && `locklens serve${monitor.prometheusUrl ? ', Prometheus, Alertmanager' : ''}`, editor && 'VS Code', left.length && `${left.length} other process(es)${killed ? ` (${killed} killed)` : ''}`];
      say(`${time()} stopped ${what.filter(Boolean).join(', ') || 'everything'}; temp dir removed`);
    })());

  let stopSignal: string | undefined;
  const stopping = new Promise<never>((_, reject) => {
    let first = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      // Ctrl-C under `npm run` arrives twice at once (from the terminal, and forwarded by npm): only a second Ctrl-C
      // a moment later means "now".
      if (first && Date.now() - first < 1000) return;
      if (first) {
        // A second Ctrl-C: no more waiting for an orderly stop.
        say('stopping now');
        killStragglers(runId);
        rmSync(root, { recursive: true, force: true });
        process.exit(130);
      }
      first = Date.now();
      stopSignal = signal;
      reject(new Stop(signal));
    };
    for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, onSignal);
  });
  stopping.catch(() => undefined);
  /** Waits for `step`, or throws Stop as soon as a signal comes (the step goes on, and `shutdown` waits for it). */
  const step = <T>(p: Promise<T>): Promise<T> => {
    starting.push(p);
    return Promise.race([p, stopping]);
  };

  try {
    checkInstalled(options);
    // The stores start side by side (ZooKeeper's JVM and PostgreSQL's initdb take a second or two, etcd and Redis
    // less): the demo is ready when the slowest is, not after the sum of them.
    let endpoints = options.endpoints;
    const stores: Promise<unknown>[] = [];
    if (!endpoints) {
      stores.push(
        // Assigned as soon as it has started, even if a stop came meanwhile: `shutdown` stops what is assigned.
        step(startEtcd(root, runId).then((started) => (etcd = started))).then((e) => {
          endpoints = [e.endpoint];
          say(`${time()} etcd        ${e.endpoint}   (data dir ${e.dataDir})`);
        }),
      );
    } else {
      say(`${time()} etcd        ${endpoints.join(',')}   (yours: --endpoints)`);
    }
    if (options.redis) {
      stores.push(
        step(startRedis(root, runId).then((started) => (redis = started))).then((r) => {
          say(`${time()} redis       ${r.url}   (dir ${r.dir}, nothing persisted)`);
        }),
      );
    }
    if (options.zookeeper) {
      stores.push(
        step(startZooKeeper(root, runId).then((started) => (zookeeper = started))).then((z) => {
          say(`${time()} zookeeper   ${z.url}   (data dir ${z.dataDir})`);
        }),
      );
    }
    if (options.postgres) {
      stores.push(
        step(startPostgres(root, runId).then((started) => (postgres = started))).then((p) => {
          say(`${time()} postgres    ${p.url}   (data dir ${p.dataDir}, loopback connections trusted)`);
        }),
      );
    }
    await Promise.all(stores);
    const etcdEndpoints = endpoints!;

    const log = (who: string, message: string) => say(`${time()} ${who.padEnd(20)} ${message}`);
    const services = { runId, verbose: options.verbose, log };
    workload = new Workload({ ...services, endpoints: etcdEndpoints, self: [process.execPath, process.argv[1]] });
    if (redis) redisWorkload = new RedisWorkload({ ...services, url: redis.url, root });
    if (zookeeper) zooKeeperWorkload = new ZooKeeperWorkload({ ...services, url: zookeeper.url, root });
    if (postgres) postgresWorkload = new PostgresWorkload({ ...services, url: postgres.url, root });
    // Each workload says what it set up once it has; they start side by side too, and beside serve, which so sees the
    // stuck holders take their locks.
    await step(
      Promise.all([
        options.monitor &&
          startMonitor({ root, runId, connections: demoConnections(etcdEndpoints, redis?.url, zookeeper?.url, postgres?.url), log, verbose: options.verbose })
            .then((started) => (monitor = started))
            .then((m) => {
              say(`${time()} metrics     ${m.metricsUrl}   (locklens serve, watching every connection above)`);
              if (!m.prometheusUrl) return say(`${time()} prometheus  not installed: no alerts (bash scripts/setup.sh installs prometheus and prometheus-alertmanager)`);
              say(`${time()} prometheus  ${m.prometheusUrl}/alerts   (the shipped rules, shortened for the demo: ${demoRulesText()})`);
              say(`${time()} alertmanager ${m.alertmanagerUrl}   (each alert it delivers is printed here)`);
            }),
        workload.start().then(() => {
          say(`${time()} workload    ${Object.values(LOCKS).join(', ')}`);
          say(`${time()} stuck       ${LOCKS.payments} held with lease ${workload!.stuck?.lease} by pid ${workload!.stuck?.pid}, never released`);
          say(`${time()} deadlock    ${LOCKS.transferAlice} and ${LOCKS.transferBob}: two services each hold one and wait for the other; force-release one hold to break it`);
        }),
        redisWorkload?.start().then(() => {
          say(`${time()} redis locks ${Object.values(REDIS_LOCKS).join(', ')}`);
          say(`${time()} stuck       ${REDIS_LOCKS.stuck} held by token ${redisWorkload!.stuckToken} with no expiry (its process has exited)`);
          say(`${time()} short TTL   ${REDIS_LOCKS.shortTtl}: redis-py locks with an 8 s timeout for jobs of 9-12 s, so each expires while its job still runs`);
        }),
        zooKeeperWorkload?.start().then(() => {
          const stuck = zooKeeperWorkload!.stuck;
          say(`${time()} zk locks    ${Object.values(ZOOKEEPER_LOCKS).join(', ')}`);
          say(`${time()} stuck       ${ZOOKEEPER_LOCKS.stuck} held by session ${stuck?.session} (node ${stuck?.node}, token ${stuck?.token}) in Curator's layout, never released`);
        }),
        postgresWorkload?.start().then(() => {
          say(`${time()} pg locks    ${Object.values(POSTGRES_LOCKS).join(', ')}`);
          say(`${time()} incident    ${POSTGRES_LOCKS.incident} held by ${INCIDENT_HOLDER} (pid ${postgresWorkload!.holderPid}) for minutes, ${INCIDENT_WAITERS.join(' and ')} waiting behind it`);
          say(`${time()} stuck       ${POSTGRES_LOCKS.liquibase} locked by ${postgresWorkload!.liquibaseLockedBy} (Liquibase; its migration was killed), never unlocked`);
        }),
      ]),
    );

    if (options.editor) {
      say(`${time()} VS Code     starting…`);
      const ed = await step(
        openEditor({
          endpoints: etcdEndpoints,
          redisUrl: redis?.url,
          zookeeperUrl: zookeeper?.url,
          postgresUrl: postgres?.url,
          root,
          runId,
          forceCodeServer: options.forceCodeServer,
          log: (m) => say(`${time()} ${m}`),
        }).then((opened) => (editor = opened)),
      );
      say(`${time()} VS Code     ${ed.description}${ed.url ? `\n\n    Open ${ed.url}\n` : ''}`);
      say(`${time()}             click the LockLens icon (the padlock) in the activity bar; the demo connection is set up`);
    }
    say(`${time()} ready: ${[etcdEndpoints.join(','), redis?.url, zookeeper?.url, postgres?.url].filter(Boolean).join(' ')}  (Ctrl-C stops everything)`);
    await stopping;
    return 0;
  } catch (e) {
    if (e instanceof Stop) {
      await shutdown(e.signal);
      return 0;
    }
    say(`demo: ${e instanceof Error ? e.message : String(e)}`);
    await shutdown(stopSignal ?? 'error');
    return 1;
  }
}

/** Every program the chosen stores need, checked before anything starts: a missing one is named with the way out. */
function checkInstalled(options: DemoOptions): void {
  const has = (command: string) => spawnSync('sh', ['-c', command], { stdio: 'ignore' }).status === 0;
  if (!options.endpoints && !has('command -v etcd && command -v etcdctl')) {
    throw new Error('etcd and etcdctl are not installed: run `npm run demo` (it runs scripts/setup.sh) or `bash scripts/setup.sh`');
  }
  if (options.redis && !(has('command -v redis-server') && has(`${PYTHON} -c 'import redis'`))) {
    throw new Error(`redis-server or python3-redis (for ${PYTHON}) is not installed: run \`bash scripts/setup.sh\`, or leave Redis out with --no-redis`);
  }
  if (options.zookeeper && !(zooKeeperInstalled() && has(`${PYTHON} -c 'import kazoo'`))) {
    throw new Error(`zookeeper (and a java) or python3-kazoo (for ${PYTHON}) is not installed: run \`bash scripts/setup.sh\`, or leave ZooKeeper out with --no-zookeeper`);
  }
  if (options.postgres && !(postgresInstalled() && has(`${PYTHON} -c 'import psycopg2'`))) {
    throw new Error(`postgresql (15) or python3-psycopg2 (for ${PYTHON}) is not installed: run \`bash scripts/setup.sh\`, or leave PostgreSQL out with --no-postgres`);
  }
}

class Stop extends Error {
  constructor(readonly signal: string) {
    super(`stopped by ${signal}`);
  }
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`demo: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  },
);

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { Procs, show } from '../harness/cli';
import { startDemo, type RunningDemo } from '../harness/demo';
import { eventually, sleep } from '../harness/etcd';
import { scrape, valueOf } from '../harness/serve';
import type { LockJson } from '../../src/cli/lockJson';
import { INCIDENT_HOLDER, INCIDENT_WAITERS, LIQUIBASE_LOCKED_BY, POSTGRES_LOCKS } from '../../demo/postgresWorkload';
import { REDIS_LOCKS, REDIS_SEMAPHORE_PREFIX, THUMBNAIL_PERMITS } from '../../demo/redisWorkload';

/**
 * `npm run demo -- --no-editor` (dist/demo.js, built by npm test) as a user runs it: it starts its own etcd, its own
 * Redis, its own ZooKeeper and the workload, the locks it promises are there as `locklens list --json` sees them (etcd:
 * queues with holders and waiters, the stuck holder that never lets go, the single-key try-lock, the election; Redis:
 * a Redisson re-entrant lock held twice, a Redisson fair lock's queue, contending redis-py locks, the stuck token with
 * no expiry; ZooKeeper: contending kazoo locks, kazoo's read/write lock, the stuck holder in Curator's layout with a
 * kazoo waiter; PostgreSQL: an advisory lock held by an idle session with two psycopg2 waiters in order, another
 * contended, the stuck Liquibase lock (which `locklens unlock --force` frees), a ShedLock job); `locklens serve`
 * answers /metrics with them, and the Prometheus it starts with the shipped rules (shortened) fires
 * LockLensLockHeldTooLong for the stuck etcd holder within about a minute, delivered through its Alertmanager back to
 * the demo's output; and Ctrl-C (SIGINT) stops every process it started and removes its temp dir.
 *
 * Every process the demo starts inherits a marker variable from this test's environment, so "nothing left" is checked
 * by looking at every process on the machine, not only the ones the demo says it started; and whatever happens, the
 * `after` hook SIGKILLs every process carrying it.
 */


describe('npm run demo -- --no-editor', { timeout: 5 * 60_000 }, () => {
  const procs = new Procs('');
  let demo: RunningDemo;
  let endpoint = '';
  let tempDir = '';
  let stuckLease = '';
  let redisUrl = '';
  let stuckToken = '';
  let zookeeperUrl = '';
  let stuckZnode: RunningDemo['stuckZnode'];
  let postgresUrl = '';
  /** billing-worker's backend pid when the demo became ready. */
  let incidentPid = 0;
  /** locklens serve's base URL, Prometheus' and Alertmanager's, as the demo printed them. */
  let serveUrl = '';
  let prometheusUrl = '';
  let alertmanagerUrl = '';

  async function list(): Promise<Map<string, LockJson>> {
    const r = await procs.run(['list', '--endpoints', endpoint, '--prefix', '/locks/', '--prefix', '/election/', '--json']);
    assert.equal(r.code, 0, show(r));
    const { locks } = JSON.parse(r.stdout) as { locks: LockJson[] };
    return new Map(locks.map((l) => [l.name, l]));
  }

  async function listUrl(url: string, prefix: string): Promise<Map<string, LockJson>> {
    const r = await procs.run(['list', '--url', url, '--prefix', prefix, '--json']);
    assert.equal(r.code, 0, show(r));
    const { locks } = JSON.parse(r.stdout) as { locks: LockJson[] };
    return new Map(locks.map((l) => [l.name, l]));
  }
  const listRedis = () => listUrl(redisUrl, 'app:');
  const listZooKeeper = () => listUrl(zookeeperUrl, '/app');
  // The empty prefix: every lock of the database, as the demo-postgres connection watches it. No password: the demo's
  // PostgreSQL trusts loopback connections.
  const listPostgres = () => listUrl(postgresUrl, '');

  /** Lists with `list` until every check has passed at least once (the workload moves: a queue can be empty briefly). */
  async function seenOnce(what: string, list: () => Promise<Map<string, LockJson>>, checks: Record<string, (locks: Map<string, LockJson>) => boolean>): Promise<void> {
    const seen = new Set<string>();
    let last = new Map<string, LockJson>();
    try {
      await eventually(async () => {
        last = await list();
        for (const [name, check] of Object.entries(checks)) if (check(last)) seen.add(name);
        return seen.size === Object.keys(checks).length;
      }, 60_000, what);
    } catch (e) {
      const missing = Object.keys(checks).filter((c) => !seen.has(c));
      assert.fail(`${(e as Error).message}; never seen: ${missing.join('; ')}\nlast list: ${JSON.stringify([...last.values()], null, 1)}`);
    }
  }

  /** What the demo's Redis holds, read with redis-cli (not through LockLens). */
  const redisCli = (...args: string[]) => execFileSync('redis-cli', ['-u', redisUrl, ...args], { encoding: 'utf8', timeout: 10_000 }).trim();

  before(async () => {
    demo = await startDemo(['--no-editor']);
    ({ endpoint, tempDir, stuckLease, redisUrl, stuckToken, zookeeperUrl, stuckZnode } = demo);
    postgresUrl = /^\S+ postgres +(postgres:\/\/\S+)/m.exec(demo.proc.stdout)?.[1] ?? '';
    incidentPid = Number(new RegExp(`${POSTGRES_LOCKS.incident} held by ${INCIDENT_HOLDER} \\(pid (\\d+)\\)`).exec(demo.proc.stdout)?.[1] ?? 0);
    serveUrl = /^\S+ metrics +(http:\/\/\S+)\/metrics/m.exec(demo.proc.stdout)?.[1] ?? '';
    prometheusUrl = /^\S+ prometheus +(http:\/\/\S+)\/alerts/m.exec(demo.proc.stdout)?.[1] ?? '';
    alertmanagerUrl = /^\S+ alertmanager +(http:\/\/\S+)/m.exec(demo.proc.stdout)?.[1] ?? '';
  });

  after(async () => {
    // Whatever happened: the demo's own group, then every process that carries this run's marker.
    await demo?.dispose();
    await procs.dispose();
  });

  test('it starts etcd on loopback with its data under a temp dir, and names the stuck lease', () => {
    assert.match(endpoint, /^127\.0\.0\.1:\d+$/, demo.proc.stdout);
    assert.match(tempDir, /locklens-demo-/, demo.proc.stdout);
    assert.ok(existsSync(tempDir), `${tempDir} exists while the demo runs`);
    assert.match(stuckLease, /^[0-9a-f]+$/, demo.proc.stdout);
  });

  test('it starts Redis on loopback, with keyspace notifications on, and names the stuck token', () => {
    assert.match(redisUrl, /^redis:\/\/127\.0\.0\.1:\d+$/, demo.proc.stdout);
    assert.match(stuckToken, /^[0-9a-f]{32}$/, demo.proc.stdout);
    assert.equal(redisCli('ping'), 'PONG');
    assert.match(redisCli('config', 'get', 'notify-keyspace-events').split('\n')[1] ?? '', /^(?=.*K)(?=.*E)(?=.*A)/);
  });

  test('locklens list --json shows the queues, the stuck holder and its waiters, the try-lock and the election', async () => {
    // The workload moves: each promise must be seen at least once (most are at once; a queue can be empty briefly).
    const checks: Record<string, (locks: Map<string, LockJson>) => boolean> = {
      'billing-batch: a Go-compatible holder and waiters': (m) => isQueue(m.get('/locks/billing-batch'), 1),
      'report-export: etcdctl and Mutex services queue together': (m) => isQueue(m.get('/locks/report-export'), 1),
      'migrations: held': (m) => isQueue(m.get('/locks/migrations'), 0),
      'reconcile: the stuck holder, two waiters behind it': (m) => {
        const l = m.get('/locks/reconcile');
        return isQueue(l, 2) && l!.holder!.lease === stuckLease;
      },
      'cron-leader-single: a single-key lock with a lease': (m) => {
        const l = m.get('/locks/cron-leader-single');
        return l?.kind === 'single' && !!l.holder?.lease && l.holder.key === '/locks/cron-leader-single';
      },
      '/election/scheduler: a leader and a candidate': (m) => {
        const l = m.get('/election/scheduler');
        return l?.kind === 'election' && !!l.holder && l.waiters.length >= 1;
      },
    };
    await seenOnce('every promised lock', list, checks);
  });

  test('locklens list --url redis://… shows the Redisson lock held twice, the fair lock\'s queue, the redis-py locks, the stuck token', async () => {
    const queue = 'redisson_lock_queue:{app:report-fair-lock}';
    const checks: Record<string, (locks: Map<string, LockJson>) => boolean> = {
      'app:billing-lock: a Redisson holder holding it twice': (m) => {
        const h = m.get('app:billing-lock')?.holder;
        return h?.convention === 'redisson-lock' && h.holds === 2 && /^[0-9a-f-]{36}:\d+$/.test(h.owner) && h.lease === null && h.createRevision === null && h.token === null;
      },
      'app:report-fair-lock: a holder and two waiters in queue order': (m) => {
        const l = m.get('app:report-fair-lock');
        if (!l?.holder || l.waiters.length !== 2) return false;
        const inStore = redisCli('lrange', queue, '0', '-1').split('\n');
        return l.waiters.map((w) => w.owner).join(' ') === inStore.join(' ') && !inStore.includes(l.holder.owner);
      },
      'app:export-job: held by a redis-py token': (m) => {
        const h = m.get('app:export-job')?.holder;
        return !!h && /^[0-9a-f]{32}$/.test(h.owner) && h.lease === null;
      },
      'app:stuck-migration: the stuck token, no expiry': (m) => {
        const h = m.get('app:stuck-migration')?.holder;
        return !!h && h.owner === stuckToken && h.ttl === null;
      },
    };
    await seenOnce('every promised Redis lock', listRedis, checks);
  });

  test('app:export-job changes hands between the redis-py contenders', async () => {
    const owners = new Set<string>();
    await eventually(async () => {
      const h = (await listRedis()).get('app:export-job')?.holder;
      if (h && /^[0-9a-f]{32}$/.test(h.owner)) owners.add(h.owner);
      return owners.size >= 2;
    }, 30_000, 'two different app:export-job tokens');
  });

  test('locklens list --url redis://… --prefix semaphore:app: shows the contended redis-semaphore, every permit held by a worker', async () => {
    await seenOnce('the Redis semaphore', () => listUrl(redisUrl, REDIS_SEMAPHORE_PREFIX), {
      [`${REDIS_LOCKS.thumbnails}: ${THUMBNAIL_PERMITS} permits held, each by a worker's identifier`]: (m) => {
        const l = m.get(REDIS_LOCKS.thumbnails);
        const holders = l?.holders ?? [];
        return l?.kind === 'semaphore' && holders.length === THUMBNAIL_PERMITS && holders.every((h) => h.convention === 'redis-semaphore' && /^[0-9a-f-]{36}$/.test(h.owner));
      },
    });
  });

  test('it starts ZooKeeper on loopback and names the stuck session and its node', () => {
    assert.match(zookeeperUrl, /^zookeeper:\/\/127\.0\.0\.1:\d+$/, demo.proc.stdout);
    assert.match(stuckZnode?.session ?? '', /^[0-9a-f]+$/, demo.proc.stdout);
    assert.match(stuckZnode?.node ?? '', /^\/app\/locks\/ledger-migration\/_c_[0-9a-f-]{36}-lock-\d{10}$/, demo.proc.stdout);
  });

  test('locklens list --url zookeeper://… shows the contended kazoo lock, kazoo\'s read/write lock, the stuck Curator-layout holder and its kazoo waiter', async () => {
    const contenders = ['report-a', 'report-b', 'report-c'];
    const kazooLock = (e: LockJson['holder']) => e?.convention === 'kazoo-lock' && contenders.includes(e.data ?? '') && /^[0-9a-f]+$/.test(e.owner) && typeof e.token === 'number';
    await seenOnce('every promised ZooKeeper lock', listZooKeeper, {
      'nightly-report: a kazoo holder and waiters in sequence order': (m) => {
        const l = m.get('/app/locks/nightly-report');
        if (!isQueue(l, 1) || ![l!.holder, ...l!.waiters].every(kazooLock)) return false;
        const tokens = [l!.holder!, ...l!.waiters].map((e) => e.token!);
        return tokens.every((t, i) => i === 0 || t > tokens[i - 1]);
      },
      // Whether the readers overlap at some poll depends on the workload's random timing (and a kazoo reader has been
      // seen to hold far longer than its turn under load): what LockLens must show is kazoo's read/write lock as such.
      'catalog: kazoo\'s read/write lock, a reader holding': (m) => {
        const l = m.get('/app/locks/catalog');
        return l?.kind === 'readwrite' && l.holder?.convention === 'kazoo-rlock';
      },
      'ledger-migration: the stuck Curator-layout holder, the kazoo standby behind it': (m) => {
        const l = m.get('/app/locks/ledger-migration');
        const h = l?.holder;
        return (
          l?.kind === 'queue' &&
          !!h &&
          h.key === stuckZnode?.node &&
          h.owner === stuckZnode?.session &&
          h.token === stuckZnode?.token &&
          h.convention === 'curator-mutex' &&
          l.waiters.length === 1 &&
          l.waiters[0].convention === 'kazoo-lock' &&
          l.waiters[0].data === 'ledger-standby'
        );
      },
    });
  });

  test('nightly-report changes hands between the kazoo contenders', async () => {
    const holders = new Set<string>();
    await eventually(async () => {
      const data = (await listZooKeeper()).get('/app/locks/nightly-report')?.holder?.data;
      if (data) holders.add(data);
      return holders.size >= 2;
    }, 30_000, 'two different nightly-report holders');
  });

  test('it starts PostgreSQL on loopback with a database app, and names the incident\'s holder', () => {
    assert.match(postgresUrl, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/app$/, demo.proc.stdout);
    assert.ok(incidentPid > 0, demo.proc.stdout);
    assert.ok(demo.proc.stdout.includes(`${POSTGRES_LOCKS.liquibase} locked by ${LIQUIBASE_LOCKED_BY}`), demo.proc.stdout);
  });

  test('locklens list --url postgres://… shows 42 held by billing-worker\'s idle session with its two waiters in order, 7:1 contended, the stuck Liquibase lock, the ShedLock job', async () => {
    const application = (e: LockJson['holder'] | undefined) => e?.session?.application;
    await seenOnce('every promised PostgreSQL lock', listPostgres, {
      '42: billing-worker holding, idle, report-export then ledger-sync waiting in pg_advisory_lock(42)': (m) => {
        const l = m.get(POSTGRES_LOCKS.incident);
        const h = l?.holder;
        return (
          l?.kind === 'queue' &&
          h?.owner === String(incidentPid) &&
          h.convention === 'pg-advisory' &&
          application(h) === INCIDENT_HOLDER &&
          h.session?.state === 'idle' &&
          l.waiters.map(application).join(' ') === INCIDENT_WAITERS.join(' ') &&
          l.waiters.every((w) => w.session?.query === 'SELECT pg_advisory_lock(42)' && !!w.session.waitingSince)
        );
      },
      '7:1: a sync-worker holding the int pair': (m) => /^sync-worker-\d$/.test(application(m.get(POSTGRES_LOCKS.contended)?.holder) ?? ''),
      'databasechangeloglock/1: locked by the killed migration, no expiry': (m) => {
        const h = m.get(POSTGRES_LOCKS.liquibase)?.holder;
        return h?.convention === 'liquibase' && h.owner === LIQUIBASE_LOCKED_BY && h.ttl === null;
      },
      'shedlock/nightly-report: held by the scheduler until its lock_until': (m) => {
        const h = m.get(POSTGRES_LOCKS.shedlock)?.holder;
        return h?.convention === 'shedlock' && h.owner === 'scheduler-2b9d' && (h.ttl ?? 0) > 0;
      },
    });
  });

  test('the stuck holders never let go, 6 s later: etcd\'s key with its lease kept alive, Redis\'s token with no expiry, ZooKeeper\'s node with its session kept alive, PostgreSQL\'s 42 with billing-worker\'s idle session', async () => {
    const read = async () => ({
      etcd: (await list()).get('/locks/reconcile')?.holder,
      redis: (await listRedis()).get('app:stuck-migration')?.holder,
      zookeeper: (await listZooKeeper()).get('/app/locks/ledger-migration')?.holder,
      postgres: (await listPostgres()).get(POSTGRES_LOCKS.incident)?.holder,
    });
    const first = await read();
    assert.equal(first.redis?.owner, stuckToken, JSON.stringify(first.redis));
    await sleep(6000);
    const later = await read();
    assert.equal(later.etcd?.key, first.etcd?.key);
    assert.equal(later.etcd?.createRevision, first.etcd?.createRevision);
    assert.equal(later.etcd?.lease, stuckLease);
    assert.ok((later.etcd?.ttl ?? 0) > 0, `its lease lives: ${JSON.stringify(later.etcd)}`);
    assert.equal(later.redis?.owner, stuckToken, JSON.stringify(later.redis));
    assert.equal(later.redis?.ttl, null, `no expiry: ${JSON.stringify(later.redis)}`);
    assert.equal(redisCli('pttl', 'app:stuck-migration'), '-1');
    // Its session's timeout is 4 s: the node outlived it because the client keeps the session alive.
    assert.deepEqual(
      [later.zookeeper?.key, later.zookeeper?.owner, later.zookeeper?.token],
      [stuckZnode?.node, stuckZnode?.session, stuckZnode?.token],
      JSON.stringify(later.zookeeper),
    );
    assert.deepEqual([later.postgres?.owner, later.postgres?.session?.application], [String(incidentPid), INCIDENT_HOLDER], JSON.stringify(later.postgres));
  });

  test('locklens serve answers /metrics on loopback with the demo locks, every store watched', async () => {
    assert.match(serveUrl, /^http:\/\/127\.0\.0\.1:\d+$/, demo.proc.stdout);
    const stuck = { demo: '/locks/reconcile', 'demo-redis': 'app:stuck-migration', 'demo-zookeeper': '/app/locks/ledger-migration', 'demo-postgres': POSTGRES_LOCKS.incident };
    await eventually(async () => {
      const m = await scrape(serveUrl);
      return Object.entries(stuck).every(([connection, lock]) => valueOf(m, 'locklens_store_up', { connection }) === 1 && valueOf(m, 'locklens_lock_holders', { connection, lock }) === 1);
    }, 30_000, 'every store up, each stuck lock held, in /metrics');
    const m = await scrape(serveUrl);
    assert.ok(valueOf(m, 'locklens_lock_waiters', { connection: 'demo', lock: '/locks/reconcile' })! >= 1, 'waiters behind the stuck etcd holder');
    assert.equal(valueOf(m, 'locklens_lock_holder_never_expires', { connection: 'demo-redis', lock: 'app:stuck-migration' }), 1, 'the stuck token has no expiry');
  });

  test('Prometheus, with the shipped rules shortened, fires LockLensLockHeldTooLong for the stuck holder, and Alertmanager delivers it to the demo', async () => {
    assert.match(prometheusUrl, /^http:\/\/127\.0\.0\.1:\d+$/, `Debian's prometheus is installed by scripts/setup.sh: ${demo.proc.stdout}`);
    assert.match(alertmanagerUrl, /^http:\/\/127\.0\.0\.1:\d+$/, demo.proc.stdout);
    type Alert = { labels: Record<string, string>; state: string };
    const lock = '/locks/reconcile';
    const firing = await eventually(async () => {
      const { data } = (await (await fetch(`${prometheusUrl}/api/v1/alerts`)).json()) as { data: { alerts: Alert[] } };
      return data.alerts.find((a) => a.labels.alertname === 'LockLensLockHeldTooLong' && a.labels.lock === lock && a.state === 'firing');
    }, 120_000, `LockLensLockHeldTooLong firing for ${lock} in Prometheus`);
    assert.deepEqual([firing.labels.connection, firing.labels.store, firing.labels.severity], ['demo', 'etcd', 'warning']);
    await demo.proc.until((p) => p.stdout.includes(`LockLensLockHeldTooLong firing: Lock ${lock} held for`), 'the demo prints the delivered alert', 30_000);
  });

  test('locklens unlock databasechangeloglock/1 --force --yes releases the stuck Liquibase lock as Liquibase does', async () => {
    assert.equal((await listPostgres()).get(POSTGRES_LOCKS.liquibase)?.holder?.owner, LIQUIBASE_LOCKED_BY);
    const r = await procs.run(['unlock', POSTGRES_LOCKS.liquibase, '--force', '--yes', '--url', postgresUrl]);
    assert.equal(r.code, 0, show(r));
    assert.ok(r.stdout.includes(`released '${POSTGRES_LOCKS.liquibase}' (locked by ${LIQUIBASE_LOCKED_BY})`), show(r));
    assert.equal((await listPostgres()).get(POSTGRES_LOCKS.liquibase), undefined, 'the row is free');
    // The demo's workload sees it (it locks it again 30 s later, the incident coming back).
    await demo.proc.until((p) => new RegExp(`${POSTGRES_LOCKS.liquibase} was unlocked`).test(p.stdout), 'the workload sees the row unlocked', 20_000);
  });

  test('Ctrl-C (SIGINT) stops etcd, Redis, ZooKeeper, PostgreSQL, the workload and every process it started, and removes its temp dir', async () => {
    const before = demo.marked();
    assert.ok(before.length >= 8, `the demo and its processes carry the marker (${before.length})`);
    demo.proc.signal('SIGINT');
    const r = await demo.proc.wait(30_000);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /stopped .*temp dir removed/);
    // Its processes are gone (the demo waits for every group; allow a moment for the last exits to be reaped).
    const left = await eventually(() => (demo.marked().length === 0 ? [] : undefined), 5000, 'no process left').catch(() => demo.marked());
    assert.deepEqual(left.map(describePid), [], 'processes left behind');
    assert.ok(!existsSync(tempDir), `${tempDir} removed`);
    assert.equal(await listening(endpoint), false, `nothing listens on ${endpoint} any more`);
    const redisEndpoint = new URL(redisUrl).host;
    assert.equal(await listening(redisEndpoint), false, `nothing listens on ${redisEndpoint} any more`);
    assert.deepEqual(commandLines((c) => /redis-server/.test(c) && c.includes(`:${new URL(redisUrl).port}`)), [], 'no redis-server of the demo left');
    const zookeeperEndpoint = new URL(zookeeperUrl.replace(/^zookeeper:/, 'tcp:')).host;
    assert.equal(await listening(zookeeperEndpoint), false, `nothing listens on ${zookeeperEndpoint} any more`);
    assert.deepEqual(commandLines((c) => c.includes('zookeeper') && c.includes(tempDir)), [], 'no ZooKeeper JVM of the demo left');
    const postgresEndpoint = new URL(postgresUrl).host;
    assert.equal(await listening(postgresEndpoint), false, `nothing listens on ${postgresEndpoint} any more`);
    // The server's backends rewrite their command lines (and the environment's memory) as their titles, but end with
    // their postmaster, whose command line names the data dir in the temp dir (as the psycopg2 peers' name their script).
    assert.deepEqual(commandLines((c) => c.includes('postgres') && c.includes(tempDir)), [], 'no PostgreSQL server or psycopg2 peer of the demo left');
    for (const url of [serveUrl, prometheusUrl, alertmanagerUrl]) assert.equal(await listening(new URL(url).host), false, `nothing listens on ${url} any more`);
  });
});

function isQueue(lock: LockJson | undefined, waiters: number): boolean {
  return lock?.kind === 'queue' && !!lock.holder && lock.waiters.length >= waiters;
}

/**
 * The processes whose command line passes `test` (redis-server shows `redis-server 127.0.0.1:PORT`; the ZooKeeper JVM
 * its zoo.cfg, in the demo's temp dir).
 */
function commandLines(test: (cmdline: string) => boolean): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (test(cmdline)) found.push(`${entry} ${cmdline}`);
    } catch {
      // gone
    }
  }
  return found;
}

function describePid(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')}`;
  } catch {
    return `${pid} (gone)`;
  }
}

function listening(endpoint: string): Promise<boolean> {
  const [host, port] = endpoint.split(':');
  return new Promise((done) => {
    const socket = connect({ host, port: Number(port) });
    socket.once('connect', () => (socket.destroy(), done(true)));
    socket.once('error', () => done(false));
  });
}

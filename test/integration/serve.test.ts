import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Procs, type Proc } from '../harness/cli';
import { eventually, startEtcd, type EtcdServer } from '../harness/etcd';
import { startPostgres, SUPERUSER_PASSWORD, type PostgresServer } from '../harness/postgres';
import { PsycopgLock } from '../harness/psycopg';
import { startRedis, type RedisServer } from '../harness/redis';
import { RedisPyLock } from '../harness/redisPy';
import { familyOf, get, logLines, scrape, servingUrl, valueOf, type Exposition } from '../harness/serve';
import { startAll } from '../harness/processes';

/**
 * `locklens serve` (dist/locklens.js) watching a real etcd, Redis and PostgreSQL at once while etcdctl, redis-py and
 * psycopg2 take, queue for and hand over locks: what /metrics says of them, a store stopped and started again, the
 * exposition's names and labels, secrets kept out of it, and a prompt clean exit on SIGTERM.
 */

const REDIS_PASSWORD = 'redis-pw-never-shown';
const GAUGES = ['holders', 'waiters', 'oldest_hold_seconds', 'oldest_wait_seconds', 'ttl_seconds', 'renewal_stalled', 'holder_never_expires'];
const COUNTERS = ['acquisitions_total', 'handoffs_total', 'expiries_total', 'force_releases_total'];
/** Every family of the design, and its label names (a histogram's buckets add `le`). */
const FAMILIES: Record<string, string[]> = {
  locklens_build_info: ['version'],
  locklens_store_up: ['connection', 'store'],
  locklens_store_watch_state: ['connection', 'state', 'store'],
  locklens_locks: ['connection', 'store'],
  locklens_locks_unlisted: ['connection', 'store'],
  locklens_deadlock_cycles: ['connection', 'store'],
  locklens_lock_order_inversions: ['connection', 'store'],
  ...Object.fromEntries([...GAUGES, ...COUNTERS].map((m) => [`locklens_lock_${m}`, ['connection', 'kind', 'lock', 'store']])),
  locklens_lock_hold_duration_seconds: ['connection', 'kind', 'store'],
  locklens_lock_wait_duration_seconds: ['connection', 'kind', 'store'],
};

describe('locklens serve against etcd, Redis and PostgreSQL', () => {
  let etcd: EtcdServer;
  let redis: RedisServer;
  let pg: PostgresServer;
  let dir: string;
  let procs: Procs;
  let serve: Proc;
  let base: string;
  const peers: { dispose(): void }[] = [];
  let redisToken = '';

  const metrics = () => scrape(base);
  const until = <T>(check: (m: Exposition) => T | undefined | false, what: string) =>
    eventually(async () => {
      if (!serve.running) throw new Error(`serve exited: ${serve.stdout} ${serve.stderr}`);
      return check(await metrics());
    }, 30_000, what);
  const lock = (connection: string, lockName: string) => ({ connection, lock: lockName });

  before(async () => {
    [etcd, redis, pg] = await startAll([startEtcd(), startRedis({ password: REDIS_PASSWORD }), startPostgres()] as const);
    dir = mkdtempSync(join(tmpdir(), 'locklens-serve-'));
    writeFileSync(join(dir, 'redis-password'), `${REDIS_PASSWORD}\n`);
    writeFileSync(
      join(dir, 'serve.yml'),
      `listen: 127.0.0.1:0
connections:
  - name: etcd
    endpoints: [${etcd.url}]
    prefixes: [/locks/]
  - name: redis
    store: redis
    endpoints: [${redis.url}]
    passwordFile: ${join(dir, 'redis-password')}
  - name: pg
    store: postgres
    endpoints: [${pg.url()}]
    passwordEnv: PG_MONITOR_PASSWORD
`,
    );
    procs = new Procs(etcd.url);
    serve = procs.locklens(['serve', '--config', join(dir, 'serve.yml')], { env: { PG_MONITOR_PASSWORD: SUPERUSER_PASSWORD } });
    base = await servingUrl(serve);
  });

  after(async () => {
    peers.forEach((p) => p.dispose());
    await procs?.dispose();
    await Promise.all([etcd?.dispose(), redis?.dispose(), pg?.dispose()]);
    rmSync(dir, { recursive: true, force: true });
  });

  test('says at start what it watches and where; /readyz turns 200 once every connection has been read', async () => {
    const [serving] = logLines(serve);
    assert.equal(serving.msg, 'serving');
    assert.match(String(serving.metrics), /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.deepEqual((serving.connections as { name: string; store: string }[]).map((c) => [c.name, c.store]), [['etcd', 'etcd'], ['redis', 'redis'], ['pg', 'postgres']]);
    assert.equal((await get(`${base}/healthz`)).status, 200);
    await eventually(async () => (await get(`${base}/readyz`)).status === 200, 30_000, '/readyz 200');
    assert.deepEqual(JSON.parse((await get(`${base}/readyz`)).body), { ready: true });
    const m = await metrics();
    for (const c of ['etcd', 'redis', 'pg']) assert.equal(valueOf(m, 'locklens_store_up', { connection: c }), 1, c);
    assert.equal(valueOf(m, 'locklens_store_watch_state', { connection: 'pg', state: 'live' }), 1);
    assert.equal(valueOf(m, 'locklens_store_watch_state', { connection: 'pg', state: 'reconnecting' }), 0);
  });

  test("real clients' locks: holders, waiters, ages and TTL; a handoff moves the counters", async () => {
    const etcdHolder = procs.etcdctl(['lock', '/locks/jobs']);
    const redisHolder = new RedisPyLock(`redis://:${REDIS_PASSWORD}@127.0.0.1:${redis.port}`, 'jobs:redis', 'hold', 30);
    const pgHolder = new PsycopgLock(pg.dsn(), '42', { mode: 'hold' });
    peers.push(redisHolder, pgHolder);
    redisToken = (await redisHolder.until(['acquired'])).split(' ')[1];
    await pgHolder.until(['acquired']);
    const pgWaiter = new PsycopgLock(pg.dsn(), '42', { mode: 'hold' });
    peers.push(pgWaiter);
    await pgWaiter.until(['waiting']);

    const m = await until((e) => valueOf(e, 'locklens_lock_waiters', lock('pg', '42')) === 1 && valueOf(e, 'locklens_lock_holders', lock('etcd', '/locks/jobs')) === 1 && valueOf(e, 'locklens_lock_holders', lock('redis', 'jobs:redis')) === 1 && e, 'every lock held, pg with a waiter');
    assert.equal(valueOf(m, 'locklens_lock_holders', lock('pg', '42')), 1);
    assert.ok(valueOf(m, 'locklens_lock_oldest_wait_seconds', lock('pg', '42'))! > 0);
    assert.ok(valueOf(m, 'locklens_lock_oldest_hold_seconds', lock('pg', '42'))! >= valueOf(m, 'locklens_lock_oldest_wait_seconds', lock('pg', '42'))!);
    const redisTtl = valueOf(m, 'locklens_lock_ttl_seconds', lock('redis', 'jobs:redis'));
    assert.ok(redisTtl! > 0 && redisTtl! <= 30, `redis-py's timeout=30 is its key's TTL (${redisTtl})`);
    const etcdTtl = valueOf(m, 'locklens_lock_ttl_seconds', lock('etcd', '/locks/jobs'));
    assert.ok(etcdTtl! > 0 && etcdTtl! <= 60, `etcdctl lock's session lease (${etcdTtl})`);
    assert.equal(valueOf(m, 'locklens_lock_ttl_seconds', lock('pg', '42')), undefined, 'a PostgreSQL session has no TTL to sample');
    assert.equal(valueOf(m, 'locklens_lock_holder_never_expires', lock('pg', '42')), 0, 'it ends with its connection');
    assert.equal(valueOf(m, 'locklens_lock_waiters', lock('etcd', '/locks/jobs')), 0);
    assert.deepEqual([valueOf(m, 'locklens_lock_acquisitions_total', lock('pg', '42')), valueOf(m, 'locklens_lock_handoffs_total', lock('pg', '42'))], [1, 0]);

    pgHolder.release();
    await pgWaiter.until(['acquired']);
    const after = await until((e) => valueOf(e, 'locklens_lock_handoffs_total', lock('pg', '42')) === 1 && e, 'the handoff counted');
    assert.equal(valueOf(after, 'locklens_lock_acquisitions_total', lock('pg', '42')), 2);
    assert.equal(valueOf(after, 'locklens_lock_waiters', lock('pg', '42')), 0);
    assert.equal(valueOf(after, 'locklens_lock_hold_duration_seconds_count', { connection: 'pg', kind: 'queue' }), 1);
    assert.equal(valueOf(after, 'locklens_lock_wait_duration_seconds_count', { connection: 'pg', kind: 'queue' }), 1);
    etcdHolder.signal('SIGINT');
    await until((e) => valueOf(e, 'locklens_lock_holders', lock('etcd', '/locks/jobs')) === undefined, 'the etcd lock gone');
  });

  test('an etcd lease its holder stopped renewing reads stalled before it expires, though serve asks it only near half its TTL', async () => {
    const holder = procs.etcdctl(['lock', '--ttl', '20', '/locks/stall']);
    await until((e) => valueOf(e, 'locklens_lock_holders', lock('etcd', '/locks/stall')) === 1, 'the etcd lock held');
    assert.equal(valueOf(await metrics(), 'locklens_lock_renewal_stalled', lock('etcd', '/locks/stall')), 0);
    holder.signal('SIGSTOP');
    const m = await until((e) => valueOf(e, 'locklens_lock_renewal_stalled', lock('etcd', '/locks/stall')) === 1 && e, 'the stall seen while the lock is held');
    assert.ok(valueOf(m, 'locklens_lock_ttl_seconds', lock('etcd', '/locks/stall'))! < 10, 'below half of its 20 s');
    holder.signal('SIGKILL');
    await until((e) => valueOf(e, 'locklens_lock_holders', lock('etcd', '/locks/stall')) === undefined, 'the lock gone with its lease');
  });

  test('every family has HELP and TYPE, the names and label sets of the design; no secret in it nor in the log', async () => {
    const m = await metrics();
    const names = new Set(m.samples.map((s) => familyOf(m, s.name)));
    for (const name of names) {
      assert.ok(m.help.get(name) && m.type.get(name), `${name} has HELP and TYPE`);
      assert.match(name, /^(locklens|process|nodejs)_/);
    }
    for (const [family, labels] of Object.entries(FAMILIES)) {
      assert.ok(m.type.has(family), `${family} is there`);
      for (const s of m.samples.filter((x) => familyOf(m, x.name) === family)) assert.deepEqual(Object.keys(s.labels).filter((l) => l !== 'le').sort(), labels, s.name);
    }
    assert.ok(m.samples.some((s) => s.name === 'process_cpu_seconds_total'), "prom-client's process metrics");
    assert.ok(redisToken.length > 10);
    for (const secret of [REDIS_PASSWORD, SUPERUSER_PASSWORD, redisToken]) {
      const text = (await get(`${base}/metrics`)).body;
      assert.ok(!text.includes(secret), 'not in /metrics');
      assert.ok(!serve.stdout.includes(secret) && !serve.stderr.includes(secret), 'not in the log');
    }
  });

  test('a store stopped and started again: store_up goes 0 then 1, the lock comes back, serve runs on', async () => {
    await etcd.etcdctl(['put', '/locks/kept', 'held by nothing']);
    await until((e) => valueOf(e, 'locklens_lock_holders', lock('etcd', '/locks/kept')) === 1 && e, 'the kept lock');
    await etcd.stop();
    await until((e) => valueOf(e, 'locklens_store_up', { connection: 'etcd' }) === 0 && e, 'etcd down');
    assert.equal(valueOf(await metrics(), 'locklens_store_up', { connection: 'redis' }), 1, 'the other stores are watched on');
    await etcd.restart();
    const back = await until((e) => valueOf(e, 'locklens_store_up', { connection: 'etcd' }) === 1 && e, 'etcd up again');
    assert.equal(valueOf(back, 'locklens_lock_holders', lock('etcd', '/locks/kept')), 1);
    assert.equal(valueOf(back, 'locklens_lock_holder_never_expires', lock('etcd', '/locks/kept')), 1, 'a key without a lease');
    assert.ok(serve.running);
    assert.ok(logLines(serve).some((l) => l.connection === 'etcd' && l.msg === 'watch reconnecting'), 'the break is logged');
  });

  test('SIGTERM: closes everything and exits 0 promptly', async () => {
    const started = Date.now();
    serve.signal('SIGTERM');
    const r = await serve.wait();
    const took = Date.now() - started;
    assert.equal(r.code, 0, r.stderr);
    assert.ok(took < 5000, `exited in ${took} ms`);
    assert.deepEqual(logLines(serve).slice(-2).map((l) => l.msg), ['stopping', 'stopped']);
  });
});

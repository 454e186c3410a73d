import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { writeFileSync } from 'node:fs';
import { HistoryStore } from '../../src/core/recording/historyStore';
import type { RecordedHold } from '../../src/core/recording/recordedHold';
import { show, type Procs } from '../harness/cli';
import { KazooLock } from '../harness/kazoo';
import { ADMIN, startMariaDb } from '../harness/mariadb';
import { SUPERUSER_PASSWORD, startPostgres } from '../harness/postgres';
import { PsycopgLock } from '../harness/psycopg';
import { PyMysqlLock } from '../harness/pymysql';
import type { PythonPeer } from '../harness/pythonPeer';
import { startZooKeeper } from '../harness/zookeeper';
import { fixture } from '../harness/cliFixture';
import { eventually } from '../harness/etcd';
import { serverFixture } from '../harness/cliFixture';
import { startRedis } from '../harness/redis';
import { RedisPyLock } from '../harness/redisPy';
import { scrape, startRecordingServe, valueOf, type ConfigConnection } from '../harness/serve';

/**
 * How each hold ended, as a real `locklens serve` records it from real stores and their own clients' locks: released by
 * its owner, expired (its TTL ran out: a Redis key's PX, a SIGKILLed etcdctl's lease), force-released by
 * `locklens unlock --force --data DIR`, and its owner lost (a SIGKILLed kazoo's session expired, a SIGKILLed psycopg2's
 * or PyMySQL's connection closed); the history, `locklens history` and serve's counters say the same.
 */

/** The lock's recorded holds once `n` have ended. */
async function ended(data: string, name: string, n: number): Promise<RecordedHold[]> {
  return eventually(async () => {
    const store = await HistoryStore.openReader(data);
    try {
      const holds = await store.holds({ lock: name });
      return holds.filter((h) => h.endedAt !== null).length >= n ? holds : undefined;
    } finally {
      store.close();
    }
  }, 30_000, `${n} ended holds of ${name} recorded`);
}

/** Resolves once serve has recorded a hold of `name` open. */
const held = (data: string, name: string, n: number) =>
  eventually(async () => {
    const store = await HistoryStore.openReader(data);
    try {
      const holds = await store.holds({ lock: name });
      return holds.length >= n && holds[n - 1].endedAt === null;
    } finally {
      store.close();
    }
  }, 30_000, `hold ${n} of ${name} recorded`);

/** What `locklens history --data` says of each hold's end, as JSON and as text, and serve's counters of the lock. */
async function told(procs: Procs, base: string, data: string, connection: string, name: string) {
  const json = await procs.run(['history', name, '--data', data, '--json']);
  assert.equal(json.code, 0, show(json));
  const holds = (JSON.parse(json.stdout) as { holds: { end: string | null; forceReleasedBy: string | null }[] }).holds;
  const text = await procs.run(['history', name, '--data', data]);
  assert.equal(text.code, 0, show(text));
  const metrics = await eventually(async () => {
    const m = await scrape(base);
    return valueOf(m, 'locklens_lock_force_releases_total', { connection, lock: name }) === 1 && m;
  }, 20_000, 'the force release counted');
  return {
    ends: holds.map((h) => [h.end, h.forceReleasedBy]),
    text: text.stdout,
    expiries: valueOf(metrics, 'locklens_lock_expiries_total', { connection, lock: name }),
  };
}

const EXPECTED = [
  ['released', null],
  ['expired', null],
  ['forceReleased', userInfo().username],
];

for (const notify of ['Ex', '']) {
  describe(`how Redis holds ended (redis-py), notify-keyspace-events '${notify}'`, () => {
    const f = serverFixture(() => startRedis(notify ? { notify } : {}), (r) => r.url);
    test('released, expired (its PX ran out), force-released', async () => {
      const name = 'ends:jobs';
      const data = join(f.dir, 'data');
      // Read every second without keyspace notifications ('Ex' tells only expiries): its second hold lasts 3 s.
      const connection: ConfigConnection = { name: 'cache', store: 'redis', endpoints: [f.server.url], prefixes: ['ends:'], pollSeconds: 1 };
      const { serve, base } = await startRecordingServe(f.procs, { dir: f.dir, data, connection });
      const peer = (timeout: number) => {
        const p = new RedisPyLock(f.server.url, name, 'hold', timeout);
        f.defer(() => p.dispose());
        return p;
      };

      const released = peer(30);
      await released.until(['acquired']);
      await held(data, name, 1);
      released.release();
      await released.until(['released']);
      await ended(data, name, 1);

      // Never released: its key's 3 s PX runs out while it waits for its gate.
      const expiring = peer(3);
      await expiring.until(['acquired']);
      await held(data, name, 2);
      await ended(data, name, 2);

      const forced = peer(30);
      await forced.until(['acquired']);
      await held(data, name, 3);
      const unlock = await f.procs.run(['unlock', name, '--force', '--yes', '--url', f.server.url, '--data', data, '--connection-name', 'cache']);
      assert.equal(unlock.code, 0, show(unlock));
      await ended(data, name, 3);

      const r = await told(f.procs, base, data, 'cache', name);
      assert.deepEqual(r.ends, EXPECTED, r.text);
      assert.deepEqual(r.text.trimEnd().split('\n').slice(1).map((l) => l.split('  ')[5]), ['released', 'expired', `force-released by ${userInfo().username}`], r.text);
      assert.equal(r.expiries, 1);
      assert.equal(serve.stdout.includes('expired events tell expiries from deletes'), notify !== '', 'the watch says what tells an expiry');
      serve.signal('SIGTERM');
      assert.equal((await serve.wait()).code, 0);
    });
  });
}

describe('how etcd holds ended (etcdctl lock)', () => {
  const f = fixture();
  test('released (its command ended), expired (etcdctl SIGKILLed: its lease ran out), force-released', async () => {
    const name = '/ends/jobs';
    const data = join(f.dir, 'data');
    const connection: ConfigConnection = { name: 'prod', store: 'etcd', endpoints: [f.ep], prefixes: ['/ends/'] };
    const { serve, base } = await startRecordingServe(f.procs, { dir: f.dir, data, connection });

    const gate = join(f.dir, 'gate');
    const released = await f.etcdctlLock(name, ['sh', '-c', 'while [ ! -e "$0" ]; do sleep 0.05; done', gate]);
    await held(data, name, 1);
    writeFileSync(gate, '');
    assert.equal((await released.proc.wait()).code, 0);
    await ended(data, name, 1);

    // Killed, so that nobody renews or revokes its 3 s lease: it runs out. serve must have sampled its TTL first.
    const before = new Set(await f.keys(`${name}/`));
    const killed = f.procs.etcdctl(['lock', '--ttl', '3', name]);
    await eventually(async () => (await f.keys(`${name}/`)).some((k) => !before.has(k)), 20_000, 'etcdctl holds');
    await held(data, name, 2);
    await eventually(async () => valueOf(await scrape(base), 'locklens_lock_ttl_seconds', { connection: 'prod', lock: name }) !== undefined, 20_000, 'its TTL sampled');
    killed.signal('SIGKILL');
    await ended(data, name, 2);

    const forced = f.procs.etcdctl(['lock', name]);
    await held(data, name, 3);
    const unlock = await f.procs.run(['unlock', name, '--force', '--yes', '--endpoints', f.ep, '--data', data, '--connection-name', 'prod']);
    assert.equal(unlock.code, 0, show(unlock));
    await ended(data, name, 3);
    forced.signal('SIGKILL');

    const r = await told(f.procs, base, data, 'prod', name);
    assert.deepEqual(r.ends, EXPECTED, r.text);
    assert.equal(r.expiries, 1);
    serve.signal('SIGTERM');
    assert.equal((await serve.wait()).code, 0);
  });
});

/**
 * A hold released by an owner whose session or connection lives on (the peer stays until told to leave), then one whose
 * owner's process is SIGKILLed while it holds: `released`, then `ownerLost`, in the history, `locklens history` (JSON
 * and words) and serve's counter of owners lost.
 */
async function releasedThenLost(
  f: { procs: Procs; dir: string },
  s: { connection: ConfigConnection; env?: NodeJS.ProcessEnv; name: string; take: (stay: boolean) => PythonPeer },
): Promise<void> {
  const data = join(f.dir, 'data');
  const { serve, base } = await startRecordingServe(f.procs, { dir: f.dir, data, connection: s.connection, env: s.env });
  const released = s.take(true);
  await released.until(['acquired']);
  await held(data, s.name, 1);
  released.release();
  await released.until(['released']);
  await ended(data, s.name, 1);
  released.leave();

  const lost = s.take(false);
  await lost.until(['acquired']);
  await held(data, s.name, 2);
  lost.signal('SIGKILL');
  await ended(data, s.name, 2);

  const json = await f.procs.run(['history', s.name, '--data', data, '--json']);
  assert.equal(json.code, 0, show(json));
  const holds = (JSON.parse(json.stdout) as { holds: { end: string | null; forceReleasedBy: string | null }[] }).holds;
  const text = await f.procs.run(['history', s.name, '--data', data]);
  assert.equal(text.code, 0, show(text));
  assert.deepEqual(holds.map((h) => [h.end, h.forceReleasedBy]), [['released', null], ['ownerLost', null]], text.stdout);
  assert.match(text.stdout, /owner lost \(session or connection ended\)/);
  const labels = { connection: s.connection.name, lock: s.name };
  const metrics = await eventually(async () => {
    const m = await scrape(base);
    return valueOf(m, 'locklens_lock_acquisitions_total', labels) === 2 && m;
  }, 20_000, 'both holds counted');
  assert.equal(valueOf(metrics, 'locklens_lock_owner_losses_total', labels), 1);
  serve.signal('SIGTERM');
  assert.equal((await serve.wait()).code, 0);
}

describe('how ZooKeeper holds ended (kazoo), cons allowed', () => {
  const f = serverFixture(() => startZooKeeper({ fourLetterWords: ['srvr', 'cons'] }), (z) => z.url);
  test('released (its session lives on), owner lost (kazoo SIGKILLed: its session expired)', async () => {
    const name = '/ends/jobs';
    await releasedThenLost(f, {
      connection: { name: 'coordination', store: 'zookeeper', endpoints: [f.server.url], prefixes: ['/ends/'] },
      name,
      take: (stay) => {
        const p = new KazooLock(`127.0.0.1:${f.server.port}`, name, { sessionSeconds: 2, stay });
        f.defer(() => p.dispose());
        return p;
      },
    });
  });
});

describe('how PostgreSQL advisory holds ended (psycopg2)', () => {
  const f = serverFixture(startPostgres, (pg) => pg.url());
  test('released (pg_advisory_unlock, its session lives on), owner lost (psycopg2 SIGKILLed: its connection closed)', async () => {
    await releasedThenLost(f, {
      connection: { name: 'billing-db', store: 'postgres', endpoints: [f.server.url()], prefixes: ['42'], passwordEnv: 'PGPASSWORD' },
      env: { PGPASSWORD: SUPERUSER_PASSWORD },
      name: '42',
      take: (stay) => {
        const p = new PsycopgLock(f.server.dsn(), '42', { stay });
        f.defer(() => p.dispose());
        return p;
      },
    });
  });
});

describe('how MariaDB GET_LOCK holds ended (PyMySQL)', () => {
  const f = serverFixture(startMariaDb, (m) => m.url());
  test('released (RELEASE_LOCK, its connection lives on), owner lost (PyMySQL SIGKILLed: its connection closed)', async () => {
    await releasedThenLost(f, {
      connection: { name: 'orders-db', store: 'mysql', endpoints: [f.server.url()], prefixes: ['ends-job'], passwordEnv: 'MYSQL_PWD' },
      env: { MYSQL_PWD: ADMIN.password },
      name: 'ends-job',
      take: (stay) => {
        const p = new PyMysqlLock({ port: f.server.port, ...ADMIN }, 'ends-job', { stay });
        f.defer(() => p.dispose());
        return p;
      },
    });
  });
});

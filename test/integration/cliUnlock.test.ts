import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import { show } from '../harness/cli';
import { fixture, HEX_KEY } from '../harness/cliFixture';
import { DATABASE } from '../harness/mariadb';
import { mariadbCli } from '../harness/mariadbCli';
import { postgresCli } from '../harness/postgresCli';
import { redisCli } from '../harness/redisCli';
import { zookeeperCli } from '../harness/zookeeperCli';

/**
 * Black-box tests of `locklens unlock --force` (dist/locklens.js) against each store's real server: it frees a stuck
 * holder only while it is still the one read, as the holder's own library would (a deleted key or node, a terminated
 * session, a lock table's row cleared its library's way), and refuses without --force or a confirmation.
 */

/** ShedLock's UTC wall clock for a column without a time zone (its PostgresSqlServerTimeStatementsSource). */
const UTC_NOW = "timezone('utc', CURRENT_TIMESTAMP)";

describe('locklens over etcd (--endpoints), against etcdctl lock', () => {
  const f = fixture();

  describe('locklens unlock --force (etcd): deletes the stuck holder\'s key, only if it is still the one read', () => {
    test('frees an etcdctl holder: its key goes, its lease lives on, and the next etcdctl waiter holds', async () => {
      const holder = await f.etcdctlLock('ul-jobs');
      const waiter = await f.etcdctlLock('ul-jobs');
      const lease = HEX_KEY('ul-jobs').exec(holder.key)![1];
      const r = await f.procs.run(['unlock', 'ul-jobs', '--force', '--yes', '--endpoints', f.ep]);
      assert.equal(r.code, 0, show(r));
      assert.match(r.stdout, new RegExp(`^released 'ul-jobs' from ${holder.key} \\(owner ${lease}\\): deleted the key`), show(r));
      await waiter.proc.until((p) => p.lines[0], 'the waiting etcdctl holds and prints its key');
      assert.deepEqual(await f.keys('ul-jobs/'), [waiter.key]);
      assert.match(await f.etcd.etcdctl(['lease', 'timetolive', lease]), /remaining\(\d+s\)/, 'the holder\'s lease is not revoked');
    });

    test('a single key without a lease (held forever) is deleted too', async () => {
      await f.etcd.etcdctl(['put', 'ul-single', 'stuck']);
      const r = await f.procs.run(['unlock', 'ul-single', '--force', '--yes', '--endpoints', f.ep]);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(await f.keys('ul-single'), []);
    });

    test('without --force it refuses (exit 2); a free or unknown name exits 2; no terminal without --yes refuses', async () => {
      const holder = await f.etcdctlLock('ul-guard');
      for (const [args, message] of [
        [['unlock', 'ul-guard', '--yes'], /pass --force/],
        [['unlock', 'ul-nothing', '--force', '--yes'], /no lock named 'ul-nothing'/],
        [['unlock', 'ul-guard', '--force'], /pass --yes/],
      ] as const) {
        const r = await f.procs.run([...args, '--endpoints', f.ep], { input: 'y\n' });
        assert.equal(r.code, 2, `${args.join(' ')}: ${show(r)}`);
        assert.match(r.stderr, message, show(r));
      }
      assert.deepEqual(await f.keys('ul-guard/'), [holder.key], 'nothing was deleted');
    });
  });
});

describe('locklens over Redis (--url), against redis-py and Redisson layouts', () => {
  const f = redisCli();
  const { url, peer } = f;

  test('locklens unlock --force frees a stuck redis-py lock (no expiry) only while it still holds the token read', async () => {
    const py = peer('app:stuck', 'hold', null);
    const token = (await py.until(['acquired'])).split(' ')[1];
    const r = await f.procs.run(['unlock', 'app:stuck', '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, new RegExp(`released 'app:stuck' from app:stuck \\(owner ${token}\\)`), show(r));
    assert.equal(await f.server.cli(['EXISTS', 'app:stuck']), '0');
    py.release();
    assert.equal(await py.until(['released', 'release-failed']), 'release-failed LockNotOwnedError', 'redis-py learns at release that it had lost the lock');
  });
  test('a semaphore with several permit holders needs --member: only that permit is freed, the other peer keeps its own', async () => {
    const client = new Redis(url(), { protocol: 2 });
    f.procs.defer(() => client.disconnect());
    const peers = [0, 1].map(() => new Semaphore(client, 'cleanup', 2, { acquireTimeout: 10_000 }));
    for (const p of peers) await p.acquire();
    f.procs.defer(() => Promise.all(peers.map((p) => p.release())));
    const unnamed = await f.procs.run(['unlock', 'semaphore:cleanup', '--force', '--yes', '--url', url()]);
    assert.equal(unnamed.code, 2, show(unnamed));
    assert.match(unnamed.stderr, /has 2 permit holders: name the one to release with --member KEY/, show(unnamed));
    const r = await f.procs.run(['unlock', 'semaphore:cleanup', '--member', peers[0].identifier, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(await client.zrange('semaphore:cleanup', '0', '-1'), [peers[1].identifier]);
    const gone = await f.procs.run(['unlock', 'semaphore:cleanup', '--member', peers[0].identifier, '--force', '--yes', '--url', url()]);
    assert.equal(gone.code, 9, show(gone));
  });
});

describe('locklens over ZooKeeper (--url zookeeper://), against kazoo and Curator layouts', { timeout: 180_000 }, () => {
  const f = zookeeperCli();
  const { url, kazoo, list, listed } = f;

  test("locklens unlock --force --yes deletes the holder's node: the kazoo waiter takes over, the holder is not told", async () => {
    const name = '/unlock/job';
    const holder = kazoo(name, { identifier: 'stuck-worker' });
    const holderSession = (await holder.until(['acquired'])).split(' ')[2];
    await holder.contenders();
    const waiter = kazoo(name, { identifier: 'next-worker' });
    await waiter.until(['waiting']);
    const shown = (await listed(name, (l) => l.waiters.length === 1, 'the waiter listed')).holder!;
    const said = holder.lines;

    const r = await f.procs.run(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stdout, `released '${name}' from ${shown.key} (session ${holderSession}): deleted the node created at zxid ${shown.token}\n  ${shown.key}\n`);
    await waiter.until(['acquired']);
    assert.deepEqual(await waiter.contenders(), ['next-worker'], "the holder's node is gone");
    assert.equal((await list(name))[0].holder?.data, 'next-worker');
    assert.deepEqual(holder.lines, said, 'the holder heard nothing: it still believes it holds the lock');
  });

  test("on a kazoo Semaphore, unlock --member KEY --force --yes frees that one permit (none without --member): the other keeps its, the waiter takes it", async () => {
    const name = '/unlock/pool';
    const first = f.kazooSemaphore(name, { identifier: 'stuck-exporter', maxLeases: 2 });
    await first.until(['acquired']);
    const second = f.kazooSemaphore(name, { identifier: 'busy-exporter', maxLeases: 2 });
    await second.until(['acquired']);
    const waiter = f.kazooSemaphore(name, { identifier: 'next-exporter', maxLeases: 2 });
    await waiter.until(['waiting']);
    const shown = (await listed(name, (l) => l.kind === 'semaphore' && l.waiters.length === 1, 'the waiter listed')).holder!;
    assert.equal(shown.data, 'stuck-exporter', 'the first to take a permit is listed first');

    const which = await f.procs.run(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(which.code, 2, show(which));
    assert.match(which.stderr, /has 2 permit holders: name the one to release with --member KEY/);
    const r = await f.procs.run(['unlock', name, '--member', shown.key, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, new RegExp(`^released '${name}' from ${shown.key} \\(session [0-9a-f]+\\): deleted the node created at zxid ${shown.token}\n`));
    await waiter.until(['acquired']);
    assert.deepEqual(await waiter.holders(), ['busy-exporter', 'next-exporter'], 'only the permit shown was freed');
  });
});

describe('locklens over PostgreSQL (--url postgres://), against psycopg2 sessions and lock tables', { timeout: 300_000 }, () => {
  const f = postgresCli();
  const { fresh, url, cli, defer, psycopg, list, lockNamed } = f;

  test("a stuck Liquibase row is listed as databasechangeloglock/1 (LOCKEDBY, no TTL) and unlock --force --yes releases it Liquibase's way", async () => {
    // Liquibase 4's DDL on PostgreSQL and its lock statement, as a migration that was killed left it.
    await f.server.superuserQuery(
      'CREATE TABLE public.databasechangeloglock (ID INTEGER NOT NULL, LOCKED BOOLEAN NOT NULL, LOCKGRANTED TIMESTAMP WITHOUT TIME ZONE, LOCKEDBY VARCHAR(255), CONSTRAINT databasechangeloglock_pkey PRIMARY KEY (ID));' +
        'DELETE FROM public.databasechangeloglock; INSERT INTO public.databasechangeloglock (ID, LOCKED) VALUES (1, FALSE);' +
        "UPDATE public.databasechangeloglock SET LOCKED = TRUE, LOCKEDBY = 'migrator-7f3c (10.0.4.17)', LOCKGRANTED = NOW() WHERE ID = 1 AND LOCKED = FALSE",
    );
    defer(() => f.server.superuserQuery('DROP TABLE public.databasechangeloglock'));
    const name = 'databasechangeloglock/1';
    const lock = (await lockNamed(name, ['--prefix', 'databasechangeloglock/']))!;
    assert.ok(lock, 'the row is listed');
    assert.equal(lock.kind, 'single');
    assert.deepEqual(lock.holder, { key: '1', lease: null, createRevision: null, ttl: null, owner: 'migrator-7f3c (10.0.4.17)', holds: null, token: null, convention: 'liquibase', liveness: { state: 'unknown', evidence: 'nothing renews or ends it: it stays until deleted, whatever became of its holder' } });
    assert.deepEqual(lock.waiters, []);
    const text = await cli(['list', '--url', url(), '--prefix', 'databasechangeloglock/']);
    assert.equal(text.stdout, `${name}  (single, 0 waiting)\n  holder    1  locked by migrator-7f3c (10.0.4.17)  ttl none (never expires)  unknown (nothing renews or ends it: it stays until deleted, whatever became of its holder)\n`, show(text));

    const r = await cli(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stdout, `released '${name}' (locked by migrator-7f3c (10.0.4.17)): cleared LOCKED, LOCKGRANTED and LOCKEDBY (Liquibase's releaseLock)\n  ${name}\n`);
    assert.deepEqual(await f.server.superuserQuery('SELECT id, locked, lockgranted, lockedby FROM public.databasechangeloglock'), [{ id: 1, locked: false, lockgranted: null, lockedby: null }]);
    assert.equal(await lockNamed(name), undefined, 'an unlocked row is no lock');
    const again = await cli(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(again.code, 2, show(again));
    assert.match(again.stderr, /no lock named 'databasechangeloglock\/1'/, show(again));
  });

  test("a ShedLock row's TTL counts down with the database's clock; one past its lock_until is free; unlock frees it (ShedLock's next run takes it)", async () => {
    await f.server.superuserQuery(
      'CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name));' +
        `INSERT INTO shedlock VALUES ('report', ${UTC_NOW} + interval '600 seconds', ${UTC_NOW}, 'host-a'), ('cleanup', ${UTC_NOW} - interval '60 seconds', ${UTC_NOW} - interval '120 seconds', 'host-b')`,
    );
    defer(() => f.server.superuserQuery('DROP TABLE shedlock'));
    /** Seconds the row has left by the database's clock, now. */
    const left = async () => Number((await f.server.superuserQuery(`SELECT extract(epoch FROM lock_until - ${UTC_NOW})::float8 AS s FROM shedlock WHERE name = 'report'`))[0].s);
    const before = await left();
    const locks = await list(['--prefix', 'shedlock/']);
    const after = await left();
    assert.deepEqual(locks.map((l) => [l.name, l.holder?.owner, l.holder?.convention]), [['shedlock/report', 'host-a', 'shedlock']], 'cleanup, past its lock_until, is free');
    const ttl = locks[0].holder!.ttl!;
    assert.ok(Math.floor(after) <= ttl && ttl <= Math.ceil(before), `ttl ${ttl} is what the row had left while listed (${after}..${before})`);

    const r = await cli(['unlock', 'shedlock/report', '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^released 'shedlock\/report' \(locked by host-a\): set lock_until back to locked_at \(ShedLock's next run takes it\)\n/, show(r));
    assert.ok((await left()) <= 0, 'lock_until is no longer ahead');
    assert.equal(await lockNamed('shedlock/report'), undefined, 'free: no lock');
  });

  test('unlock without --yes and without a terminal refuses (exit 2) and terminates nothing', async () => {
    const key = fresh();
    const holder = psycopg(key);
    const pid = String(await holder.pid());
    await holder.until(['acquired']);
    const r = await cli(['unlock', key, '--force', '--url', url()]);
    assert.equal(r.code, 2, show(r));
    assert.equal(r.stderr, `locklens: refusing to force-release '${key}' without confirmation: pass --yes\n`);
    assert.equal((await lockNamed(key))?.holder?.owner, pid, 'still held by psycopg2');
    const noForce = await cli(['unlock', key, '--yes', '--url', url()]);
    assert.equal(noForce.code, 2, show(noForce));
    assert.match(noForce.stderr, /pass --force/);
    holder.release();
    assert.equal(await holder.until(['released', 'release-failed']), 'released', 'its session lived on');
  });
});

describe('locklens over MariaDB (--url mysql://), against PyMySQL connections and lock tables', { timeout: 300_000 }, () => {
  const f = mariadbCli();
  const { url, cli, defer, lockNamed } = f;

  test("a stuck Liquibase row is listed as DATABASECHANGELOGLOCK/1 (LOCKEDBY, no TTL) and unlock --force --yes releases it Liquibase's way", async () => {
    // Liquibase's DDL on MySQL/MariaDB (an uppercase table, LOCKED a BIT(1)), and its lock statement, as a killed
    // migration left it.
    await f.server.sql(
      `USE ${DATABASE};` +
        'CREATE TABLE DATABASECHANGELOGLOCK (ID INT NOT NULL, LOCKED BIT(1) NOT NULL, LOCKGRANTED datetime NULL, LOCKEDBY VARCHAR(255) NULL, CONSTRAINT PK_DATABASECHANGELOGLOCK PRIMARY KEY (ID));' +
        'DELETE FROM DATABASECHANGELOGLOCK; INSERT INTO DATABASECHANGELOGLOCK (ID, LOCKED) VALUES (1, 0);' +
        "UPDATE DATABASECHANGELOGLOCK SET LOCKED = 1, LOCKEDBY = 'migrator-7f3c (10.0.4.17)', LOCKGRANTED = NOW() WHERE ID = 1 AND LOCKED = 0",
    );
    defer(() => f.server.sql(`DROP TABLE ${DATABASE}.DATABASECHANGELOGLOCK`));
    const name = 'DATABASECHANGELOGLOCK/1';
    const lock = await lockNamed(name);
    assert.ok(lock, "the row is listed under the table's own name");
    assert.equal(lock.kind, 'single');
    assert.deepEqual(lock.holder, { key: '1', lease: null, createRevision: null, ttl: null, owner: 'migrator-7f3c (10.0.4.17)', holds: null, token: null, convention: 'liquibase', liveness: { state: 'unknown', evidence: 'nothing renews or ends it: it stays until deleted, whatever became of its holder' } });
    const text = await cli(['list', '--url', url(), '--prefix', 'DATABASECHANGELOGLOCK/']);
    assert.equal(text.stdout, `${name}  (single, 0 waiting)\n  holder    1  locked by migrator-7f3c (10.0.4.17)  ttl none (never expires)  unknown (nothing renews or ends it: it stays until deleted, whatever became of its holder)\n`, show(text));

    // On MySQL any text is a GET_LOCK name: taking this one would exclude neither Liquibase nor anyone else.
    const taken = await cli(['acquire', name, '--try', '--url', url(), '--', 'true']);
    assert.equal(taken.code, 2, show(taken));
    assert.equal(
      taken.stderr,
      `locklens: ${name} names a row of Liquibase's lock table DATABASECHANGELOGLOCK: Liquibase takes it, not LockLens (a GET_LOCK of that name would exclude nobody); a stuck row is released with unlock --force\n`,
    );

    const r = await cli(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stdout, `released '${name}' (locked by migrator-7f3c (10.0.4.17)): cleared LOCKED, LOCKGRANTED and LOCKEDBY (Liquibase's releaseLock)\n  ${name}\n`);
    assert.equal(await f.server.sql(`SELECT ID, LOCKED + 0, LOCKGRANTED, LOCKEDBY FROM ${DATABASE}.DATABASECHANGELOGLOCK`), '1\t0\tNULL\tNULL\n');
    assert.equal(await lockNamed(name), undefined, 'an unlocked row is no lock');
    assert.equal((await cli(['acquire', name, '--try', '--url', url()])).code, 2, "refused while the row is free too: the name is the table's");
  });
});

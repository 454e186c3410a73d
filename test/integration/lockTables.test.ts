/**
 * Lock tables against a real PostgreSQL 15 and a real MariaDB 10.11: the tables made with ShedLock's, Liquibase's and
 * the seed article's own DDL, their rows written with the libraries' own statements (ShedLock's usingDbTime
 * statements, Liquibase's lock and release) on a connection of the test's own, read and released by LockTables over
 * the stores' sessions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createConnection, type Connection } from 'mysql2/promise';
import type { Client } from 'pg';
import { isLockLensError } from '../../src/core/errors';
import type { LockBackend } from '../../src/core/backend';
import type { LockState } from '../../src/core/lockState';
import { MysqlBackend } from '../../src/core/mysql/mysqlBackend';
import { MysqlSession } from '../../src/core/mysql/session';
import { openConnection, targetOf } from '../../src/core/mysql/connect';
import { openClient, pgSpecOf } from '../../src/core/postgres/connect';
import { PostgresBackend } from '../../src/core/postgres/postgresBackend';
import { pgSession } from '../../src/core/postgres/session';
import type { LockTableSpec } from '../../src/core/profile';
import { LockTables } from '../../src/core/sql/lockTables';
import type { SqlWriteSession } from '../../src/core/sql/session';
import { SqlLockWatch } from '../../src/core/sql/pollingWatch';
import { catalogQuery } from '../../src/core/sql/tableCatalog';
import { quoteIdent } from '../../src/core/sql/tableLayouts';
import type { SqlDialect } from '../../src/core/sql/url';
import { ADMIN, DATABASE, startMariaDb, type MariaDbServer } from '../harness/mariadb';
import { SUPERUSER_PASSWORD, startPostgres, type PostgresServer } from '../harness/postgres';

type Row = Record<string, unknown>;

/** One database, as the libraries and LockLens each see it. */
interface Fixture {
  readonly dialect: SqlDialect;
  /** LockLens's session, as the store opens it. */
  readonly session: SqlWriteSession;
  /** The libraries' own connection (another session than LockLens's). */
  lib(sql: string, params?: unknown[]): Promise<{ rows: Row[]; changed: number }>;
  /** The tables as each library creates them. */
  readonly ddl: readonly string[];
  readonly liquibaseTable: string;
  /**
   * ShedLock's lock statements; `zoneHours` from UTC: its JVM's time zone when it writes its own time (not
   * usingDbTime()), 0 the database's UTC as usingDbTime() writes it.
   */
  shedlockLock(name: string, ms: number, by: string, zoneHours?: number): Promise<number>;
  shedlockUnlock(name: string, by: string): Promise<number>;
  liquibaseLock(by: string): Promise<number>;
  /** A moment of the database's clock passes (not the test's: nothing is timed here). */
  tick(): Promise<void>;
  /** The store's backend, as a connection opens it with these specs. */
  openBackend(specs: readonly LockTableSpec[]): Promise<LockBackend>;
  /** Takes a session lock (advisory, GET_LOCK) on the libraries' connection; resolves with its name as listed. */
  takeSessionLock(): Promise<string>;
  close(): Promise<void>;
}

const SPEC: LockTableSpec = { table: 'job_locks', nameColumn: 'job', holderColumn: 'owner_id', expiryColumn: 'expires_at' };

async function postgresFixture(server: PostgresServer): Promise<Fixture> {
  const profile = { store: 'postgres' as const, endpoints: [server.url()], password: SUPERUSER_PASSWORD };
  const client: Client = await openClient(await pgSpecOf(profile));
  const session: SqlWriteSession = pgSession(
    async (sql, params) => (await client.query(sql, [...params])).rows as Row[],
    async (sql, params) => (await client.query(sql, [...params])).rowCount ?? 0,
  );
  const libClient = await server.superuser();
  const lib = async (sql: string, params: unknown[] = []) => {
    const r = await libClient.query(sql, params);
    return { rows: r.rows as Row[], changed: r.rowCount ?? 0 };
  };
  const utcNow = "timezone('utc', CURRENT_TIMESTAMP)";
  return {
    dialect: 'postgres',
    session,
    lib,
    ddl: [
      // ShedLock's README, PostgreSQL.
      'CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))',
      // Liquibase 4 on PostgreSQL (unquoted: lowercase names), and its initialisation.
      'CREATE TABLE public.databasechangeloglock (ID INTEGER NOT NULL, LOCKED BOOLEAN NOT NULL, LOCKGRANTED TIMESTAMP WITHOUT TIME ZONE, LOCKEDBY VARCHAR(255), CONSTRAINT databasechangeloglock_pkey PRIMARY KEY (ID))',
      'DELETE FROM public.databasechangeloglock',
      'INSERT INTO public.databasechangeloglock (ID, LOCKED) VALUES (1, FALSE)',
      // The seed article's table (`desc` is a keyword: quoted).
      'CREATE TABLE lock (id SERIAL PRIMARY KEY, lock_name VARCHAR(64) NOT NULL UNIQUE, "desc" VARCHAR(1024), update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)',
      'CREATE TABLE job_locks (job VARCHAR(2000) PRIMARY KEY, owner_id VARCHAR(100), expires_at TIMESTAMPTZ)',
    ],
    liquibaseTable: 'databasechangeloglock',
    // ShedLock's PostgresSqlServerTimeStatementsSource (usingDbTime): insert, else take an expired row.
    shedlockLock: async (name, ms, by, zoneHours = 0) => {
      const now = `(${utcNow} + interval '${zoneHours} hours')`;
      return (
        await lib(
          `INSERT INTO shedlock(name, lock_until, locked_at, locked_by) VALUES($1, ${now} + cast($2 as interval), ${now}, $3) ` +
            `ON CONFLICT (name) DO UPDATE SET lock_until = ${now} + cast($2 as interval), locked_at = ${now}, locked_by = $3 ` +
            `WHERE shedlock.name = $1 AND shedlock.lock_until <= ${now}`,
          [name, `${ms} milliseconds`, by],
        )
      ).changed;
    },
    shedlockUnlock: async (name, by) =>
      (
        await lib(
          `UPDATE shedlock SET lock_until = CASE WHEN locked_at + cast($1 as interval) > ${utcNow} THEN locked_at + cast($1 as interval) ELSE ${utcNow} END ` +
            'WHERE name = $2 AND locked_by = $3',
          ['0 milliseconds', name, by],
        )
      ).changed,
    liquibaseLock: async (by) => (await lib('UPDATE public.databasechangeloglock SET LOCKED = TRUE, LOCKEDBY = $1, LOCKGRANTED = NOW() WHERE ID = 1 AND LOCKED = FALSE', [by])).changed,
    tick: async () => void (await lib('SELECT pg_sleep(0.02)')),
    openBackend: (lockTables) => PostgresBackend.open({ ...profile, lockTables }),
    takeSessionLock: async () => {
      await lib('SELECT pg_advisory_lock(4242)');
      return '4242';
    },
    close: async () => {
      await client.end();
      await libClient.end();
    },
  };
}

async function mariadbFixture(server: MariaDbServer): Promise<Fixture> {
  const profile = { store: 'mysql' as const, endpoints: [server.url()], password: ADMIN.password };
  const target = await targetOf(profile);
  const session = new MysqlSession(target, await openConnection(target));
  const conn: Connection = await createConnection({ host: '127.0.0.1', port: server.port, user: ADMIN.user, password: ADMIN.password, database: DATABASE });
  const lib = async (sql: string, params: unknown[] = []) => {
    const [result] = await conn.query(sql, params);
    return Array.isArray(result) ? { rows: result as Row[], changed: 0 } : { rows: [], changed: Number((result as { affectedRows: number }).affectedRows) };
  };
  const utcNow = 'UTC_TIMESTAMP(3)';
  return {
    dialect: 'mysql',
    session,
    lib,
    ddl: [
      // ShedLock's README, MySQL/MariaDB.
      'CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))',
      // Liquibase on MySQL: an uppercase table (case-sensitive on Linux), LOCKED a BIT(1).
      'CREATE TABLE DATABASECHANGELOGLOCK (ID INT NOT NULL, LOCKED BIT(1) NOT NULL, LOCKGRANTED datetime NULL, LOCKEDBY VARCHAR(255) NULL, CONSTRAINT PK_DATABASECHANGELOGLOCK PRIMARY KEY (ID))',
      'DELETE FROM DATABASECHANGELOGLOCK',
      'INSERT INTO DATABASECHANGELOGLOCK (ID, LOCKED) VALUES (1, 0)',
      'CREATE TABLE `lock` (id INT AUTO_INCREMENT PRIMARY KEY, lock_name VARCHAR(64) NOT NULL, `desc` VARCHAR(1024) NOT NULL DEFAULT \'\', ' +
        'update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, UNIQUE KEY uidx_lock_name (lock_name)) DEFAULT CHARSET utf8mb4',
      'CREATE TABLE job_locks (job VARCHAR(2000) NOT NULL, owner_id VARCHAR(100), expires_at DATETIME(3), PRIMARY KEY (job(255))) DEFAULT CHARSET utf8mb4',
    ],
    liquibaseTable: 'DATABASECHANGELOGLOCK',
    // ShedLock's MySqlServerTimeStatementsSource (usingDbTime): insert ignore, else update an expired row.
    shedlockLock: async (name, ms, by, zoneHours = 0) => {
      const now = `TIMESTAMPADD(HOUR, ${zoneHours}, ${utcNow})`;
      const inserted = await lib(`INSERT IGNORE INTO shedlock(name, lock_until, locked_at, locked_by) VALUES(?, TIMESTAMPADD(MICROSECOND, ?, ${now}), ${now}, ?)`, [name, ms * 1000, by]);
      if (inserted.changed) return 1;
      return (
        await lib(`UPDATE shedlock SET lock_until = TIMESTAMPADD(MICROSECOND, ?, ${now}), locked_at = ${now}, locked_by = ? WHERE name = ? AND lock_until <= ${now}`, [ms * 1000, by, name])
      ).changed;
    },
    shedlockUnlock: async (name, by) =>
      (
        await lib(
          `UPDATE shedlock SET lock_until = IF (TIMESTAMPADD(MICROSECOND, ?, locked_at) > ${utcNow}, TIMESTAMPADD(MICROSECOND, ?, locked_at), ${utcNow}) WHERE name = ? AND locked_by = ?`,
          [0, 0, name, by],
        )
      ).changed,
    liquibaseLock: async (by) => (await lib('UPDATE DATABASECHANGELOGLOCK SET LOCKED = 1, LOCKEDBY = ?, LOCKGRANTED = NOW() WHERE ID = 1 AND LOCKED = 0', [by])).changed,
    tick: async () => void (await lib('SELECT SLEEP(0.02)')),
    openBackend: (lockTables) => MysqlBackend.open({ ...profile, lockTables }),
    takeSessionLock: async () => {
      await lib("SELECT GET_LOCK('spec-probe', 0)");
      return 'spec-probe';
    },
    close: async () => {
      session.close();
      await conn.end();
    },
  };
}

function byName(locks: readonly LockState[], name: string): LockState | undefined {
  return locks.find((l) => l.name.toString('utf8') === name);
}

function must(locks: readonly LockState[], name: string): LockState {
  const lock = byName(locks, name);
  assert.ok(lock, `${name} among ${locks.map((l) => l.name.toString('utf8')).join(', ')}`);
  return lock;
}

function shown(lock: LockState): Record<string, string | null> {
  return JSON.parse(lock.holder!.valuePreview.toString('utf8')) as Record<string, string | null>;
}

async function rejectsWith(p: Promise<unknown>, code: string, pattern: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => isLockLensError(e) && e.code === code && pattern.test(e.message));
}

function lockTableSuite(name: string, open: () => Promise<Fixture>): void {
  describe(name, () => {
    let db: Fixture;
    let tables: LockTables;

    before(async () => {
      db = await open();
      for (const statement of db.ddl) await db.lib(statement);
      tables = new LockTables(db.session, [SPEC]);
    });
    after(async () => db?.close());

    test('a held ShedLock row counts down from lock_until - locked_at; one ShedLock unlocked is free: no lock', async () => {
      assert.equal(await db.shedlockLock('report-job', 60_000, 'host-a'), 1);
      assert.equal(await db.shedlockLock('report-job', 60_000, 'host-b'), 0, 'ShedLock itself is excluded while held');
      assert.equal(await db.shedlockLock('done-job', 60_000, 'host-a'), 1);
      assert.equal(await db.shedlockUnlock('done-job', 'host-a'), 1);
      const first = await tables.read();
      const held = must(first.locks, 'shedlock/report-job');
      assert.equal(held.kind, 'single');
      assert.equal(held.holder!.convention, 'shedlock');
      assert.equal(held.holder!.owner, 'host-a');
      const lockedAt = (await db.lib(`SELECT CAST(locked_at AS ${db.dialect === 'postgres' ? 'text' : 'CHAR'}) AS t FROM shedlock WHERE name = 'report-job'`)).rows[0].t;
      assert.equal(held.holder!.key.toString(), `report-job@${lockedAt}`, 'the run: the row at its locked_at');
      assert.equal(held.holder!.lease, 'shedlock/report-job');
      assert.equal(held.holder!.token, null);
      assert.equal(held.holder!.session, undefined);
      assert.deepEqual(Object.keys(shown(held)), ['name', 'lock_until', 'locked_at', 'locked_by']);
      const sample = first.expiries.find((e) => e.id === 'shedlock/report-job')!;
      assert.ok(sample.ttl > 0 && sample.ttl <= 60, `ttl ${sample.ttl}`);
      assert.equal(sample.grantedTtl, 60);
      assert.equal(first.expiries.find((e) => e.id === 'shedlock/done-job'), undefined);
      assert.equal(byName(first.locks, 'shedlock/done-job'), undefined, "past its lock_until a row is free, as ShedLock's next run reads it");

      await db.tick();
      const again = (await tables.read()).expiries.find((e) => e.id === 'shedlock/report-job')!;
      assert.ok(again.ttl < sample.ttl, `counts down: ${again.ttl} after ${sample.ttl}`);

      // Through the polling watch the stores use: alive with its granted TTL; the free row is no lock.
      const watch = new SqlLockWatch(() => tables.read(), [Buffer.from('shedlock/')], name, { pollIntervalMs: 60_000 });
      try {
        await watch.start();
        assert.deepEqual(watch.locks().map((l) => l.name.toString()), ['shedlock/report-job']);
        assert.equal(watch.lease('shedlock/report-job')?.state, 'alive');
        assert.equal(watch.lease('shedlock/report-job')?.grantedTtl, 60);
        assert.equal(watch.lease('shedlock/done-job'), undefined);
      } finally {
        watch.dispose();
      }
    });

    test('force release sets lock_until back to locked_at, only on the row shown; ShedLock then takes it again', async () => {
      const lock = must((await tables.read()).locks, 'shedlock/report-job');
      assert.match(tables.describeForceRelease(lock, lock.holder!), /locked_by 'host-a' and lock_until /);
      const result = await tables.forceRelease(lock, lock.holder!);
      assert.deepEqual(result.keys.map((k) => k.toString()), ['shedlock/report-job']);
      assert.equal(byName((await tables.read()).locks, 'shedlock/report-job'), undefined, 'released: free');
      await rejectsWith(tables.forceRelease(lock, lock.holder!), 'LOCK_CHANGED', /nothing was changed/);
      assert.equal(await db.shedlockLock('report-job', 60_000, 'host-b'), 1, 'ShedLock acquires the released row');
      // Shown to the user, then taken over by another node: nothing is written.
      const stale = must((await tables.read()).locks, 'shedlock/report-job');
      assert.equal(await db.shedlockUnlock('report-job', 'host-b'), 1);
      assert.equal(await db.shedlockLock('report-job', 60_000, 'host-c'), 1);
      const row = async () => (await db.lib(`SELECT CAST(lock_until AS ${db.dialect === 'postgres' ? 'text' : 'CHAR'}) AS u, locked_by FROM shedlock WHERE name = 'report-job'`)).rows[0];
      const before = await row();
      await rejectsWith(tables.forceRelease(stale, stale.holder!), 'LOCK_CHANGED', /shedlock\/report-job/);
      assert.deepEqual(await row(), before, 'nothing written');
    });

    test("ShedLock writing its JVM's local time: the zone is noted, and force release frees the row for ShedLock there at once", async () => {
      const zoned = new LockTables(db.session, []);
      await zoned.read(); // what is written after this read is seen being written
      assert.equal(await db.shedlockLock('ny-job', 60_000, 'ny-host', -5), 1, 'a JVM in New York (UTC-5)');
      assert.equal(await db.shedlockLock('tokyo-job', 60_000, 'tokyo-host', 9), 1, 'a JVM in Tokyo (UTC+9)');
      assert.equal(await db.shedlockLock('tokyo-job-2', 60_000, 'tokyo-host', 9), 1);
      const { locks, hidden } = await zoned.read();
      assert.match(hidden ?? '', /shedlock\/ny-job was written 5\.0 h behind the database's UTC clock: the writer may keep its local time zone/);
      assert.match(hidden ?? '', /shedlock\/tokyo-job, shedlock\/tokyo-job-2 were written 9\.0 h ahead of the database's UTC clock/);
      assert.match((await zoned.read()).hidden ?? '', /ny-job was written 5\.0 h behind/, 'the note stays while the row does');
      assert.match((await new LockTables(db.session, []).read()).hidden ?? '', /tokyo-job-2 were written 9\.0 h ahead/, 'ahead is seen at first sight');
      for (const [job, zone] of [['ny-job', -5], ['tokyo-job', 9]] as const) {
        assert.equal(await db.shedlockLock(job, 60_000, 'other-host', zone), 0, `${job} is held where it was taken`);
        const lock = must(locks, `shedlock/${job}`);
        assert.match(zoned.describeForceRelease(lock, lock.holder!), /back to its locked_at/);
        await zoned.forceRelease(lock, lock.holder!);
        // The database's UTC now would be 5 h in New York's future: ShedLock there would be locked out that long.
        assert.equal(await db.shedlockLock(job, 60_000, 'other-host', zone), 1, `ShedLock in ${job}'s zone takes it at once`);
      }
      await db.lib("DELETE FROM shedlock WHERE name IN ('ny-job', 'tokyo-job', 'tokyo-job-2')");
    });

    test('a stuck Liquibase lock: no expiry, its LOCKEDBY as owner, released as releaseLock, then Liquibase acquires', async () => {
      assert.equal(byName((await tables.read()).locks, `${db.liquibaseTable}/1`), undefined, 'a free row is no lock');
      assert.equal(await db.liquibaseLock('ci-runner-7 (10.0.0.7)'), 1);
      const { locks, expiries } = await tables.read();
      const lock = must(locks, `${db.liquibaseTable}/1`);
      assert.equal(lock.holder!.convention, 'liquibase');
      assert.equal(lock.holder!.owner, 'ci-runner-7 (10.0.0.7)');
      assert.equal(lock.holder!.lease, '', 'never expires');
      assert.equal(expiries.some((e) => e.id.startsWith(db.liquibaseTable)), false);
      assert.equal(await db.liquibaseLock('another'), 0, 'Liquibase is excluded while it is held');
      assert.match(tables.describeForceRelease(lock, lock.holder!), /releaseLocks.*ci-runner-7/);
      await tables.forceRelease(lock, lock.holder!);
      assert.equal(byName((await tables.read()).locks, `${db.liquibaseTable}/1`), undefined);
      assert.equal(await db.liquibaseLock('ci-runner-8 (10.0.0.8)'), 1, "Liquibase's own acquire succeeds");
      // The lock the user was shown has gone and come back with another grant: LOCK_CHANGED, the new holder kept.
      await rejectsWith(tables.forceRelease(lock, lock.holder!), 'LOCK_CHANGED', /nothing was changed/);
      assert.equal(must((await tables.read()).locks, `${db.liquibaseTable}/1`).holder!.owner, 'ci-runner-8 (10.0.0.8)');
    });

    test("the seed article's table: a row is a lock, HTML and unicode names kept, deleted only while as shown", async () => {
      const tricky = '<b onmouseover="x">orders</b> ☃ 日本 🔒';
      const q = (name: string) => quoteIdent(db.dialect, name);
      await db.lib(`INSERT INTO ${q('lock')} (lock_name, ${q('desc')}) VALUES (${db.dialect === 'postgres' ? '$1, $2' : '?, ?'})`, [tricky, 'sync worker 3']);
      await db.lib(`INSERT INTO ${q('lock')} (lock_name) VALUES ('nightly')`);
      const lock = must((await tables.read()).locks, `lock/${tricky}`);
      assert.equal(lock.holder!.convention, 'lock-table');
      assert.equal(lock.holder!.owner, '');
      assert.equal(lock.holder!.lease, '');
      assert.equal(lock.holder!.key.toString('utf8'), tricky);
      assert.equal(shown(lock).desc, 'sync worker 3');
      assert.ok(shown(lock).update_time);
      await tables.forceRelease(lock, lock.holder!);
      assert.equal(byName((await tables.read()).locks, `lock/${tricky}`), undefined);

      const nightly = must((await tables.read()).locks, 'lock/nightly');
      await db.lib(`UPDATE ${q('lock')} SET update_time = update_time + INTERVAL '1' SECOND WHERE lock_name = 'nightly'`);
      await rejectsWith(tables.forceRelease(nightly, nightly.holder!), 'LOCK_CHANGED', /lock\/nightly/);
      assert.ok(byName((await tables.read()).locks, 'lock/nightly'), 'nothing was deleted');

      // Deleted and taken again within update_time's second: another row, kept.
      const shownRow = must((await tables.read()).locks, 'lock/nightly');
      const p = db.dialect === 'postgres' ? '$1' : '?';
      await db.lib(`DELETE FROM ${q('lock')} WHERE lock_name = 'nightly'`);
      await db.lib(`INSERT INTO ${q('lock')} (lock_name, update_time) VALUES ('nightly', ${p})`, [shown(shownRow).update_time]);
      assert.equal(shown(must((await tables.read()).locks, 'lock/nightly')).update_time, shown(shownRow).update_time, 'the same second');
      await rejectsWith(tables.forceRelease(shownRow, shownRow.holder!), 'LOCK_CHANGED', /lock\/nightly/);
      assert.ok(byName((await tables.read()).locks, 'lock/nightly'), 'the new row was not deleted');
    });

    test("a user's table: held by its holder column, expired past its expiry column, deleted only while as shown", async () => {
      const long = `job-${'x'.repeat(1500)}`;
      const insert = db.dialect === 'postgres'
        ? "INSERT INTO job_locks VALUES ($1, $2, CURRENT_TIMESTAMP + $3 * INTERVAL '1 second')"
        : 'INSERT INTO job_locks VALUES (?, ?, TIMESTAMPADD(SECOND, ?, CURRENT_TIMESTAMP(3)))';
      await db.lib(insert, ['billing', 'worker-1', 30]);
      await db.lib(insert, ['stale', 'worker-2', -5]);
      await db.lib(insert, [long, 'worker-3', 30]);
      const { locks, expiries } = await tables.read();
      const billing = must(locks, 'job_locks/billing');
      assert.equal(billing.holder!.convention, 'custom-table');
      assert.equal(billing.holder!.owner, 'worker-1');
      const ttl = expiries.find((e) => e.id === 'job_locks/billing')!;
      assert.ok(ttl.ttl > 0 && ttl.ttl <= 30, `ttl ${ttl.ttl}`);
      assert.equal(ttl.grantedTtl, ttl.ttl, 'no written-at column: the TTL first seen');
      assert.ok(expiries.find((e) => e.id === 'job_locks/stale')!.ttl < 0);
      const longLock = must(locks, `job_locks/${long}`);
      assert.equal(longLock.holder!.key.length, long.length, 'the name whole in the key');
      assert.ok(longLock.holder!.valuePreview.length < 1000, 'the preview cut');

      await db.lib("UPDATE job_locks SET owner_id = 'worker-9' WHERE job = 'billing'");
      await rejectsWith(tables.forceRelease(billing, billing.holder!), 'LOCK_CHANGED', /job_locks\/billing/);
      assert.equal(must((await tables.read()).locks, 'job_locks/billing').holder!.owner, 'worker-9');
      const current = must((await tables.read()).locks, 'job_locks/billing');
      assert.match(tables.describeForceRelease(current, current.holder!), /Deletes the row 'billing' held by 'worker-9' from the lock table job_locks/);
      await tables.forceRelease(current, current.holder!);
      await tables.forceRelease(longLock, longLock.holder!);
      const left = (await tables.read()).locks.map((l) => l.name.toString()).filter((n) => n.startsWith('job_locks/'));
      assert.deepEqual(left, ['job_locks/stale']);
    });

    test("a user's table with names on several rows, and names or holders alike but for case or trailing spaces: one row deleted, the one shown", async () => {
      await db.lib(`CREATE TABLE queue_locks (job VARCHAR(100), owner_id VARCHAR(100))${db.dialect === 'mysql' ? ' DEFAULT CHARSET utf8mb4' : ''}`);
      const rows: [string, string][] = [['dup', 'w1'], ['dup', 'w1'], ['case', 'w1'], ['Case', 'w1'], ['case ', 'w1'], ['held', 'Worker']];
      for (const [job, owner] of rows) await db.lib(`INSERT INTO queue_locks VALUES ('${job}', '${owner}')`);
      const count = async (job: string) =>
        Number((await db.lib(`SELECT COUNT(*) AS n FROM queue_locks WHERE ${db.dialect === 'mysql' ? 'BINARY job = BINARY ' : 'job = '}'${job}'`)).rows[0].n);
      const queue = new LockTables(db.session, [{ table: 'queue_locks', nameColumn: 'job', holderColumn: 'owner_id' }]);
      const first = await queue.read();
      const names = first.locks.map((l) => l.name.toString()).filter((n) => n.startsWith('queue_locks/'));
      assert.deepEqual([...names].sort(), ['queue_locks/Case', 'queue_locks/case', 'queue_locks/case ', 'queue_locks/dup', 'queue_locks/held']);
      assert.match(first.hidden ?? '', /queue_locks\/dup is 2 rows: the first is shown, and force release deletes that one only/);

      const dup = must(first.locks, 'queue_locks/dup');
      await queue.forceRelease(dup, dup.holder!);
      assert.equal(await count('dup'), 1, 'one of the two rows deleted');
      assert.equal((await queue.read()).hidden, undefined, 'one row left: nothing to say');

      const lower = must(first.locks, 'queue_locks/case');
      await queue.forceRelease(lower, lower.holder!);
      assert.deepEqual([await count('case'), await count('Case'), await count('case ')], [0, 1, 1], 'only the name shown, byte for byte');

      // A holder changed only in case is another holder.
      const held = must(first.locks, 'queue_locks/held');
      await db.lib("UPDATE queue_locks SET owner_id = 'worker' WHERE job = 'held'");
      await rejectsWith(queue.forceRelease(held, held.holder!), 'LOCK_CHANGED', /queue_locks\/held/);
      assert.equal(await count('held'), 1);
      await db.lib('DROP TABLE queue_locks');
    });

    test("a spec for another database's table is skipped; one that does not fit its table is said in hidden; the rest is read", async () => {
      const misfit = { ...SPEC, holderColumn: 'holder' };
      const odd = { ...SPEC, table: 'job-locks' };
      const reading = await new LockTables(db.session, [{ table: 'no_such_locks', nameColumn: 'n', holderColumn: 'h' }, misfit, odd, SPEC]).read();
      assert.ok(must(reading.locks, 'job_locks/stale'), 'the fitting spec is read');
      assert.ok(must(reading.locks, 'lock/nightly'), 'the recognised tables are read');
      assert.equal(
        reading.hidden,
        "lock table 'job-locks' (locklens.lockTables, or the CLI's --lock-table): table 'job-locks' is not a name LockLens reads: letters, digits, _ and $, " +
          'starting with a letter or _, at most 63 characters, so its rows are not read; ' +
          "lock table 'job_locks' (locklens.lockTables, or the CLI's --lock-table): holderColumn 'holder' is not a column of it (its columns: job, owner_id, expires_at), so its rows are not read",
      );
      assert.equal((await new LockTables(db.session, [{ table: 'no_such_locks', nameColumn: 'n', holderColumn: 'h' }]).read()).hidden, undefined, 'a missing table is no problem');

      // The specs are every SQL connection's: the store still lists its session locks beside them.
      const name = await db.takeSessionLock();
      const backend = await db.openBackend([{ table: 'no_such_locks', nameColumn: 'n', holderColumn: 'h' }, misfit, odd]);
      try {
        const { locks } = await backend.list([]);
        assert.ok(must(locks, name).holder, 'the session lock is listed');
        assert.ok(must(locks, 'shedlock/report-job'));
      } finally {
        backend.close();
      }
    });

    test('the catalog query looks up the named tables, never every table of every database', async () => {
      const { sql, params } = catalogQuery(db.dialect, [SPEC, { ...SPEC, table: 'other_schema.job_locks' }]);
      const plan = (await db.session.query(`EXPLAIN ${sql}`, params)).map((r) => Object.values(r).join(' ')).join('\n');
      if (db.dialect === 'mysql') {
        // MariaDB: each information_schema read a lookup of one table ("Scanned 0 databases").
        assert.doesNotMatch(plan, /Scanned all databases|Scanned 1 database/, plan);
        assert.match(plan, /Scanned 0 databases/, plan);
      } else {
        // PostgreSQL: the columns of the tables found, through pg_attribute's index. (pg_class is read by its name
        // index once it is large: a fresh database's is small enough to scan.)
        assert.doesNotMatch(plan, /Seq Scan on pg_attribute\b/, plan);
        assert.match(plan, /Index Scan using pg_attribute_relid_attnum_index on pg_attribute/, plan);
      }
    });

    test('a table dropped after it was found: the next read finds the tables again instead of failing', async () => {
      const fresh = new LockTables(db.session, []);
      assert.ok((await fresh.read()).locks.some((l) => l.name.toString().startsWith('lock/')));
      await db.lib(`DROP TABLE ${quoteIdent(db.dialect, 'lock')}`);
      const { locks } = await fresh.read();
      assert.equal(locks.some((l) => l.name.toString().startsWith('lock/')), false);
      assert.ok(locks.some((l) => l.name.toString().startsWith('shedlock/')));
      assert.equal(locks.some((l) => l.holder!.convention === 'custom-table'), false, 'no spec: the user table is not guessed');
    });
  });
}

let pg: PostgresServer | undefined;
let maria: MariaDbServer | undefined;

lockTableSuite('lock tables on PostgreSQL 15', async () => postgresFixture((pg = await startPostgres())));
lockTableSuite('lock tables on MariaDB 10.11', async () => mariadbFixture((maria = await startMariaDb())));

after(async () => {
  await pg?.dispose();
  await maria?.dispose();
});

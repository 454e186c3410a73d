/**
 * Each ShedLock run is a hold, against a real PostgreSQL 15 and a real MariaDB 10.11: a scheduled job locked with
 * ShedLock's own usingDbTime statements (test/harness/shedlockJob.ts: psycopg2 and PyMySQL) is watched by the store's
 * polling watch, and what the watch's change sets say is folded as the views fold it (the clock of ages, the hold
 * events serve records and counts, the statistics of Lock History, the timeline's rows). Runs are ordered by what the
 * job prints and by what the watch reports, never by sleeping.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createConnection } from 'mysql2/promise';
import type { LockBackend, LockWatch } from '../../src/core/backend';
import { isLockLensError } from '../../src/core/errors';
import type { ObserveOptions } from '../../src/core/holdObservation';
import { keyId } from '../../src/core/keys';
import type { HoldEnded, HoldStarted } from '../../src/core/lockEventTypes';
import { LockEvents } from '../../src/core/lockEvents';
import { LockClock, lockHealth } from '../../src/core/lockHealth';
import type { ChangeSet, LockState } from '../../src/core/lockState';
import { LockStats } from '../../src/core/lockStats';
import { MysqlBackend } from '../../src/core/mysql/mysqlBackend';
import { PostgresBackend } from '../../src/core/postgres/postgresBackend';
import { timelineRows } from '../../src/core/timeline';
import { ADMIN, DATABASE, startMariaDb } from '../harness/mariadb';
import { SUPERUSER_PASSWORD, startPostgres } from '../harness/postgres';
import { ShedLockJob, type ShedLockSchedule, type ShedLockTarget } from '../harness/shedlockJob';

interface Database {
  readonly target: ShedLockTarget;
  readonly backend: LockBackend;
  dispose(): Promise<void>;
}

/** ShedLock's documented tables (its README), made before LockLens opens the store. */
async function postgres(): Promise<Database> {
  const server = await startPostgres();
  await server.superuserQuery('CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))');
  const backend = await PostgresBackend.open({ store: 'postgres', endpoints: [server.url()], password: SUPERUSER_PASSWORD });
  return {
    target: { dialect: 'postgres', dsn: server.dsn() },
    backend,
    dispose: async () => {
      await backend.close();
      await server.dispose();
    },
  };
}

async function mariadb(): Promise<Database> {
  const server = await startMariaDb();
  const conn = await createConnection({ host: '127.0.0.1', port: server.port, user: ADMIN.user, password: ADMIN.password, database: DATABASE });
  await conn.query('CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))');
  await conn.end();
  const backend = await MysqlBackend.open({ store: 'mysql', endpoints: [server.url()], password: ADMIN.password });
  const target = { dialect: 'mysql' as const, port: server.port, user: ADMIN.user, password: ADMIN.password, database: DATABASE };
  return {
    target,
    backend,
    dispose: async () => {
      await backend.close();
      await server.dispose();
    },
  };
}

/** Above one run's hold (about 2 s), below the runs together: a hold spanning runs would be flagged. */
const LONG_HOLD_MS = 5000;

/** A watch of `shedlock/`, folded as the views fold it, with what it said of the job's lock at each change. */
class Observed {
  readonly clock = new LockClock();
  readonly events = new LockEvents('db');
  readonly stats = new LockStats();
  readonly started: HoldStarted[] = [];
  readonly ended: HoldEnded[] = [];
  /** Each trouble any member of the lock had, at any change set or TTL sample. */
  readonly troubles = new Set<string>();
  readonly timelineRowIds = new Set<string>();
  /** Who held the lock, in the order the change sets said (null: free). */
  readonly holders: (string | null)[] = [];
  private readonly options: ObserveOptions;

  constructor(
    readonly watch: LockWatch,
    private readonly lockId: string,
  ) {
    this.options = { hasLeases: false, hasRevisions: false, sampledTtls: true, lease: (id) => watch.lease(id) };
    watch.onDidChangeLocks((changes) => this.onChanges(changes));
    watch.onDidChangeLeases((infos) => {
      this.events.observeLeases(infos);
      this.stats.observeLeases('db', infos);
      this.check();
    });
  }

  private onChanges(changes: ChangeSet): void {
    const now = Date.now();
    this.clock.observe(changes, now);
    this.stats.observe('db', changes, this.options, now);
    for (const e of this.events.observe(changes, this.options, now).events) {
      if (e.type === 'holdStarted') this.started.push(e);
      if (e.type === 'holdEnded') this.ended.push(e);
    }
    const lock = changes.changed.find((l) => l.id === this.lockId);
    const holder = lock?.holder?.key.toString() ?? null;
    // A run's own writes (its unlock moving lock_until) change the lock, not its holder.
    if ((lock || changes.removed.includes(this.lockId)) && this.holders[this.holders.length - 1] !== holder) this.holders.push(holder);
    this.check();
  }

  private check(): void {
    const lock = this.watch.lock(this.lockId);
    if (!lock) return;
    const now = Date.now();
    const lease = (id: string) => this.watch.lease(id);
    for (const h of lockHealth(lock, this.clock, lease, { longHoldMs: LONG_HOLD_MS }, now)) h.troubles.forEach((t) => this.troubles.add(t));
    const source = { connection: 'db', hasLeases: false, locks: [lock], lease, clock: this.clock };
    for (const row of timelineRows(source, LONG_HOLD_MS, now)) this.timelineRowIds.add(row.id);
  }

  /** Resolves once the watch's model satisfies `ok` (checked at each change set). */
  until(what: string, ok: (lock: LockState | undefined) => boolean, timeoutMs = 30_000): Promise<void> {
    if (ok(this.watch.lock(this.lockId))) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (sub.dispose(), reject(new Error(`the watch never showed ${what}: ${JSON.stringify(this.holders)}`))), timeoutMs);
      const sub = this.watch.onDidChangeLocks(() => {
        if (!ok(this.watch.lock(this.lockId))) return;
        clearTimeout(timer);
        sub.dispose();
        resolve();
      });
    });
  }
}

const NAME = 'nightly-report';
const LOCK_ID = keyId(Buffer.from(`shedlock/${NAME}`));
/** About 2 s held a run (lockAtLeastFor past a short job), with a lockAtMostFor a job would never reach. */
const SCHEDULE: ShedLockSchedule = { runs: 3, lockAtMostForMs: 60_000, lockAtLeastForMs: 2000, workMs: 500 };

function suite(label: string, open: () => Promise<Database>): void {
  describe(`ShedLock runs on ${label}`, { timeout: 180_000 }, () => {
    let db: Database;
    before(async () => {
      db = await open();
    });
    after(async () => db?.dispose());

    test('a job holding about 2 s a run, run again once LockLens read its lock free: a hold per run, never a long hold or an expired TTL', async () => {
      const watch = db.backend.watch([Buffer.from('shedlock/')], { pollIntervalMs: 200 });
      const seen = new Observed(watch, LOCK_ID);
      const job = new ShedLockJob(db.target, NAME, 'scheduler-1', SCHEDULE);
      try {
        await watch.start();
        const keys: string[] = [];
        for (let i = 0; i < SCHEDULE.runs; i++) {
          job.allow(i);
          const key = `${NAME}@${await job.said('locked', i)}`;
          keys.push(key);
          await seen.until(`run ${i} holding`, (l) => l?.holder?.key.toString() === key);
          const held = watch.lock(LOCK_ID)!.holder!;
          assert.equal(held.owner, 'scheduler-1');
          assert.equal(watch.lease(held.lease)?.state, 'alive');
          await job.said('free', i);
          // ShedLock's reading: past lock_until the row is free, and the next run waits until LockLens saw it so.
          await seen.until(`run ${i}'s lock free`, (l) => l === undefined);
        }
        assert.deepEqual(seen.holders, keys.flatMap((k) => [k, null]), 'each run held, then the lock free, in that order');
        assert.deepEqual(seen.started.map((e) => [e.member.key, e.member.owner, e.exact]), keys.map((k) => [k, 'scheduler-1', true]));
        // Each unlock moved lock_until back to lockAtLeastFor: its passing is the release the job set, not an expiry.
        assert.deepEqual(seen.ended.map((e) => [e.member.key, e.how]), keys.map((k) => [k, 'released']));
        const holds = seen.stats.holds('db', LOCK_ID).map((h) => [h.key, h.acquiredExact, h.endedExact, h.end]);
        assert.deepEqual(holds, keys.map((k) => [k, true, true, 'released']), "Lock History's holds");
        assert.equal(seen.timelineRowIds.size, SCHEDULE.runs, 'a timeline bar per run');
        assert.deepEqual([...seen.troubles], [], 'no long hold, no expired TTL');
        // Free, the row is still ShedLock's to take: LockLens takes no lock of its name in the store's own kind.
        await assert.rejects(db.backend.acquire(Buffer.from(`shedlock/${NAME}`), { ttlSeconds: 10, tryOnly: true }), (e) => isLockLensError(e, 'INVALID_ARGUMENT'));
      } finally {
        job.dispose();
        watch.dispose();
      }
    });

    test('a run that takes the row within a read of the last one\'s lock_until, by the same node: a new hold all the same', async () => {
      const watch = db.backend.watch([Buffer.from('shedlock/')], { pollIntervalMs: 600_000 });
      const seen = new Observed(watch, LOCK_ID);
      const job = new ShedLockJob(db.target, NAME, 'scheduler-1', { ...SCHEDULE, lockAtLeastForMs: 3000 });
      try {
        await watch.start();
        job.allow(0);
        const first = `${NAME}@${await job.said('locked', 0)}`;
        await watch.sweep();
        assert.equal(watch.lock(LOCK_ID)?.holder?.key.toString(), first);
        await job.said('free', 0);
        job.allow(1);
        const second = `${NAME}@${await job.said('locked', 1)}`;
        await watch.sweep();
        assert.equal(watch.lock(LOCK_ID)?.holder?.key.toString(), second);
        assert.deepEqual(seen.holders, [first, second], 'never read free between the two runs');
        assert.deepEqual(seen.started.map((e) => e.member.key), [first, second]);
        assert.deepEqual(seen.ended.map((e) => e.member.key), [first]);
        assert.deepEqual(seen.clock.heldSince(watch.lock(LOCK_ID)!)?.exact, true, 'the second run is seen starting');
        assert.equal(seen.troubles.has('leaseExpired'), false);
      } finally {
        job.dispose();
        watch.dispose();
      }
    });
  });
}

suite('PostgreSQL 15 (psycopg2)', postgres);
suite('MariaDB 10.11 (PyMySQL)', mariadb);

import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from 'pg';
import type { LockHold } from '../../src/core/backend';
import { isLockLensError, type LockLensError } from '../../src/core/errors';
import type { ChangeSet, LockState } from '../../src/core/lockState';
import { advisoryQuery, locksOfRows, type AdvisoryRow } from '../../src/core/postgres/advisoryLocks';
import { PostgresBackend } from '../../src/core/postgres/postgresBackend';
import { PLAIN_PASSWORD, PLAIN_USER, SUPERUSER, SUPERUSER_PASSWORD, startPostgres, type PostgresServer } from '../harness/postgres';
import { PsycopgLock } from '../harness/psycopg';
import { eventually } from '../harness/redis';
import { TcpProxy } from '../harness/tcpProxy';

const b = (s: string) => Buffer.from(s);

describe('PostgreSQL advisory locks against a real PostgreSQL 15', { timeout: 300_000 }, () => {
  let server: PostgresServer;
  let backend: PostgresBackend;
  let admin: Client;
  const cleanups: (() => unknown)[] = [];
  const defer = (c: () => unknown) => void cleanups.push(c);
  let n = 1000;
  /** A key no other test uses. */
  const fresh = () => String(++n);

  const open = async (user = SUPERUSER, password = SUPERUSER_PASSWORD) => {
    const opened = await PostgresBackend.open({ store: 'postgres', endpoints: [server.url(user)], password, dialTimeoutMs: 3000 });
    defer(() => opened.close());
    return opened;
  };
  const psycopg = (key: string, options: ConstructorParameters<typeof PsycopgLock>[2] = {}, dsn = server.dsn()) => {
    const peer = new PsycopgLock(dsn, key, options);
    defer(() => peer.dispose());
    return peer;
  };
  const lockOf = async (name: string, through = backend): Promise<LockState | undefined> => (await through.list([])).locks.find((l) => l.name.equals(b(name)));
  const waitersOf = async (name: string) => (await lockOf(name))?.waiters.map((w) => w.owner) ?? [];
  /** Holds until `n` sessions wait for `name`, as pg_locks says. */
  const untilWaiting = (name: string, count: number) => eventually(async () => (await waitersOf(name)).length === count, 10_000, `${count} waiting for ${name}`);
  const sessionGone = async (pid: string) => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [Number(pid)])).rowCount === 0;

  before(async () => {
    server = await startPostgres();
    backend = await PostgresBackend.open({ store: 'postgres', endpoints: [server.url()], password: SUPERUSER_PASSWORD, dialTimeoutMs: 3000 });
    admin = await server.superuser();
  });
  after(async () => {
    backend?.close();
    await admin?.end();
    await server?.dispose();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  test('a psycopg2 holder and two waiters: in wait order, their pids as owners, with their sessions', async () => {
    const name = fresh();
    const holder = psycopg(name, { application: 'nightly-report' });
    const holderPid = String(await holder.pid());
    await holder.until(['acquired']);
    const first = psycopg(name, { application: 'worker-1' });
    const firstPid = String(await first.pid());
    await untilWaiting(name, 1);
    const second = psycopg(name, { application: 'worker-2' });
    const secondPid = String(await second.pid());
    await untilWaiting(name, 2);
    const lock = (await lockOf(name))!;
    assert.equal(lock.kind, 'queue');
    assert.equal(lock.altName, `(0, ${name})`, "a bigint key's halves as pg_locks shows them");
    assert.equal(lock.holder?.owner, holderPid);
    assert.equal(lock.holder?.key.toString(), `pid ${holderPid}`);
    assert.equal(lock.holder?.lease, holderPid, 'it goes with its session');
    assert.equal(lock.holder?.convention, 'pg-advisory');
    assert.equal(lock.holder?.token, null);
    assert.equal(lock.sharedWith, undefined);
    assert.deepEqual(lock.waiters.map((w) => w.owner), [firstPid, secondPid], 'in the order they began waiting');
    const s = lock.holder!.session!;
    assert.equal(s.user, SUPERUSER);
    assert.equal(s.application, 'nightly-report');
    assert.match(s.client!, /^127\.0\.0\.1:\d+$/);
    assert.ok(s.connectedAt! > Date.now() - 600_000 && s.connectedAt! <= Date.now() + 1000, String(s.connectedAt));
    assert.equal(s.query, `SELECT pg_advisory_lock(${name})`);
    assert.equal(s.waitingSince, undefined, 'a holder waits for nothing');
    const w = lock.waiters[0].session!;
    assert.equal(w.state, 'active', 'a waiter is running its lock statement');
    assert.ok(w.waitingSince! <= lock.waiters[1].session!.waitingSince!);
    holder.release();
    await first.until(['acquired']);
    assert.equal((await lockOf(name))?.holder?.owner, firstPid, 'the first waiter takes it');
    assert.ok(!second.lines.includes('acquired'));
  });

  test('the statement for PostgreSQL < 14 (no waitstart) orders waiters by pg_blocking_pids as the server queued them, not by pid', async () => {
    const name = fresh();
    const holder = psycopg(name);
    await holder.until(['acquired']);
    const clients = [await server.superuser(), await server.superuser(), await server.superuser()];
    defer(() => Promise.all(clients.map((c) => c.end().catch(() => undefined))));
    const pids = await Promise.all(clients.map(async (c) => String((await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid)));
    // They queue in the reverse order of their pids: shared, exclusive, shared.
    const queue: [number, string][] = [[2, '_shared'], [1, ''], [0, '_shared']];
    for (const [i, [c, suffix]] of queue.entries()) {
      clients[c].query(`SELECT pg_advisory_lock${suffix}(${name})`).catch(() => undefined);
      await untilWaiting(name, i + 1);
    }
    const rows = (await admin.query<AdvisoryRow>(advisoryQuery(130000, false))).rows;
    const lock = locksOfRows(rows).find((l) => l.name.equals(b(name)))!;
    assert.deepEqual(lock.waiters.map((w) => w.owner), [pids[2], pids[1], pids[0]]);
    assert.deepEqual(await waitersOf(name), [pids[2], pids[1], pids[0]], 'the order waitstart gives on this PostgreSQL 15');
  });

  test("our acquire queues behind psycopg2's holder, and a psycopg2 waiter queues behind ours", async () => {
    const name = fresh();
    const holder = psycopg(name);
    await holder.until(['acquired']);
    const positions: number[] = [];
    const pending = backend.acquire(b(name), { ttlSeconds: 10, onQueue: (q) => positions.push(q.ahead) });
    await untilWaiting(name, 1);
    await eventually(() => positions.includes(1), 10_000, 'told it waits behind the holder');
    const later = psycopg(name);
    await untilWaiting(name, 2);
    const ourPid = (await lockOf(name))!.waiters[0].owner;
    assert.ok(!later.lines.includes('acquired'));
    holder.release();
    const hold = await pending;
    defer(() => hold.release());
    assert.equal(positions.at(-1), 0);
    assert.equal(hold.owner, ourPid, 'we held with the session that waited');
    assert.equal(hold.key.toString(), `pid ${ourPid}`);
    const lock = (await lockOf(name))!;
    assert.equal(lock.holder?.owner, hold.owner);
    assert.equal(lock.holder?.session?.application, 'LockLens');
    assert.deepEqual(lock.waiters.map((w) => w.owner), [String(await later.pid())]);
    assert.ok(!later.lines.includes('acquired'), 'psycopg2 waits while we hold');
    assert.equal(await hold.release(), true);
    await later.until(['acquired']);
    assert.equal(await hold.release(), false, 'released already');
  });

  test("tryOnly: LOCKED naming the holder's pid; a free key is taken at once", async () => {
    const name = fresh();
    const holder = psycopg(name, { application: 'billing' });
    const pid = await holder.pid();
    await holder.until(['acquired']);
    const refused = await backend.acquire(b(name), { ttlSeconds: 5, tryOnly: true }).catch((e: LockLensError) => e);
    assert.ok(isLockLensError(refused, 'LOCKED'), String(refused));
    assert.match(refused.message, new RegExp(`is held by session pid ${pid} \\(application "billing", role postgres, from 127\\.0\\.0\\.1:\\d+, connected at [-\\dT:.]+Z, last ran "SELECT pg_advisory_lock\\(${name}\\)"\\)$`));
    assert.equal((await lockOf(name))?.waiters.length, 0, 'a try leaves no waiter');
    const other = fresh();
    const hold = await backend.acquire(b(other), { ttlSeconds: 5, tryOnly: true });
    assert.equal((await lockOf(other))?.holder?.owner, hold.owner);
    assert.equal(await hold.release(), true);
    assert.equal(await lockOf(other), undefined);
  });

  test('cancelling a waiting acquire leaves nothing behind', async () => {
    const name = fresh();
    const holder = psycopg(name);
    await holder.until(['acquired']);
    const abort = new AbortController();
    const pending = backend.acquire(b(name), { ttlSeconds: 5, signal: abort.signal }).catch((e: LockLensError) => e);
    await untilWaiting(name, 1);
    const ourPid = (await waitersOf(name))[0];
    abort.abort();
    const result = await pending;
    assert.ok(isLockLensError(result, 'CANCELLED'), String(result));
    assert.deepEqual(await waitersOf(name), [], 'no longer waiting');
    await eventually(() => sessionGone(ourPid), 10_000, 'its session ended');
    holder.release();
    await holder.until(['released']);
    assert.equal(await lockOf(name), undefined, 'nobody took it');
  });

  test('a waiting acquire whose session is terminated or cancelled by someone says so', async () => {
    const name = fresh();
    const holder = psycopg(name);
    await holder.until(['acquired']);
    const pending = backend.acquire(b(name), { ttlSeconds: 5 }).catch((e: LockLensError) => e);
    await untilWaiting(name, 1);
    await admin.query('SELECT pg_terminate_backend($1)', [Number((await waitersOf(name))[0])]);
    const terminated = await pending;
    assert.ok(isLockLensError(terminated, 'LOCK_LOST'), String(terminated));
    assert.match(terminated.message, /the waiting session was terminated by someone/);
    const again = backend.acquire(b(name), { ttlSeconds: 5 }).catch((e: LockLensError) => e);
    await untilWaiting(name, 1);
    await admin.query('SELECT pg_cancel_backend($1)', [Number((await waitersOf(name))[0])]);
    const cancelled = await again;
    assert.ok(isLockLensError(cancelled, 'CANCELLED'), String(cancelled));
    assert.match(cancelled.message, /someone cancelled the waiting statement/);
  });

  test('closing the backend cancels a waiting acquire and loses a hold', async () => {
    const own = await open();
    const held = fresh();
    const hold = await own.acquire(b(held), { ttlSeconds: 5 });
    const lost = new Promise<LockLensError>((resolve) => hold.onDidLose(resolve));
    const name = fresh();
    const holder = psycopg(name);
    await holder.until(['acquired']);
    const pending = own.acquire(b(name), { ttlSeconds: 5 }).catch((e: LockLensError) => e);
    await untilWaiting(name, 1);
    own.close();
    assert.ok(isLockLensError(await lost, 'LOCK_LOST'));
    assert.ok(isLockLensError(await pending, 'CLOSED'), 'the waiting acquire ends');
    await eventually(async () => (await lockOf(held)) === undefined && (await waitersOf(name)).length === 0, 10_000, 'nothing of ours left');
  });

  test("force release terminates the holder's session and the first waiter gets the lock", async () => {
    const name = fresh();
    const holder = psycopg(name, { application: 'stuck-job' });
    await holder.until(['acquired']);
    const waiter = psycopg(name, { application: 'standby' });
    const waiterPid = String(await waiter.pid());
    await untilWaiting(name, 1);
    const lock = (await lockOf(name))!;
    const text = backend.describeForceRelease(lock, lock.holder!);
    assert.match(text, new RegExp(`pid ${lock.holder!.owner}`));
    assert.match(text, /role postgres/);
    assert.match(text, /"stuck-job"/);
    assert.match(text, /from 127\.0\.0\.1:\d+/);
    assert.match(text, new RegExp(`last ran "SELECT pg_advisory_lock\\(${name}\\)"\\), only if it still holds ${name}, and is the session that connected at that moment\\.`));
    assert.match(text, /Every lock of that session is freed/);
    assert.match(text, /rolled back/);
    assert.match(text, new RegExp(`next waiter \\(pid ${waiterPid}\\)`));
    const result = await backend.forceRelease(lock, lock.holder!);
    assert.deepEqual(result.keys, [lock.holder!.key]);
    assert.match(result.action, new RegExp(`terminated session pid ${lock.holder!.owner}`));
    assert.ok(await sessionGone(lock.holder!.owner), 'the session has ended when force release returns');
    await waiter.until(['acquired']);
    assert.equal((await lockOf(name))?.holder?.owner, waiterPid);
    holder.release();
    assert.match(await holder.until(['released', 'release-failed']), /^release-failed/, "the holder's connection is gone");
  });

  test('force release refuses with LOCK_CHANGED when the holder changed after it was shown', async () => {
    const name = fresh();
    const first = psycopg(name);
    await first.until(['acquired']);
    const shown = (await lockOf(name))!;
    const second = psycopg(name);
    await untilWaiting(name, 1);
    first.release();
    await second.until(['acquired']);
    const refused = await backend.forceRelease(shown, shown.holder!).catch((e: LockLensError) => e);
    assert.ok(isLockLensError(refused, 'LOCK_CHANGED'), String(refused));
    assert.match(refused.message, /no longer holds/);
    // The same pid, but a session that connected at another moment (a reused pid).
    const now = (await lockOf(name))!;
    const other = { ...now.holder!, session: { ...now.holder!.session, connectedAt: now.holder!.session!.connectedAt! - 1000 } };
    const stale = await backend.forceRelease({ ...now, holder: other }, other).catch((e: LockLensError) => e);
    assert.ok(isLockLensError(stale, 'LOCK_CHANGED'), String(stale));
    assert.match(stale.message, /another session than the one shown/);
    // The start time hidden (a role without pg_read_all_stats): the role still tells another session apart.
    const { connectedAt: _, ...unstarted } = now.holder!.session!;
    const otherRole = { ...now.holder!, session: { ...unstarted, user: PLAIN_USER } };
    assert.match(backend.describeForceRelease(now, otherRole), new RegExp(`start time is hidden from this role, so only its pid and role \\(${PLAIN_USER}\\) can be checked`));
    const reused = await backend.forceRelease({ ...now, holder: otherRole }, otherRole).catch((e: LockLensError) => e);
    assert.ok(isLockLensError(reused, 'LOCK_CHANGED'), String(reused));
    assert.match(reused.message, new RegExp(`another session than the one shown \\(role ${SUPERUSER}, connected at `));
    assert.equal((await lockOf(name))?.holder?.owner, String(await second.pid()), 'nobody was terminated');
    const waiter = (await lockOf(name))!;
    const notHolder = await backend.forceRelease(waiter, { ...waiter.holder!, key: b('pid 1'), owner: '1' }).catch((e: LockLensError) => e);
    assert.ok(isLockLensError(notHolder, 'INVALID_ARGUMENT'), String(notHolder));
  });

  test('our hold reports LOCK_LOST when its session is terminated', async () => {
    const name = fresh();
    const hold: LockHold = await backend.acquire(b(name), { ttlSeconds: 5 });
    const lost = new Promise<LockLensError>((resolve) => hold.onDidLose(resolve));
    const lock = (await lockOf(name))!;
    await backend.forceRelease(lock, lock.holder!);
    const error = await lost;
    assert.equal(error.code, 'LOCK_LOST');
    assert.match(error.message, new RegExp(`pid ${hold.owner}\\) was terminated by someone`));
    assert.equal(hold.lost, error);
    assert.equal(await hold.release(), false);
  });

  test('our hold reports LOCK_LOST when its connection goes silent (nothing passes, nothing closes)', { timeout: 60_000 }, async () => {
    const name = fresh();
    const proxy = await TcpProxy.start(server.port);
    defer(() => proxy.dispose());
    const via = await PostgresBackend.open({ store: 'postgres', endpoints: [`postgres://${SUPERUSER}@127.0.0.1:${proxy.port}/postgres`], password: SUPERUSER_PASSWORD, dialTimeoutMs: 3000 });
    defer(() => via.close());
    const hold = await via.acquire(b(name), { ttlSeconds: 3 });
    const lost = new Promise<LockLensError>((resolve) => hold.onDidLose(resolve));
    proxy.silence();
    const error = await lost;
    assert.equal(error.code, 'LOCK_LOST');
    assert.match(error.message, /nothing was heard from PostgreSQL .*: the server ends a session it cannot reach within the TTL/);
    assert.equal(hold.lost, error);
    assert.equal(await hold.release(), false);
  });

  test('shared holders are readers; an exclusive waiter is the writer; our read joins them', async () => {
    const name = fresh();
    const r1 = psycopg(name, { shared: true });
    const r2 = psycopg(name, { shared: true });
    await Promise.all([r1.until(['acquired']), r2.until(['acquired'])]);
    const ours = await backend.acquire(b(name), { ttlSeconds: 5, mode: 'read', tryOnly: true });
    defer(() => ours.release());
    const writer = psycopg(name);
    await untilWaiting(name, 1);
    const lock = (await lockOf(name))!;
    assert.equal(lock.kind, 'readwrite');
    const readers = [lock.holder!, ...(lock.sharedWith ?? [])];
    assert.deepEqual(readers.map((m) => m.owner).sort(), [String(await r1.pid()), String(await r2.pid()), ours.owner].sort());
    assert.ok(readers.every((m) => m.mode === 'read'));
    assert.deepEqual(lock.waiters.map((w) => [w.owner, w.mode]), [[String(await writer.pid()), 'write']]);
    const refused = await backend.acquire(b(name), { ttlSeconds: 5, mode: 'write', tryOnly: true }).catch((e: LockLensError) => e);
    assert.ok(isLockLensError(refused, 'LOCKED'), String(refused));
    assert.match(refused.message, new RegExp(`pid ${ours.owner}`));
    r1.release();
    r2.release();
    assert.equal(await ours.release(), true);
    await writer.until(['acquired']);
    const written = (await lockOf(name))!;
    assert.equal(written.kind, 'queue', 'only an exclusive holder now');
    assert.equal(written.holder?.mode, undefined);
  });

  test('int-pair keys are named k1:k2 and are not the bigint with the same bits', async () => {
    const holder = psycopg('7:-2');
    await holder.until(['acquired']);
    const lock = (await lockOf('7:-2'))!;
    assert.ok(lock, 'listed as 7:-2');
    assert.equal(lock.altName, undefined);
    assert.equal(lock.holder?.owner, String(await holder.pid()));
    const refused = await backend.acquire(b('7:-2'), { ttlSeconds: 5, tryOnly: true }).catch((e: LockLensError) => e);
    assert.ok(isLockLensError(refused, 'LOCKED'), String(refused));
    // classid 7, objid 0xfffffffe: the same bits as a bigint, another lock.
    const sameBits = ((7n << 32n) | 0xfffffffen).toString();
    const hold = await backend.acquire(b(sameBits), { ttlSeconds: 5, tryOnly: true });
    assert.equal((await lockOf(sameBits))?.altName, '(7, 4294967294)');
    assert.equal(await hold.release(), true);
    const negative = await backend.acquire(b('-1'), { ttlSeconds: 5, tryOnly: true });
    const [row] = (await admin.query("SELECT classid::int8 AS c, objid::int8 AS o FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", [Number(negative.owner)])).rows;
    assert.deepEqual([row.c, row.o], ['4294967295', '4294967295'], 'the bigint -1 as pg_locks spells it');
    assert.equal((await lockOf('-1'))?.altName, '(4294967295, 4294967295)');
    assert.equal(await negative.release(), true);
  });

  test('a name that is no advisory key is refused, saying the two forms', async () => {
    for (const name of ['orders', '1:2:3', '99999999999999999999', '4294967296:1', '']) {
      const refused = await backend.acquire(b(name), { ttlSeconds: 5 }).catch((e: LockLensError) => e);
      assert.ok(isLockLensError(refused, 'INVALID_ARGUMENT'), `${name}: ${String(refused)}`);
      assert.match(refused.message, /a bigint such as 42.*an int pair such as 1:2/);
    }
  });

  test('watch: change sets as holders come and go', async () => {
    const name = fresh();
    const watch = backend.watch([b(name)], { pollIntervalMs: 100, minNotifyIntervalMs: 0 });
    defer(() => watch.dispose());
    const sets: ChangeSet[] = [];
    watch.onDidChangeLocks((set) => sets.push(set));
    await watch.start();
    assert.equal(watch.status.state, 'live');
    assert.match(watch.status.detail!, /polling every 0\.1 s/);
    assert.deepEqual(watch.locks(), []);
    const holder = psycopg(name);
    const pid = String(await holder.pid());
    await holder.until(['acquired']);
    await eventually(() => watch.lock(name)?.holder?.owner === pid, 10_000, 'the holder seen');
    const waiter = psycopg(name);
    const waiterPid = String(await waiter.pid());
    await eventually(() => watch.lock(name)?.waiters[0]?.owner === waiterPid, 10_000, 'the waiter seen');
    holder.release();
    await eventually(() => watch.lock(name)?.holder?.owner === waiterPid && watch.lock(name)?.waiters.length === 0, 10_000, 'the handoff seen');
    waiter.release();
    await eventually(() => watch.lock(name) === undefined, 10_000, 'the lock gone');
    assert.ok(sets.some((s) => s.changed.some((l) => l.holder?.owner === pid)));
    assert.ok(sets.some((s) => s.removed.includes(name)));
    assert.ok(sets.every((s) => [...s.changed.map((l) => l.name.toString()), ...s.removed].every((id) => id === name)), 'only the watched prefix');
  });

  test('a plain role sees other roles` sessions without their details, and is told why and how to see them', async () => {
    const plain = await open(PLAIN_USER, PLAIN_PASSWORD);
    const name = fresh();
    const holder = psycopg(name, { application: 'superuser-job' });
    await holder.until(['acquired']);
    const own = psycopg(name, { application: 'plain-job' }, server.dsn(PLAIN_USER, PLAIN_PASSWORD));
    await untilWaiting(name, 1);
    const lock = (await lockOf(name, plain))!;
    assert.equal(lock.holder?.owner, String(await holder.pid()), 'the pid is seen');
    assert.equal(lock.holder?.session?.user, SUPERUSER, 'and the role');
    assert.equal(lock.holder?.session?.application, 'superuser-job', 'and the application name');
    assert.equal(lock.holder?.session?.client, undefined);
    assert.equal(lock.holder?.session?.query, undefined);
    assert.equal(lock.holder?.session?.connectedAt, undefined);
    assert.equal(lock.waiters[0].session?.user, PLAIN_USER);
    assert.ok(lock.waiters[0].session?.query, "its own role's session whole");
    assert.equal(lock.waiters[0].owner, String(await own.pid()));
    const watch = plain.watch([b(name)], { pollIntervalMs: 100 });
    defer(() => watch.dispose());
    await watch.start();
    assert.match(watch.status.hidden!, /1 session of another role is shown without client, start time, state or statement/);
    assert.match(watch.status.hidden!, /GRANT pg_read_all_stats TO "plain"/);
    const refused = await plain.forceRelease(lock, lock.holder!).catch((e: LockLensError) => e);
    assert.ok(isLockLensError(refused, 'PERMISSION'), String(refused));
    assert.match(refused.message, /must be a superuser to terminate superuser process/);
    assert.match(refused.message, /pg_signal_backend/);
    assert.ok(!(await sessionGone(lock.holder!.owner)));
  });

  test("lock tables are read with the advisory locks, sampled for TTLs, and released their library's way", async () => {
    await admin.query('CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))');
    defer(() => admin.query('DROP TABLE shedlock'));
    const now = "timezone('utc', CURRENT_TIMESTAMP)";
    await admin.query(`INSERT INTO shedlock(name, lock_until, locked_at, locked_by) VALUES('report-job', ${now} + interval '60 seconds', ${now}, 'host-a')`);
    const own = await open();
    const name = fresh();
    const holder = psycopg(name);
    await holder.until(['acquired']);
    const listing = await own.list([]);
    const table = listing.locks.find((l) => l.name.toString() === 'shedlock/report-job')!;
    const advisory = listing.locks.find((l) => l.name.toString() === name)!;
    assert.equal(table.holder?.convention, 'shedlock');
    assert.equal(table.holder?.owner, 'host-a');
    const ttl = listing.lease(table.holder!.lease);
    assert.ok(ttl && ttl.ttl > 50 && ttl.ttl <= 60, JSON.stringify(ttl));
    assert.equal(advisory.holder?.owner, String(await holder.pid()));
    assert.deepEqual(listing.locks.map((l) => l.name.toString()), [...listing.locks.map((l) => l.name.toString())].sort(), 'in name order');
    assert.equal(own.acquirable(table), false, 'a table row is written by its library only');
    assert.equal(own.acquirable(advisory), true);
    assert.match(own.describeForceRelease(table, table.holder!), /ShedLock/);
    const result = await own.forceRelease(table, table.holder!);
    assert.match(result.action, /ShedLock/);
    const [row] = (await admin.query(`SELECT lock_until <= ${now} AS released FROM shedlock WHERE name = 'report-job'`)).rows;
    assert.equal(row.released, true);
    assert.ok(!(await sessionGone(advisory.holder!.owner)), 'no session was terminated for a table lock');
    // A spec that does not fit its table is said in the reading's hidden; the rest is still read.
    await admin.query('CREATE TABLE job_locks(job TEXT PRIMARY KEY, owner_id TEXT NOT NULL)');
    defer(() => admin.query('DROP TABLE job_locks'));
    const withSpec = await PostgresBackend.open({
      store: 'postgres',
      endpoints: [server.url()],
      password: SUPERUSER_PASSWORD,
      lockTables: [{ table: 'job_locks', nameColumn: 'job', holderColumn: 'holder' }],
    });
    defer(() => withSpec.close());
    const seen = await withSpec.list([]);
    assert.match(seen.hidden ?? '', /holderColumn 'holder' is not a column of it .*so its rows are not read/);
    assert.ok(seen.locks.some((l) => l.name.toString() === name), 'the advisory lock is still listed');
  });
});

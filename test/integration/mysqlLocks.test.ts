import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LockHold } from '../../src/core/backend';
import { isLockLensError, type LockLensError } from '../../src/core/errors';
import { keyId } from '../../src/core/keys';
import type { LockState } from '../../src/core/lockState';
import { acquire } from '../../src/core/mysql/acquire';
import { openConnection, targetOf } from '../../src/core/mysql/connect';
import { forceRelease } from '../../src/core/mysql/forceRelease';
import { MysqlSession } from '../../src/core/mysql/session';
import { MysqlBackend } from '../../src/core/mysql/mysqlBackend';
import { ADMIN, PLAIN, startMariaDb, type MariaDbServer } from '../harness/mariadb';
import { PyMysqlLock } from '../harness/pymysql';
import { eventually } from '../harness/redis';
import { TcpProxy } from '../harness/tcpProxy';

const b = (s: string) => Buffer.from(s);
const DIAL_MS = 3000;

describe('MySQL backend against a real MariaDB 10.11 (GET_LOCK)', { timeout: 300_000 }, () => {
  let server: MariaDbServer;
  let backend: MysqlBackend;
  const cleanups: (() => unknown)[] = [];
  const defer = (c: () => unknown) => void cleanups.push(c);
  let n = 0;
  let p = '';
  let logDir = '';

  const open = async (who: { user: string; password: string } = ADMIN, database = 'app') => {
    const opened = await MysqlBackend.open({ store: 'mysql', endpoints: [server.url(who.user, database)], password: who.password, dialTimeoutMs: DIAL_MS });
    defer(() => opened.close());
    return opened;
  };
  const py = (name: string, options: ConstructorParameters<typeof PyMysqlLock>[2] = {}, who = ADMIN) => {
    const peer = new PyMysqlLock({ port: server.port, ...who }, name, options);
    defer(() => peer.dispose());
    return peer;
  };
  const lockAt = async (name: string, via = backend): Promise<LockState | undefined> => (await via.list([b(name)])).locks.find((l) => l.name.equals(b(name)));
  const waitersOf = async (name: string, count: number, via = backend) => {
    await eventually(async () => (await lockAt(name, via))?.waiters.length === count, 10_000, `${count} waiters of ${name}`);
    return (await lockAt(name, via))!;
  };
  const logLines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

  before(async () => {
    server = await startMariaDb();
    backend = await MysqlBackend.open({ store: 'mysql', endpoints: [server.url()], password: ADMIN.password, dialTimeoutMs: DIAL_MS });
    logDir = mkdtempSync(join(tmpdir(), 'locklens-mysql-log-'));
  });
  after(async () => {
    backend?.close();
    await server?.dispose();
    rmSync(logDir, { recursive: true, force: true });
  });
  beforeEach(() => {
    p = `t${++n}-`;
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  test('a PyMySQL holder and two waiters: owned by their connection ids, waiters longest first, served in that order', async () => {
    const name = `${p}orders`;
    const log = join(logDir, `${name}.log`);
    const holder = py(name, { identifier: 'holder', log });
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const first = py(name, { identifier: 'first', log });
    const firstId = await first.connectionId();
    await waitersOf(name, 1);
    const second = py(name, { identifier: 'second', log });
    const secondId = await second.connectionId();
    const lock = await waitersOf(name, 2);
    assert.equal(backend.flavor, 'mariadb');
    assert.equal(lock.kind, 'queue');
    assert.equal(lock.id, keyId(b(name)));
    assert.equal(lock.holder?.owner, holderId);
    assert.equal(lock.holder?.key.toString(), `connection ${holderId}`);
    assert.equal(lock.holder?.lease, holderId, 'it goes with its connection');
    assert.equal(lock.holder?.convention, 'mysql-get-lock');
    assert.equal(lock.holder?.token, null);
    assert.equal(lock.holder?.holds, null, 'GET_LOCK is re-entrant, but the count is not visible');
    assert.equal(lock.holder?.session?.user, ADMIN.user);
    assert.match(lock.holder?.session?.client ?? '', /^127\.0\.0\.1:\d+$/);
    assert.deepEqual(lock.waiters.map((w) => w.owner), [firstId, secondId]);
    const [w1, w2] = lock.waiters;
    assert.equal(w1.session?.state, 'Query: User lock');
    assert.match(w1.session?.query ?? '', new RegExp(`GET_LOCK\\('${name}', 60\\)`));
    assert.ok(w1.session!.waitingSince! <= w2.session!.waitingSince!, 'the first waiter has waited longer');
    assert.ok(backend.acquirable(lock));
    // The server serves the waiters in the order shown: the log says who held when, across the processes.
    holder.release();
    await first.until(['acquired']);
    first.release();
    await second.until(['acquired']);
    second.release();
    await second.until(['released']);
    assert.deepEqual(logLines(log), ['holder acquired', 'holder releasing', 'first acquired', 'first releasing', 'second acquired', 'second releasing']);
  });

  test('a watch of a quiet lock with waiters reports no change from poll to poll (their wait starts stay as first seen)', async () => {
    const name = `${p}quiet`;
    const holder = py(name);
    await holder.until(['acquired']);
    py(name);
    py(name);
    await waitersOf(name, 2);
    const watch = backend.watch([b(name)], { minNotifyIntervalMs: 0, pollIntervalMs: 60_000 });
    defer(() => watch.dispose());
    await watch.start();
    let changes = 0;
    watch.onDidChangeLocks(() => changes++);
    for (let i = 0; i < 5; i++) await watch.sync();
    assert.equal(changes, 0);
    assert.equal(watch.lock(keyId(b(name)))?.waiters.length, 2);
  });

  test('our acquire waits behind PyMySQL and holds only after it released; PyMySQL then waits behind ours', async () => {
    const name = `${p}shared`;
    const holder = py(name);
    await holder.until(['acquired']);
    const positions: number[] = [];
    let gateWritten = false;
    const events: string[] = [];
    const pending = backend.acquire(b(name), { ttlSeconds: 30, onQueue: (q) => positions.push(q.ahead) }).then((h) => {
      events.push(gateWritten ? 'held after PyMySQL was told to release' : 'held while PyMySQL held');
      return h;
    });
    const queued = await waitersOf(name, 1);
    assert.deepEqual(positions, [1]);
    assert.deepEqual(events, []);
    gateWritten = true;
    holder.release();
    const hold = await pending;
    defer(() => hold.release());
    assert.deepEqual(events, ['held after PyMySQL was told to release']);
    assert.deepEqual(positions, [1, 0]);
    assert.equal(hold.key.toString(), `connection ${hold.owner}`);
    assert.equal(queued.waiters[0].owner, hold.owner, 'our waiting connection was shown as the waiter');
    assert.equal((await lockAt(name))?.holder?.owner, hold.owner);
    const busy = py(name, { mode: 'try' });
    await busy.until(['busy']);
    const waiter = py(name);
    await waitersOf(name, 1);
    assert.equal(await hold.release(), true);
    await waiter.until(['acquired']);
    assert.equal(await hold.release(), false, 'a second release finds nothing');
  });

  test('tryOnly: LOCKED naming the holder connection', async () => {
    const name = `${p}busy`;
    const holder = py(name);
    const id = (await holder.until(['acquired'])).split(' ')[1];
    const e = (await backend.acquire(b(name), { ttlSeconds: 30, tryOnly: true }).catch((x: unknown) => x)) as LockLensError;
    assert.ok(isLockLensError(e, 'LOCKED'), String(e));
    assert.match(e.message, new RegExp(`is held by connection ${id} \\(user ${ADMIN.user}, from 127\\.0\\.0\\.1:\\d+, state Sleep\\)$`));
    assert.equal((await lockAt(name))?.waiters.length, 0, 'nothing of ours is left waiting');
    holder.release();
    await holder.until(['released']);
    const hold = await backend.acquire(b(name), { ttlSeconds: 30, tryOnly: true });
    defer(() => hold.release());
    assert.equal((await lockAt(name))?.holder?.owner, hold.owner);
  });

  test('a cancelled acquire leaves nothing behind: no waiter, no connection, no lock taken later', async () => {
    const name = `${p}cancel`;
    const holder = py(name);
    await holder.until(['acquired']);
    const controller = new AbortController();
    let ours = '';
    const pending = backend.acquire(b(name), { ttlSeconds: 30, signal: controller.signal, onQueue: (q) => (ours = q.key.toString().split(' ')[1]) });
    await waitersOf(name, 1);
    controller.abort();
    const e = await pending.catch((x: unknown) => x);
    assert.ok(isLockLensError(e, 'CANCELLED'), String(e));
    await eventually(async () => (await server.sql(`SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ${Number(ours)}`)).trim() === '0', 10_000, 'our connection gone');
    assert.equal((await lockAt(name))?.waiters.length, 0);
    holder.release();
    await holder.until(['released']);
    const next = py(name, { mode: 'try' });
    await next.until(['acquired']);
  });

  test('an acquire cancelled while its connection opens never waits in GET_LOCK, and takes nothing later', { timeout: 60_000 }, async () => {
    const name = `${p}early-cancel`;
    const holder = py(name);
    await holder.until(['acquired']);
    const target = await targetOf({ store: 'mysql', endpoints: [server.url()], password: ADMIN.password, dialTimeoutMs: DIAL_MS });
    const controller = new AbortController();
    let ours = 0;
    const e = await acquire(
      {
        flavor: 'mariadb',
        // The abort comes once the connection is open, before the acquire's first statement on it.
        open: async () => {
          const conn = await openConnection(target);
          ours = conn.threadId;
          controller.abort();
          return conn;
        },
        killQuery: async (id) => void (await server.sql(`KILL QUERY ${id}`)),
        describeHolder: async () => undefined,
      },
      b(name),
      { ttlSeconds: 30, signal: controller.signal },
    ).catch((x: unknown) => x);
    assert.ok(isLockLensError(e, 'CANCELLED'), String(e));
    await eventually(async () => (await server.sql(`SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ${ours}`)).trim() === '0', 10_000, 'our connection gone');
    assert.equal((await server.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'")).trim(), '0', 'no GET_LOCK left waiting');
    holder.release();
    await holder.until(['released']);
    const next = py(name, { mode: 'try' });
    await next.until(['acquired']);
  });

  test('force release kills the holder connection (described first); the waiter gets the lock; the holder finds its connection gone', async () => {
    const name = `${p}stuck`;
    const holder = py(name);
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const waiter = py(name);
    const lock = await waitersOf(name, 1);
    const text = backend.describeForceRelease(lock, lock.holder!);
    assert.match(text, new RegExp(`^Kills connection ${holderId} \\(user ${ADMIN.user}, from 127\\.0\\.0\\.1:\\d+, state Sleep\\) with KILL CONNECTION ${holderId}, only if it still holds ${name}\\. `));
    assert.match(text, /Every GET_LOCK lock of that session is freed/);
    assert.match(text, /transaction is rolled back/);
    const result = await backend.forceRelease(lock, lock.holder!);
    assert.deepEqual(result.keys, [b(`connection ${holderId}`)]);
    assert.match(result.action, /killed connection/);
    await waiter.until(['acquired']);
    holder.release();
    await holder.until(['release-failed']);
    const e = await backend.forceRelease(lock, lock.waiters[0]).catch((x: unknown) => x);
    assert.ok(isLockLensError(e, 'INVALID_ARGUMENT'), 'a waiter is not force-released');
  });

  test('LOCK_CHANGED: the holder shown released and another connection took the lock; nobody is killed', async () => {
    const name = `${p}moved`;
    const holder = py(name);
    await holder.until(['acquired']);
    const shown = (await lockAt(name))!;
    holder.release();
    await holder.until(['released']);
    const e1 = await backend.forceRelease(shown, shown.holder!).catch((x: unknown) => x);
    assert.ok(isLockLensError(e1, 'LOCK_CHANGED'), String(e1));
    assert.match((e1 as Error).message, /is free now/);
    const next = py(name);
    const nextId = (await next.until(['acquired'])).split(' ')[1];
    const e2 = await backend.forceRelease(shown, shown.holder!).catch((x: unknown) => x);
    assert.ok(isLockLensError(e2, 'LOCK_CHANGED'), String(e2));
    assert.match((e2 as Error).message, new RegExp(`held by connection ${nextId} now`));
    assert.equal((await lockAt(name))?.holder?.owner, nextId, 'still held by the new holder');
    // The same connection, but not the user and host shown: checked in the statement that would kill it.
    const now = (await lockAt(name))!;
    const elsewhere = { ...now.holder!, session: { ...now.holder!.session, client: '10.9.9.9:1' } };
    const e3 = await backend.forceRelease(now, elsewhere).catch((x: unknown) => x);
    assert.ok(isLockLensError(e3, 'LOCK_CHANGED'), String(e3));
    assert.match((e3 as Error).message, new RegExp(`held by connection ${nextId} of ${ADMIN.user} from 127\\.0\\.0\\.1:\\d+, not as shown`));
    assert.equal((await lockAt(name))?.holder?.owner, nextId, 'nobody was killed');
  });

  test("MySQL 8's way (no compound statements: the check, then KILL) refuses a changed holder and kills the one shown", async () => {
    const name = `${p}mysql8`;
    const target = await targetOf({ store: 'mysql', endpoints: [server.url()], password: ADMIN.password, dialTimeoutMs: DIAL_MS });
    const db = new MysqlSession(target, await openConnection(target));
    defer(() => db.close());
    const holder = py(name);
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const lock = (await lockAt(name))!;
    const elsewhere = { ...lock.holder!, session: { ...lock.holder!.session, user: 'someone' } };
    const e = await forceRelease(db, 'mysql', lock, elsewhere).catch((x: unknown) => x);
    assert.ok(isLockLensError(e, 'LOCK_CHANGED'), String(e));
    assert.match((e as Error).message, /not as shown: nothing was killed/);
    const result = await forceRelease(db, 'mysql', lock, lock.holder!);
    assert.match(result.action, new RegExp(`killed connection ${holderId}`));
    holder.release();
    await holder.until(['release-failed']);
  });

  test('LOCK_LOST when someone kills our holding connection', async () => {
    const name = `${p}killed`;
    const hold: LockHold = await backend.acquire(b(name), { ttlSeconds: 30 });
    const lost = new Promise<LockLensError>((resolve) => hold.onDidLose(resolve));
    await server.sql(`KILL CONNECTION ${Number(hold.owner)}`);
    const e = await lost;
    assert.equal(e.code, 'LOCK_LOST');
    assert.match(e.message, /killed|closed its connection/);
    assert.equal(hold.lost, e);
    assert.equal(await hold.release(), false);
    assert.equal(await lockAt(name), undefined);
  });

  test("LOCK_LOST when the hold's connection goes silent: the server frees the lock after the TTL (wait_timeout), and the hold says so by then", { timeout: 60_000 }, async () => {
    const name = `${p}silent`;
    const proxy = await TcpProxy.start(server.port);
    defer(() => proxy.dispose());
    const via = await MysqlBackend.open({ store: 'mysql', endpoints: [`mysql://${ADMIN.user}@127.0.0.1:${proxy.port}/app`], password: ADMIN.password, dialTimeoutMs: DIAL_MS });
    defer(() => via.close());
    const hold = await via.acquire(b(name), { ttlSeconds: 3 });
    const lost = new Promise<LockLensError>((resolve) => hold.onDidLose(resolve));
    proxy.silence();
    const e = await lost;
    assert.equal(e.code, 'LOCK_LOST');
    assert.match(e.message, /nothing was heard from MySQL/);
    assert.equal(hold.lost, e);
    // What the hold said is what happened: the server ended the connection it no longer heard from, freeing the lock.
    await eventually(async () => (await server.sql(`SELECT IS_USED_LOCK('${name}') IS NULL`)).trim() === '1', 20_000, 'the server freed the lock');
    assert.equal(await hold.release(), false);
  });

  test('names with HTML, quotes, backslashes and unicode survive both ways, as bytes', async () => {
    const name = `${p}<b>x</b>&amp; 'q' "d" \\ é€`;
    const hold = await backend.acquire(b(name), { ttlSeconds: 30 });
    defer(() => hold.release());
    const waiter = py(name);
    const lock = await waitersOf(name, 1);
    assert.ok(lock.name.equals(b(name)), lock.name.toString());
    assert.equal(lock.holder?.owner, hold.owner);
    assert.equal(lock.waiters[0].owner, await waiter.connectionId(), "the waiter's escaped literal was read back to the name");
    await hold.release();
    await waiter.until(['acquired']);
    // MariaDB keys names case-sensitively (its documentation says otherwise): another case is another lock.
    const upper = await backend.acquire(b(name.toUpperCase()), { ttlSeconds: 30, tryOnly: true });
    defer(() => upper.release());
    const emoji = await backend.acquire(b(`${p}😀`), { ttlSeconds: 30 }).catch((x: unknown) => x);
    assert.ok(isLockLensError(emoji, 'INVALID_ARGUMENT'), String(emoji));
    const long = await backend.acquire(b('é'.repeat(97)), { ttlSeconds: 30 }).catch((x: unknown) => x);
    assert.ok(isLockLensError(long, 'INVALID_ARGUMENT'), String(long));
    const notUtf8 = await backend.acquire(Buffer.from([0x61, 0xff]), { ttlSeconds: 30 }).catch((x: unknown) => x);
    assert.ok(isLockLensError(notUtf8, 'INVALID_ARGUMENT'), String(notUtf8));
  });

  test('without metadata_lock_info: waiters and the holder of what they wait for, and the watch says what is hidden', async () => {
    const waited = `${p}waited`;
    const alone = `${p}alone`;
    const holder = py(waited);
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const quiet = py(alone);
    await quiet.until(['acquired']);
    await server.sql("UNINSTALL SONAME 'metadata_lock_info'");
    defer(() => server.sql("INSTALL SONAME 'metadata_lock_info'"));
    const waiter = py(waited);
    const lock = await waitersOf(waited, 1);
    assert.equal(lock.holder?.owner, holderId, 'the holder from IS_USED_LOCK');
    assert.equal(lock.waiters[0].owner, await waiter.connectionId());
    assert.equal(await lockAt(alone), undefined, 'a held lock nobody waits for cannot be seen');
    const watch = backend.watch([b(p)], { minNotifyIntervalMs: 0, pollIntervalMs: 200 });
    defer(() => watch.dispose());
    await watch.start();
    assert.equal(watch.status.state, 'live');
    assert.match(watch.status.hidden ?? '', /held locks nobody waits for are not visible: the metadata_lock_info plugin is not installed \(INSTALL SONAME 'metadata_lock_info', which needs SUPER or INSERT on mysql\.plugin\)/);
    assert.deepEqual(watch.locks().map((l) => l.name.toString()), [waited]);
    await server.sql("INSTALL SONAME 'metadata_lock_info'");
    await eventually(() => watch.locks().length === 2 && !/metadata_lock_info/.test(watch.status.hidden ?? ''), 10_000, 'the plugin seen at the next poll');
  });

  test("lock tables of the URL's database come with the GET_LOCK locks: a ShedLock row, its TTL, released its own way, not acquirable", async () => {
    await server.sql(
      'CREATE TABLE app.shedlock (name VARCHAR(64) NOT NULL PRIMARY KEY, lock_until TIMESTAMP(3) NOT NULL, locked_at TIMESTAMP(3) NOT NULL, locked_by VARCHAR(255) NOT NULL);' +
        `INSERT INTO app.shedlock VALUES ('${p}report', UTC_TIMESTAMP(3) + INTERVAL 5 MINUTE, UTC_TIMESTAMP(3), 'host-a');`,
    );
    defer(() => server.sql('DROP TABLE app.shedlock'));
    const holder = py(`${p}job`);
    await holder.until(['acquired']);
    // A fresh connection: which tables exist is read at the first reading (then every 30).
    const reader = await open();
    const listing = await reader.list([b(p), b('shedlock/')]);
    const row = listing.locks.find((l) => l.holder?.convention === 'shedlock');
    assert.ok(row, JSON.stringify(listing.locks.map((l) => l.name.toString())));
    assert.equal(row.name.toString(), `shedlock/${p}report`);
    assert.ok(listing.locks.some((l) => l.name.equals(b(`${p}job`))), 'the GET_LOCK lock beside it');
    const ttl = listing.lease(row.holder!.lease)?.ttl ?? 0;
    assert.ok(ttl > 200 && ttl <= 300, `a TTL from lock_until: ${ttl}`);
    assert.equal(reader.acquirable(row), false, 'ShedLock takes its rows itself');
    assert.match(reader.describeForceRelease(row, row.holder!), /lock_until/);
    await reader.forceRelease(row, row.holder!);
    assert.equal((await server.sql(`SELECT lock_until <= UTC_TIMESTAMP(3) FROM app.shedlock WHERE name = '${p}report'`)).trim(), '1');
    const misfit = await MysqlBackend.open({
      store: 'mysql',
      endpoints: [server.url()],
      password: ADMIN.password,
      lockTables: [{ table: 'shedlock', nameColumn: 'name', holderColumn: 'holder' }],
    });
    defer(() => misfit.close());
    const seen = await misfit.list([b(p)]);
    assert.match(seen.hidden ?? '', /holderColumn 'holder' is not a column of it .*so its rows are not read/, 'a spec that does not fit its table is said');
    assert.ok(seen.locks.some((l) => l.name.equals(b(`${p}job`))), 'the GET_LOCK lock is still listed');
    const without = await open(ADMIN, '');
    assert.equal((await without.list([b('shedlock/')])).locks.length, 0, 'no database in the URL: no lock tables');
  });

  test("a user without PROCESS sees its own connections, says so, and may not kill another user's", async () => {
    const plain = await open(PLAIN);
    const name = `${p}mixed`;
    const admins = py(name);
    const adminsId = (await admins.until(['acquired'])).split(' ')[1];
    const theirs = py(name, {}, PLAIN);
    const theirsId = await theirs.connectionId();
    const seen = await waitersOf(name, 1, plain);
    assert.equal(seen.holder?.owner, adminsId, 'metadata_lock_info still names the holder');
    assert.equal(seen.holder?.session, undefined, 'its session is hidden');
    assert.equal(seen.waiters[0].owner, theirsId);
    const other = py(`${p}others`);
    await other.until(['acquired']);
    const otherWaiter = py(`${p}others`);
    await waitersOf(`${p}others`, 1);
    assert.equal((await lockAt(`${p}others`, plain))?.waiters.length, 0, "another user's waiter is hidden");
    const watch = plain.watch([b(p)], { minNotifyIntervalMs: 0 });
    defer(() => watch.dispose());
    await watch.start();
    assert.match(watch.status.hidden ?? '', /only the connections of plain are visible: without the PROCESS privilege/);
    const e = await plain.forceRelease(seen, seen.holder!).catch((x: unknown) => x);
    assert.ok(isLockLensError(e, 'PERMISSION'), String(e));
    assert.match((e as Error).message, /CONNECTION ADMIN/);
    void otherWaiter;
  });
});

import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntryJson, LockJson } from '../../src/cli/lockJson';
import { Procs, show, type Result } from '../harness/cli';
import { MARK_WAIT_MARK } from '../harness/cliFixture';
import { eventually } from '../harness/etcd';
import { freePort } from '../harness/ports';
import { SUPERUSER, SUPERUSER_PASSWORD, startPostgres, type PostgresServer } from '../harness/postgres';
import { PsycopgLock } from '../harness/psycopg';

// The shipped `locklens` binary over PostgreSQL (--url postgres://…), next to real psycopg2 sessions (Debian's
// python3-psycopg2) taking advisory locks, and lock tables made with their libraries' own DDL and statements through a
// superuser connection of the test's own: the acceptance cases, run as a user runs them.

type Lock = LockJson & { sharedWith?: EntryJson[] };

/** The lines of a file the test's processes append to ([] before the first). */
const linesOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

/** ShedLock's UTC wall clock for a column without a time zone (its PostgresSqlServerTimeStatementsSource). */
const UTC_NOW = "timezone('utc', CURRENT_TIMESTAMP)";

describe('locklens over PostgreSQL (--url postgres://), against psycopg2 sessions and lock tables', { timeout: 300_000 }, () => {
  let server: PostgresServer;
  let procs: Procs;
  let dir: string;
  const cleanups: (() => unknown)[] = [];
  const defer = (c: () => unknown) => void cleanups.push(c);
  let n = 100;
  /** An advisory key no other test uses (the server is shared by the file). */
  const fresh = () => String(++n);
  const url = () => server.url();

  /** `locklens ARGS` with the password where psql would find it. */
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> => procs.run(args, { env: { PGPASSWORD: SUPERUSER_PASSWORD, ...env } });
  const start = (args: string[]) => procs.locklens(args, { env: { PGPASSWORD: SUPERUSER_PASSWORD } });
  const psycopg = (key: string, options: ConstructorParameters<typeof PsycopgLock>[2] = {}) => {
    const peer = new PsycopgLock(server.dsn(), key, options);
    defer(() => peer.dispose());
    return peer;
  };
  const list = async (extra: string[] = []): Promise<Lock[]> => {
    const r = await cli(['list', '--url', url(), '--json', ...extra]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stderr, '', show(r));
    const doc = JSON.parse(r.stdout) as { revision: null; locks: Lock[] };
    assert.equal(doc.revision, null, 'PostgreSQL has no revision to give');
    return doc.locks;
  };
  const lockNamed = async (name: string, extra: string[] = []) => (await list(extra)).find((l) => l.name === name);
  /** Lists until `name` is as the test arranged it (psycopg2 sessions act in their own time). */
  const listed = (name: string, ready: (l: Lock) => boolean, what: string, extra: string[] = []): Promise<Lock> =>
    eventually(async () => {
      const lock = await lockNamed(name, extra);
      return lock && ready(lock) ? lock : undefined;
    }, 15_000, what);
  const owners = (l: Lock) => ({ holder: l.holder?.owner, waiters: l.waiters.map((w) => w.owner) });

  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await server?.dispose();
  });
  beforeEach(() => {
    procs = new Procs(url());
    dir = mkdtempSync(join(tmpdir(), 'locklens-cli-pg-'));
  });
  afterEach(async () => {
    await procs.dispose();
    for (const c of cleanups.splice(0).reverse()) await c();
    rmSync(dir, { recursive: true, force: true });
  });

  test('list --json: a psycopg2 holder and two waiters in wait order, pids as owners with their sessions; unlock --force --yes terminates the holder and the first waiter takes over', async () => {
    const key = fresh();
    const holder = psycopg(key, { application: 'billing-worker' });
    const holderPid = String(await holder.pid());
    await holder.until(['acquired']);
    const first = psycopg(key, { application: 'report-export' });
    const firstPid = String(await first.pid());
    await listed(key, (l) => l.waiters.length === 1, 'the first waiter listed');
    const second = psycopg(key, { application: 'ledger-sync' });
    const secondPid = String(await second.pid());
    const lock = await listed(key, (l) => l.waiters.length === 2, 'both waiters listed');

    assert.equal(lock.kind, 'queue');
    assert.equal(lock.altName, `(0, ${key})`, "the bigint's halves as pg_locks shows them");
    assert.deepEqual(owners(lock), { holder: holderPid, waiters: [firstPid, secondPid] }, 'the holder, then the waiters in the order they began waiting');
    const member = (e: EntryJson, pid: string, application: string) => {
      assert.equal(e.key, `pid ${pid}`);
      assert.deepEqual([e.lease, e.createRevision, e.ttl, e.token, e.holds], [null, null, null, null, null], 'nothing a session lock does not have is made up');
      assert.equal(e.convention, 'pg-advisory');
      assert.equal(e.session?.application, application);
      assert.equal(e.session?.user, SUPERUSER);
      assert.match(e.session?.client ?? '', /^127\.0\.0\.1:\d+$/);
      assert.match(e.session?.query ?? '', new RegExp(`pg_advisory_lock\\(${key}\\)`));
      assert.ok(!Number.isNaN(Date.parse(e.session?.connectedAt ?? '')), 'connectedAt is a time');
    };
    member(lock.holder!, holderPid, 'billing-worker');
    member(lock.waiters[0], firstPid, 'report-export');
    member(lock.waiters[1], secondPid, 'ledger-sync');
    assert.equal(lock.holder!.session?.state, 'idle', 'the holder sits idle, holding');
    assert.equal(lock.holder!.session?.waitingSince, undefined);
    assert.ok(lock.waiters.every((w) => w.session?.state === 'active' && w.session.waitingSince), 'waiters run their lock statement, waiting since a time');
    assert.ok(Date.parse(lock.waiters[0].session!.waitingSince!) <= Date.parse(lock.waiters[1].session!.waitingSince!));

    const r = await cli(['unlock', key, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, new RegExp(`^released '${key}' from pid ${holderPid} \\(connection ${holderPid} \\(billing-worker, postgres@127\\.0\\.0\\.1:\\d+\\)\\): terminated session pid ${holderPid}, which freed every lock it held\\n  pid ${holderPid}\\n$`), show(r));
    assert.equal(await first.until(['acquired']), 'acquired', 'the first waiter gets the lock');
    // psycopg2 finds its connection gone at its next statement: the unlock it tries fails.
    holder.release();
    assert.equal(await holder.until(['released', 'release-failed']), 'release-failed OperationalError');
    const after = await listed(key, (l) => l.holder?.owner === firstPid, 'the first waiter listed as holder');
    assert.deepEqual(owners(after), { holder: firstPid, waiters: [secondPid] }, 'the second still waits');
    assert.ok(!second.lines.includes('acquired'));
  });

  test('list in text: the bigint`s halves in the heading, owners as `connection N (app, user@client)`, no TTL for a session lock, the statement', async () => {
    const key = fresh();
    const holder = psycopg(key, { application: 'text-holder' });
    const pid = await holder.pid();
    await holder.until(['acquired']);
    const waiter = psycopg(key, { application: 'text-waiter' });
    const waiterPid = await waiter.pid();
    const clients = (await listed(key, (l) => l.waiters.length === 1, 'the waiter listed'));
    const [holderClient, waiterClient] = [clients.holder!, clients.waiters[0]].map((e) => e.session!.client);
    const r = await cli(['list', '--url', url(), '--prefix', key]);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(r.stdout.trim().split('\n'), [
      `${key} = (0, ${key})  (queue, 1 waiting)`,
      `  holder    pid ${pid}  connection ${pid} (text-holder, postgres@${holderClient})  query "SELECT pg_advisory_lock(${key})"`,
      `  waiter    pid ${waiterPid}  connection ${waiterPid} (text-waiter, postgres@${waiterClient})  query "SELECT pg_advisory_lock(${key})"`,
    ]);
  });

  test('a stuck Liquibase row is listed as databasechangeloglock/1 (LOCKEDBY, no TTL) and unlock --force --yes releases it Liquibase`s way', async () => {
    // Liquibase 4's DDL on PostgreSQL and its lock statement, as a migration that was killed left it.
    await server.superuserQuery(
      'CREATE TABLE public.databasechangeloglock (ID INTEGER NOT NULL, LOCKED BOOLEAN NOT NULL, LOCKGRANTED TIMESTAMP WITHOUT TIME ZONE, LOCKEDBY VARCHAR(255), CONSTRAINT databasechangeloglock_pkey PRIMARY KEY (ID));' +
        'DELETE FROM public.databasechangeloglock; INSERT INTO public.databasechangeloglock (ID, LOCKED) VALUES (1, FALSE);' +
        "UPDATE public.databasechangeloglock SET LOCKED = TRUE, LOCKEDBY = 'migrator-7f3c (10.0.4.17)', LOCKGRANTED = NOW() WHERE ID = 1 AND LOCKED = FALSE",
    );
    defer(() => server.superuserQuery('DROP TABLE public.databasechangeloglock'));
    const name = 'databasechangeloglock/1';
    const lock = (await lockNamed(name, ['--prefix', 'databasechangeloglock/']))!;
    assert.ok(lock, 'the row is listed');
    assert.equal(lock.kind, 'single');
    assert.deepEqual(lock.holder, { key: '1', lease: null, createRevision: null, ttl: null, owner: 'migrator-7f3c (10.0.4.17)', holds: null, token: null, convention: 'liquibase' });
    assert.deepEqual(lock.waiters, []);
    const text = await cli(['list', '--url', url(), '--prefix', 'databasechangeloglock/']);
    assert.equal(text.stdout, `${name}  (single, 0 waiting)\n  holder    1  locked by migrator-7f3c (10.0.4.17)  ttl none (never expires)\n`, show(text));

    const r = await cli(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stdout, `released '${name}' (locked by migrator-7f3c (10.0.4.17)): cleared LOCKED, LOCKGRANTED and LOCKEDBY (Liquibase's releaseLock)\n  ${name}\n`);
    assert.deepEqual(await server.superuserQuery('SELECT id, locked, lockgranted, lockedby FROM public.databasechangeloglock'), [{ id: 1, locked: false, lockgranted: null, lockedby: null }]);
    assert.equal(await lockNamed(name), undefined, 'an unlocked row is no lock');
    const again = await cli(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(again.code, 2, show(again));
    assert.match(again.stderr, /no lock named 'databasechangeloglock\/1'/, show(again));
  });

  test('a ShedLock row`s TTL counts down with the database`s clock; an expired one shows 0; unlock sets lock_until to now (ShedLock`s unlock)', async () => {
    await server.superuserQuery(
      'CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name));' +
        `INSERT INTO shedlock VALUES ('report', ${UTC_NOW} + interval '600 seconds', ${UTC_NOW}, 'host-a'), ('cleanup', ${UTC_NOW} - interval '60 seconds', ${UTC_NOW} - interval '120 seconds', 'host-b')`,
    );
    defer(() => server.superuserQuery('DROP TABLE shedlock'));
    /** Seconds the row has left by the database's clock, now. */
    const left = async () => Number((await server.superuserQuery(`SELECT extract(epoch FROM lock_until - ${UTC_NOW})::float8 AS s FROM shedlock WHERE name = 'report'`))[0].s);
    const before = await left();
    const locks = await list(['--prefix', 'shedlock/']);
    const after = await left();
    assert.deepEqual(locks.map((l) => [l.name, l.holder?.owner, l.holder?.convention]), [['shedlock/cleanup', 'host-b', 'shedlock'], ['shedlock/report', 'host-a', 'shedlock']]);
    const ttl = locks[1].holder!.ttl!;
    assert.ok(Math.floor(after) <= ttl && ttl <= Math.ceil(before), `ttl ${ttl} is what the row had left while listed (${after}..${before})`);
    assert.equal(locks[0].holder!.ttl, 0, 'an expired row has nothing left');

    const r = await cli(['unlock', 'shedlock/report', '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^released 'shedlock\/report' \(locked by host-a\): set lock_until back to locked_at \(ShedLock's next run takes it\)\n/, show(r));
    assert.ok((await left()) <= 0, 'lock_until is no longer ahead');
    assert.equal((await lockNamed('shedlock/report'))?.holder?.ttl, 0);
  });

  test('--lock-table reads a user`s table (name, holder, expiry columns); without it the table is not a lock table; a malformed spec exits 2, one that does not fit is noted', async () => {
    await server.superuserQuery(
      'CREATE TABLE job_locks (job VARCHAR(2000) PRIMARY KEY, owner_id VARCHAR(100), expires_at TIMESTAMPTZ);' +
        "INSERT INTO job_locks VALUES ('nightly', 'worker-3', now() + interval '600 seconds'), ('forever', 'worker-4', NULL)",
    );
    defer(() => server.superuserQuery('DROP TABLE job_locks'));
    assert.deepEqual((await list(['--prefix', 'job_locks/'])), [], 'no table is guessed to be a lock table');
    const spec = ['--lock-table', 'job_locks:job,owner_id,expires_at', '--prefix', 'job_locks/'];
    const locks = await list(spec);
    assert.deepEqual(locks.map((l) => [l.name, l.kind, l.holder?.key, l.holder?.owner, l.holder?.convention]), [
      ['job_locks/forever', 'single', 'forever', 'worker-4', 'custom-table'],
      ['job_locks/nightly', 'single', 'nightly', 'worker-3', 'custom-table'],
    ]);
    assert.equal(locks[0].holder!.ttl, null, 'no expiry: held until the row is cleared');
    assert.ok(locks[1].holder!.ttl! > 0 && locks[1].holder!.ttl! <= 600, `ttl ${locks[1].holder!.ttl}`);
    const text = await cli(['list', '--url', url(), ...spec]);
    assert.match(text.stdout, /^job_locks\/forever {2}\(single, 0 waiting\)\n {2}holder {4}forever {2}locked by worker-4 {2}ttl none \(never expires\)\n/, show(text));

    const bad = await cli(['list', '--url', url(), '--lock-table', 'job_locks:job']);
    assert.equal(bad.code, 2, show(bad));
    assert.match(bad.stderr, /--lock-table 'job_locks:job': write TABLE:NAME_COLUMN,HOLDER_COLUMN\[,EXPIRY_COLUMN\]/, show(bad));
    // A spec that does not fit its table is said, and the database's other locks are still listed.
    const missing = await cli(['list', '--url', url(), '--lock-table', 'job_locks:job,holder']);
    assert.equal(missing.code, 0, show(missing));
    assert.equal(
      missing.stderr,
      "note: lock table 'job_locks' (locklens.lockTables, or the CLI's --lock-table): holderColumn 'holder' is not a column of it (its columns: job, owner_id, expires_at), so its rows are not read\n",
    );
  });

  test('locklens acquire -- CMD excludes psycopg2 both ways: the order is the one the processes wrote', async () => {
    const key = fresh();
    const log = join(dir, 'order');
    const go = join(dir, 'go');
    // psycopg2 holds; locklens queues behind it in pg_advisory_lock and its command waits.
    const first = psycopg(key, { application: 'psycopg-first' });
    await first.until(['acquired']);
    appendFileSync(log, 'psycopg-first acquired\n');
    const ours = start(['acquire', key, '--url', url(), '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', go, 'locklens-end']);
    const queued = (await listed(key, (l) => l.waiters.length === 1, 'locklens queued behind psycopg2')).waiters[0];
    assert.equal(queued.session?.application, 'LockLens', 'its session says what it is');
    assert.match(queued.session?.query ?? '', /pg_advisory_lock/);
    assert.deepEqual(linesOf(log), ['psycopg-first acquired'], 'nothing ran while psycopg2 held');
    appendFileSync(log, 'psycopg-first releasing\n');
    first.release();
    await first.until(['released']);
    await eventually(() => linesOf(log).includes('locklens-start'), 15_000, 'locklens runs its command once psycopg2 released');

    // locklens holds: psycopg2's try is refused, its blocking lock waits until the command has exited.
    assert.equal(await psycopg(key, { mode: 'try' }).until(['busy', 'acquired']), 'busy');
    const second = psycopg(key, { application: 'psycopg-second' });
    const secondPid = String(await second.pid());
    await listed(key, (l) => l.holder?.owner === queued.owner && l.waiters[0]?.owner === secondPid, 'psycopg2 queued behind locklens');
    writeFileSync(go, '');
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    assert.match(r.stderr, new RegExp(`^locklens: holding pid ${queued.owner} \\(no fencing token \\(this store has none\\)\\)$`, 'm'), show(r));
    await second.until(['acquired']);
    appendFileSync(log, 'psycopg-second acquired\n');
    assert.deepEqual(linesOf(log), ['psycopg-first acquired', 'psycopg-first releasing', 'locklens-start', 'locklens-end', 'psycopg-second acquired']);
  });

  test('acquire --try exits 6 naming psycopg2`s session and leaves nothing waiting; an int pair 1:2 is its own lock; bad key text exits 2', async () => {
    const key = fresh();
    const holder = psycopg(key, { application: 'busy-worker' });
    const pid = await holder.pid();
    await holder.until(['acquired']);
    const busy = await cli(['acquire', key, '--try', '--url', url()]);
    assert.equal(busy.code, 6, show(busy));
    assert.match(busy.stderr, new RegExp(`^locklens: ${key} is held by session pid ${pid} \\(application "busy-worker", role postgres, from 127\\.0\\.0\\.1:\\d+, connected at [^,]+, last ran "SELECT pg_advisory_lock\\(${key}\\)"\\)\\n$`), show(busy));
    assert.deepEqual((await lockNamed(key))?.waiters, [], 'the try left nothing waiting');

    // pg_advisory_lock(1, 2) and the bigint with the same bits (1 << 32 | 2) are two locks.
    const pair = psycopg('1:2', { application: 'pair-holder' });
    const pairPid = String(await pair.pid());
    await pair.until(['acquired']);
    const listedPair = await listed('1:2', (l) => l.holder !== null, 'the pair listed');
    assert.equal(listedPair.altName, undefined, 'a pair has no other name');
    assert.equal(listedPair.holder?.owner, pairPid);
    assert.match(listedPair.holder?.session?.query ?? '', /pg_advisory_lock\(1, 2\)/);
    const pairBusy = await cli(['acquire', '1:2', '--try', '--url', url()]);
    assert.equal(pairBusy.code, 6, show(pairBusy));
    assert.match(pairBusy.stderr, new RegExp(`1:2 is held by session pid ${pairPid} \\(application "pair-holder", role postgres`), show(pairBusy));
    const sameBits = await cli(['acquire', String((1n << 32n) | 2n), '--try', '--url', url(), '--', 'true']);
    assert.equal(sameBits.code, 0, show(sameBits));
    pair.release();
    await pair.until(['released']);
    const env = join(dir, 'env');
    const ours = start(['acquire', '1:2', '--url', url(), '--', 'sh', '-c', 'echo "$ETCD_LOCK_KEY ${LOCKLENS_FENCING_TOKEN-none}" > "$1"; while [ ! -e "$2" ]; do sleep 0.02; done', 'sh', env, join(dir, 'go')]);
    await eventually(() => existsSync(env), 15_000, 'the command runs holding 1:2');
    assert.equal(await psycopg('1:2', { mode: 'try' }).until(['busy', 'acquired']), 'busy', 'psycopg2 cannot take 1:2 while locklens holds it');
    const holding = (await lockNamed('1:2'))!.holder!;
    assert.equal(readFileSync(env, 'utf8').trim(), `${holding.key} none`, 'the holding session, no fencing token');
    writeFileSync(join(dir, 'go'), '');
    assert.equal((await ours.wait()).code, 0);

    for (const text of ['orders', '1:2:3', '99999999999999999999', '4294967296:1']) {
      const r = await cli(['acquire', text, '--try', '--url', url()]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, new RegExp(`^locklens: '${text}' is not a PostgreSQL advisory lock key: .* \\(write a bigint such as 42 or -7, or an int pair such as 1:2\\)\\n$`), show(r));
    }
  });

  test('watch --json follows psycopg2`s lock: held, queued for, handed over, released', async () => {
    const key = fresh();
    const w = start(['watch', '--url', url(), '--json', '--prefix', key]);
    await w.until((p) => p.stderr.includes('locklens: live'), 'watch is live');
    type Line = { revision: number; lock?: Lock; removed?: string };
    const parsed = (): Line[] => w.lines.map((l) => JSON.parse(l) as Line).filter((l) => (l.lock?.name ?? l.removed) === key);
    const seen = (what: string, check: (l: Line) => boolean) => w.until(() => parsed().find(check), what);

    const first = psycopg(key, { application: 'watched-1' });
    const firstPid = String(await first.pid());
    await first.until(['acquired']);
    const held = await seen('the psycopg2 holder', (l) => l.lock?.holder?.owner === firstPid);
    assert.equal(held.lock!.holder!.session?.application, 'watched-1');
    const second = psycopg(key, { application: 'watched-2' });
    const secondPid = String(await second.pid());
    await seen('its waiter', (l) => l.lock?.holder?.owner === firstPid && l.lock.waiters[0]?.owner === secondPid);
    first.release();
    await seen('the handover', (l) => l.lock?.holder?.owner === secondPid && l.lock.waiters.length === 0);
    second.release();
    await second.until(['released']);
    await seen('the lock gone', (l) => l.removed === key);
    const revisions = parsed().map((l) => l.revision);
    assert.deepEqual(revisions, [...revisions].sort((a, b) => a - b), 'revisions count up');
    w.signal('SIGINT');
    assert.equal((await w.wait()).code, 0);
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

  test('connection errors: a wrong password exits 4, nothing listening exits 3, a password in the URL exits 2; the password is never printed', async () => {
    const wrong = await cli(['list', '--url', url()], { PGPASSWORD: 'not the password' });
    assert.equal(wrong.code, 4, show(wrong));
    assert.match(wrong.stderr, /^locklens: PostgreSQL at 127\.0\.0\.1:\d+\/postgres refused role "postgres": wrong password, or no such role/, show(wrong));
    assert.ok(!wrong.stderr.includes('not the password'));
    // LOCKLENS_PASSWORD comes before PGPASSWORD.
    const preferred = await cli(['list', '--url', url()], { PGPASSWORD: 'not the password', LOCKLENS_PASSWORD: SUPERUSER_PASSWORD });
    assert.equal(preferred.code, 0, show(preferred));

    const port = await freePort();
    const nobody = await cli(['list', '--url', `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`, '--dial-timeout', '3s']);
    assert.equal(nobody.code, 3, show(nobody));
    assert.equal(nobody.stderr, `locklens: nothing listens on 127.0.0.1:${port} (connection refused)\n`);

    const inUrl = await cli(['list', '--url', url().replace(`${SUPERUSER}@`, `${SUPERUSER}:hunter2@`)]);
    assert.equal(inUrl.code, 2, show(inUrl));
    assert.match(inUrl.stderr, /is not a database URL: the password goes in the connection`s secret storage \(the CLI: LOCKLENS_PASSWORD\), not in the URL/, show(inUrl));
    assert.ok(!inUrl.stderr.includes('hunter2'), 'the refused URL is echoed without its password');
    assert.match(inUrl.stderr, /'postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/postgres'/, show(inUrl));
  });
});

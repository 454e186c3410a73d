import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntryJson, LockJson } from '../../src/cli/lockJson';
import { Procs, show, type Result } from '../harness/cli';
import { MARK_WAIT_MARK } from '../harness/cliFixture';
import { eventually } from '../harness/etcd';
import { ADMIN, DATABASE, startMariaDb, type MariaDbServer } from '../harness/mariadb';
import { freePort } from '../harness/ports';
import { PyMysqlLock } from '../harness/pymysql';

// The shipped `locklens` binary over MariaDB 10.11 (--url mysql://…), next to real PyMySQL connections (Debian's
// python3-pymysql) taking GET_LOCK locks, and Liquibase's lock table made with its own DDL and statements as root
// over the server's socket: the acceptance cases, run as a user runs them.

/** The lines of a file the test's processes append to ([] before the first). */
const linesOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

describe('locklens over MariaDB (--url mysql://), against PyMySQL connections and lock tables', { timeout: 300_000 }, () => {
  let server: MariaDbServer;
  let procs: Procs;
  let dir: string;
  const cleanups: (() => unknown)[] = [];
  const defer = (c: () => unknown) => void cleanups.push(c);
  let n = 0;
  /** A GET_LOCK name no other test uses (names are server-wide, the server is shared by the file). */
  const fresh = (base: string) => `${base}-${++n}`;
  const url = () => server.url();

  /** `locklens ARGS` with the password where the mysql client would find it. */
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> => procs.run(args, { env: { MYSQL_PWD: ADMIN.password, ...env } });
  const start = (args: string[]) => procs.locklens(args, { env: { MYSQL_PWD: ADMIN.password } });
  const pymysql = (name: string, options: ConstructorParameters<typeof PyMysqlLock>[2] = {}) => {
    const peer = new PyMysqlLock({ port: server.port, ...ADMIN }, name, options);
    defer(() => peer.dispose());
    return peer;
  };
  const list = async (extra: string[] = []): Promise<LockJson[]> => {
    const r = await cli(['list', '--url', url(), '--json', ...extra]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stderr, '', show(r));
    const doc = JSON.parse(r.stdout) as { revision: null; locks: LockJson[] };
    assert.equal(doc.revision, null, 'MariaDB has no revision to give');
    return doc.locks;
  };
  const lockNamed = async (name: string) => (await list(['--prefix', name])).find((l) => l.name === name);
  /** Lists until `name` is as the test arranged it (PyMySQL connections act in their own time). */
  const listed = (name: string, ready: (l: LockJson) => boolean, what: string): Promise<LockJson> =>
    eventually(async () => {
      const lock = await lockNamed(name);
      return lock && ready(lock) ? lock : undefined;
    }, 15_000, what);
  const owners = (l: LockJson) => ({ holder: l.holder?.owner, waiters: l.waiters.map((w) => w.owner) });

  before(async () => {
    server = await startMariaDb();
  });
  after(async () => {
    await server?.dispose();
  });
  beforeEach(() => {
    procs = new Procs(url());
    dir = mkdtempSync(join(tmpdir(), 'locklens-cli-mysql-'));
  });
  afterEach(async () => {
    await procs.dispose();
    for (const c of cleanups.splice(0).reverse()) await c();
    rmSync(dir, { recursive: true, force: true });
  });

  test('list --json: a PyMySQL holder and two waiters in wait order, connection ids as owners; unlock --force --yes KILLs the holder and a waiter takes over', async () => {
    const name = fresh('billing');
    const holder = pymysql(name, { identifier: 'holder' });
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const first = pymysql(name, { identifier: 'first' });
    const firstId = await first.connectionId();
    await listed(name, (l) => l.waiters.length === 1, 'the first waiter listed');
    const second = pymysql(name, { identifier: 'second' });
    const secondId = await second.connectionId();
    const lock = await listed(name, (l) => l.waiters.length === 2, 'both waiters listed');

    assert.equal(lock.kind, 'queue');
    assert.deepEqual(owners(lock), { holder: holderId, waiters: [firstId, secondId] }, 'the holder, then the waiters in the order they began waiting');
    const member = (e: EntryJson, id: string) => {
      assert.equal(e.key, `connection ${id}`);
      assert.deepEqual([e.lease, e.createRevision, e.ttl, e.token, e.holds], [null, null, null, null, null], 'nothing GET_LOCK does not have is made up');
      assert.equal(e.convention, 'mysql-get-lock');
      assert.equal(e.session?.user, ADMIN.user);
      assert.match(e.session?.client ?? '', /^127\.0\.0\.1:\d+$/);
    };
    member(lock.holder!, holderId);
    lock.waiters.forEach((w, i) => member(w, [firstId, secondId][i]));
    assert.ok(lock.waiters.every((w) => w.session?.query === `SELECT GET_LOCK('${name}', 60)` && w.session.waitingSince), 'waiters run GET_LOCK, waiting since a time');

    const r = await cli(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.match(
      r.stdout,
      new RegExp(`^released '${name}' from connection ${holderId} \\(connection ${holderId} \\(locklens@127\\.0\\.0\\.1:\\d+\\)\\): killed connection ${holderId} \\(KILL CONNECTION\\), freeing every lock it held\\n  connection ${holderId}\\n$`),
      show(r),
    );
    // A waiter's GET_LOCK returns 1; the server's queue is not readable, so either may be the one.
    const next = await eventually(() => [first, second].find((p) => p.lines.some((l) => l.startsWith('acquired'))), 15_000, 'a waiter acquired');
    const [nextId, otherId] = next === first ? [firstId, secondId] : [secondId, firstId];
    // PyMySQL finds its connection gone at its next statement: the release it tries fails.
    holder.release();
    assert.equal(await holder.until(['released', 'release-failed']), 'release-failed OperationalError');
    const after = await listed(name, (l) => l.holder?.owner === nextId, 'the waiter listed as holder');
    assert.deepEqual(owners(after), { holder: nextId, waiters: [otherId] }, 'the other still waits');
  });

  test('a name with HTML is listed intact in JSON and text, taken, refused with --try (exit 6) naming the holder, and force-released by name', async () => {
    const name = fresh('<b>x</b>');
    const holder = pymysql(name, { identifier: 'html' });
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const lock = await listed(name, (l) => l.holder !== null, 'the HTML name listed');
    assert.equal(lock.name, name);
    assert.equal(lock.holder?.owner, holderId);
    const client = lock.holder!.session!.client!;
    const text = await cli(['list', '--url', url(), '--prefix', name]);
    assert.equal(text.stdout, `${name}  (queue, 0 waiting)\n  holder    connection ${holderId}  connection ${holderId} (locklens@${client})\n`, show(text));

    const busy = await cli(['acquire', name, '--try', '--url', url()]);
    assert.equal(busy.code, 6, show(busy));
    assert.equal(busy.stderr, `locklens: ${name} is held by connection ${holderId} (user locklens, from ${client}, state Sleep)\n`);
    assert.deepEqual((await lockNamed(name))?.waiters, [], 'the try left nothing waiting');

    const r = await cli(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    const ours = await cli(['acquire', name, '--try', '--url', url(), '--', 'sh', '-c', 'echo "$ETCD_LOCK_KEY" > "$1"', 'sh', join(dir, 'key')]);
    assert.equal(ours.code, 0, show(ours));
    assert.match(readFileSync(join(dir, 'key'), 'utf8'), /^connection \d+\n$/);
  });

  test('a stuck Liquibase row is listed as DATABASECHANGELOGLOCK/1 (LOCKEDBY, no TTL) and unlock --force --yes releases it Liquibase`s way', async () => {
    // Liquibase's DDL on MySQL/MariaDB (an uppercase table, LOCKED a BIT(1)), and its lock statement, as a killed
    // migration left it.
    await server.sql(
      `USE ${DATABASE};` +
        'CREATE TABLE DATABASECHANGELOGLOCK (ID INT NOT NULL, LOCKED BIT(1) NOT NULL, LOCKGRANTED datetime NULL, LOCKEDBY VARCHAR(255) NULL, CONSTRAINT PK_DATABASECHANGELOGLOCK PRIMARY KEY (ID));' +
        'DELETE FROM DATABASECHANGELOGLOCK; INSERT INTO DATABASECHANGELOGLOCK (ID, LOCKED) VALUES (1, 0);' +
        "UPDATE DATABASECHANGELOGLOCK SET LOCKED = 1, LOCKEDBY = 'migrator-7f3c (10.0.4.17)', LOCKGRANTED = NOW() WHERE ID = 1 AND LOCKED = 0",
    );
    defer(() => server.sql(`DROP TABLE ${DATABASE}.DATABASECHANGELOGLOCK`));
    const name = 'DATABASECHANGELOGLOCK/1';
    const lock = await lockNamed(name);
    assert.ok(lock, 'the row is listed under the table`s own name');
    assert.equal(lock.kind, 'single');
    assert.deepEqual(lock.holder, { key: '1', lease: null, createRevision: null, ttl: null, owner: 'migrator-7f3c (10.0.4.17)', holds: null, token: null, convention: 'liquibase' });
    const text = await cli(['list', '--url', url(), '--prefix', 'DATABASECHANGELOGLOCK/']);
    assert.equal(text.stdout, `${name}  (single, 0 waiting)\n  holder    1  locked by migrator-7f3c (10.0.4.17)  ttl none (never expires)\n`, show(text));

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
    assert.equal(await server.sql(`SELECT ID, LOCKED + 0, LOCKGRANTED, LOCKEDBY FROM ${DATABASE}.DATABASECHANGELOGLOCK`), '1\t0\tNULL\tNULL\n');
    assert.equal(await lockNamed(name), undefined, 'an unlocked row is no lock');
    assert.equal((await cli(['acquire', name, '--try', '--url', url()])).code, 2, 'refused while the row is free too: the name is the table`s');
  });

  test('locklens acquire -- CMD excludes PyMySQL both ways: the order is the one the processes wrote', async () => {
    const name = fresh('job');
    const log = join(dir, 'order');
    const go = join(dir, 'go');
    // PyMySQL holds; locklens waits in GET_LOCK and its command waits.
    const first = pymysql(name, { identifier: 'pymysql-first', log });
    await first.until(['acquired']);
    const ours = start(['acquire', name, '--url', url(), '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', go, 'locklens-end']);
    const queued = (await listed(name, (l) => l.waiters.length === 1, 'locklens queued behind PyMySQL')).waiters[0];
    assert.match(queued.session?.query ?? '', /GET_LOCK/);
    assert.deepEqual(linesOf(log), ['pymysql-first acquired'], 'nothing ran while PyMySQL held');
    first.release();
    assert.equal(await first.until(['released']), 'released 1');
    await eventually(() => linesOf(log).includes('locklens-start'), 15_000, 'locklens runs its command once PyMySQL released');

    // locklens holds: PyMySQL's try is refused, its blocking GET_LOCK waits until the command has exited.
    assert.equal(await pymysql(name, { mode: 'try' }).until(['busy', 'acquired']), 'busy');
    const second = pymysql(name, { identifier: 'pymysql-second', log });
    const secondId = await second.connectionId();
    await listed(name, (l) => l.holder?.owner === queued.owner && l.waiters[0]?.owner === secondId, 'PyMySQL queued behind locklens');
    writeFileSync(go, '');
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    assert.match(r.stderr, new RegExp(`^locklens: holding connection ${queued.owner} \\(no fencing token \\(this store has none\\)\\)$`, 'm'), show(r));
    await second.until(['acquired']);
    assert.deepEqual(linesOf(log), ['pymysql-first acquired', 'pymysql-first releasing', 'locklens-start', 'locklens-end', 'pymysql-second acquired']);
  });

  test('connection errors: a wrong password exits 4 without printing it, nothing listening exits 3, a password in the URL exits 2', async () => {
    const wrong = await cli(['list', '--url', url()], { MYSQL_PWD: 'not the password' });
    assert.equal(wrong.code, 4, show(wrong));
    assert.match(wrong.stderr, /^locklens: cannot connect to MySQL at 127\.0\.0\.1:\d+\/app: access denied for user 'locklens': wrong password/, show(wrong));
    assert.ok(!wrong.stderr.includes('not the password'));
    const preferred = await cli(['list', '--url', url()], { MYSQL_PWD: 'not the password', LOCKLENS_PASSWORD: ADMIN.password });
    assert.equal(preferred.code, 0, show(preferred));

    const port = await freePort();
    const nobody = await cli(['list', '--url', `mysql://${ADMIN.user}@127.0.0.1:${port}/${DATABASE}`, '--dial-timeout', '3s']);
    assert.equal(nobody.code, 3, show(nobody));
    assert.equal(nobody.stderr, `locklens: cannot connect to MySQL at 127.0.0.1:${port}/${DATABASE}: nothing listens on 127.0.0.1:${port} (connection refused)\n`);

    const inUrl = await cli(['list', '--url', url().replace(`${ADMIN.user}@`, `${ADMIN.user}:hunter2@`)]);
    assert.equal(inUrl.code, 2, show(inUrl));
    assert.ok(!inUrl.stderr.includes('hunter2'), show(inUrl));
    assert.match(inUrl.stderr, /not in the URL/, show(inUrl));
  });
});

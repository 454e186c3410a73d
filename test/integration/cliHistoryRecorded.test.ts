import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { historyFile, writerOf } from '../../src/core/recording/dataDir';
import { HistoryStore } from '../../src/core/recording/historyStore';
import { lockDirOf, STALE_LOCK_MS } from '../../src/core/recording/lockDir';
import { HistoryRecorder } from '../../src/core/recording/recorder';
import type { RecordedHold } from '../../src/core/recording/recordedHold';
import { CLI, Procs, show, type Proc, type Result } from '../harness/cli';
import { eventually } from '../harness/etcd';
import { mariadbCli } from '../harness/mariadbCli';
import { ADMIN } from '../harness/mariadb';
import { postgresCli } from '../harness/postgresCli';
import { SUPERUSER_PASSWORD } from '../harness/postgres';
import { redisCli } from '../harness/redisCli';
import { startRecordingServe, type ConfigConnection } from '../harness/serve';
import { zookeeperCli } from '../harness/zookeeperCli';
import { escapeRegExp } from '../harness/regexp';

/**
 * `locklens history NAME --data DIR` over holds a real `locklens serve` (config `data: DIR`) recorded from real stores
 * and their own clients' locks (redis-py, kazoo, psycopg2, PyMySQL): one released, one force-released by
 * `locklens unlock --force --data DIR`, and, after serve was stopped (SIGTERM) and started again on the same data
 * directory, one more released.
 */

/** A peer that holds a lock until told to release it. */
interface Peer {
  until(words: readonly string[]): Promise<string>;
  release(): void;
}

interface Scenario {
  /** The test's own directory: serve's config is written there. */
  readonly dir: string;
  /** The data directory. */
  readonly data: string;
  readonly connection: string;
  readonly store: string;
  readonly url: string;
  readonly name: string;
  readonly prefixes: readonly string[];
  /** The store's password, as its own variable names it (serve's config names that variable too). */
  readonly env: NodeJS.ProcessEnv;
  readonly passwordEnv?: string;
  /**
   * How serve records a hold its peer released: a ZooKeeper node that goes is `null` (not known) where the server does
   * not allow `cons`, since serve then cannot tell a client's delete from its session's end (holdEnds.test.ts has both).
   * The SQL peers stay connected after their release: a connection gone by the next poll would read as the owner lost.
   */
  readonly releasedAs: 'released' | null;
  readonly procs: Procs;
  readonly take: () => Peer;
  /** The holder `locklens list` shows now: its key and owner. */
  readonly holder: () => Promise<{ key: string; owner: string } | undefined>;
  readonly cli: (args: string[], env?: NodeJS.ProcessEnv) => Promise<Result>;
}

/** The lock's recorded holds, once `ready` says they are as the test arranged them. */
async function recordedWhen(dir: string, name: string, ready: (holds: RecordedHold[]) => boolean, what: string): Promise<RecordedHold[]> {
  return eventually(async () => {
    const store = await HistoryStore.openReader(dir);
    try {
      const holds = await store.holds({ lock: name });
      return ready(holds) ? holds : undefined;
    } finally {
      store.close();
    }
  }, 20_000, what);
}

const recorded = (dir: string, name: string, ended: number) =>
  recordedWhen(dir, name, (holds) => holds.filter((h) => h.endedAt !== null).length >= ended, `${ended} ended holds of ${name} recorded`);

async function holdAndShow(s: Scenario): Promise<{ peer: Peer; shown: { key: string; owner: string } }> {
  const peer = s.take();
  await peer.until(['acquired']);
  const shown = await eventually(s.holder, 15_000, `${s.name} listed as held`);
  // serve polls some stores: a hold ended before its poll saw it would never have been recorded.
  await recordedWhen(s.data, s.name, (holds) => holds.some((h) => h.key === shown.key && h.endedAt === null), `serve to record ${shown.key} held`);
  return { peer, shown };
}

const configConnection = (s: Scenario): ConfigConnection => ({
  name: s.connection,
  store: s.store,
  endpoints: [s.url],
  prefixes: s.prefixes,
  ...(s.passwordEnv ? { passwordEnv: s.passwordEnv } : {}),
});

/** serve's SIGTERM: what it saw is written and the data directory given up before it exits 0. */
async function stop(serve: Proc): Promise<void> {
  serve.signal('SIGTERM');
  const r = await serve.wait();
  assert.equal(r.code, 0, show(r));
}

async function releasedForcedRestarted(s: Scenario): Promise<void> {
  const start = async () => (await startRecordingServe(s.procs, { dir: s.dir, data: s.data, connection: configConnection(s), env: s.env })).serve;
  let serve = await start();
  const first = await holdAndShow(s);
  first.peer.release();
  await first.peer.until(['released', 'release-failed']);
  await recorded(s.data, s.name, 1);

  const second = await holdAndShow(s);
  const unlock = await s.cli(['unlock', s.name, '--force', '--yes', '--url', s.url, '--data', s.data, '--connection-name', s.connection], s.env);
  assert.equal(unlock.code, 0, show(unlock));
  assert.equal(unlock.stderr, '', show(unlock));
  await recorded(s.data, s.name, 2);

  // serve stops and starts again: the history goes on in the same file.
  await stop(serve);
  serve = await start();
  const third = await holdAndShow(s);
  third.peer.release();
  await third.peer.until(['released', 'release-failed']);
  await recorded(s.data, s.name, 3);
  await stop(serve);

  const r = await s.cli(['history', s.name, '--data', s.data, '--json']);
  assert.equal(r.code, 0, show(r));
  const doc = JSON.parse(r.stdout) as { lock: string; dataDir: string; connection: null; since: null; holds: Record<string, unknown>[] };
  assert.deepEqual([doc.lock, doc.dataDir, doc.connection, doc.since], [s.name, s.data, null, null]);
  assert.deepEqual(
    doc.holds.map((h) => [h.key, h.owner, h.end, h.forceReleasedBy, h.connection, h.acquiredExact, h.endedExact]),
    [
      [first.shown.key, first.shown.owner, s.releasedAs, null, s.connection, true, true],
      [second.shown.key, second.shown.owner, 'forceReleased', userInfo().username, s.connection, true, true],
      [third.shown.key, third.shown.owner, s.releasedAs, null, s.connection, true, true],
    ],
    r.stdout,
  );
  for (const h of doc.holds) assert.ok(Date.parse(h.acquiredAt as string) < Date.parse(h.endedAt as string), JSON.stringify(h));
  assert.deepEqual(Object.keys(doc.holds[0]), ['connection', 'store', 'key', 'owner', 'token', 'acquiredAt', 'acquiredExact', 'endedAt', 'endedExact', 'end', 'forceReleasedBy', 'waitedMs']);

  const text = await s.cli(['history', s.name, '--data', s.data, '--connection', s.connection, '--since', '1h']);
  assert.equal(text.code, 0, show(text));
  const lines = text.stdout.trimEnd().split('\n');
  const releasedText = s.releasedAs ?? 'end unknown';
  assert.match(lines[0], new RegExp(`^the lock ${escapeRegExp(s.name)}: recorded in ${escapeRegExp(s.data)}, connection ${s.connection}, since \\S+Z, 3 holds$`));
  assert.deepEqual(
    lines.slice(1).map((l) => l.split('  ').slice(5).join('  ')),
    [releasedText, `force-released by ${userInfo().username}`, releasedText],
    text.stdout,
  );
  assert.match(lines[2], new RegExp(`^  ${escapeRegExp(second.shown.key)}  owner ${escapeRegExp(second.shown.owner)}  token \\S+  \\S+Z → \\S+Z \\([\\d.]+ ?m?s\\)  force-released`));
  const other = await s.cli(['history', s.name, '--data', s.data, '--connection', 'another']);
  assert.equal(other.stdout, `the lock ${s.name}: recorded in ${s.data}, connection another, 0 holds\n`);
}

describe('locklens history --data: Redis locks recorded (redis-py)', () => {
  const f = redisCli();
  test('released, force-released, and released again after a restart of serve', async () => {
    const name = 'rec:jobs';
    await releasedForcedRestarted({
      dir: f.dir,
      data: join(f.dir, 'data'),
      connection: 'cache',
      store: 'redis',
      releasedAs: 'released',
      procs: f.procs,
      url: f.url(),
      name,
      prefixes: ['rec:'],
      env: {},
      take: () => f.peer(name, 'hold', null),
      holder: async () => (await f.list('rec:')).find((l) => l.name === name)?.holder ?? undefined,
      cli: (args, env) => f.procs.run(args, { env }),
    });
  });

  test('serve killed (SIGKILL) while recording: one started at once on the same data directory takes it over, and every hold recorded before is listed', async () => {
    const name = 'kill:jobs';
    const data = join(f.dir, 'data');
    const connection: ConfigConnection = { name: 'cache', store: 'redis', endpoints: [f.url()], prefixes: ['kill:'] };
    const { serve } = await startRecordingServe(f.procs, { dir: f.dir, data, connection });
    for (let n = 1; n <= 3; n++) {
      const peer = f.peer(name, 'hold', null);
      await peer.until(['acquired']);
      await recordedWhen(data, name, (holds) => holds.length === n, `hold ${n} recorded`);
      peer.release();
      await peer.until(['released', 'release-failed']);
    }
    await recorded(data, name, 3);
    // Killed while a hold is taken and the next one queues behind it: serve is busy recording.
    const holder = f.peer(name, 'hold', null);
    await holder.until(['acquired']);
    await recordedWhen(data, name, (holds) => holds.length === 4, 'the fourth hold recorded');
    f.peer(name, 'hold', null);
    const before = await history(f, name, data);
    serve.signal('SIGKILL');
    assert.equal((await serve.wait()).signal, 'SIGKILL');

    assert.deepEqual(writerOf(data), { pid: serve.pid, alive: false }, 'its pid file is left behind');
    // A kill inside a transaction leaves SQLite's lock directory behind; one made here stands for it if this kill did not.
    const lock = lockDirOf(historyFile(data));
    if (!existsSync(lock)) mkdirSync(lock);
    const started = Date.now();
    const again = await startRecordingServe(f.procs, { dir: f.dir, data, connection });
    const took = Date.now() - started;
    assert.ok(took < STALE_LOCK_MS, `ready in ${took} ms: it did not wait for the lock directory to grow stale`);
    assert.deepEqual(writerOf(data), { pid: again.serve.pid, alive: true }, 'the pid file is the new serve`s');

    const after = await history(f, name, data);
    const ended = (h: Record<string, unknown>) => h.endedAt !== null;
    for (const h of before.filter(ended)) assert.ok(after.some((a) => isDeepStrictEqual(a, h)), `${JSON.stringify(h)} still listed:\n${JSON.stringify(after)}`);
    for (const h of before.filter((b) => !ended(b))) assert.ok(after.some((a) => a.key === h.key && a.acquiredAt === h.acquiredAt), `${JSON.stringify(h)} still listed`);
    assert.equal(before.filter(ended).length, 3);
    await stop(again.serve);
  });
});

/** `locklens history NAME --data DIR --json`'s holds. */
async function history(f: ReturnType<typeof redisCli>, name: string, data: string): Promise<Record<string, unknown>[]> {
  const r = await f.procs.run(['history', name, '--data', data, '--json']);
  assert.equal(r.code, 0, show(r));
  return (JSON.parse(r.stdout) as { holds: Record<string, unknown>[] }).holds;
}

describe('locklens unlock --force: where its note goes', () => {
  const f = redisCli();

  test('LOCKLENS_DATA names the data directory, and the connection is the URL`s host by default', async () => {
    const name = 'note:jobs';
    const dir = join(f.dir, 'data');
    const connection = new URL(f.url()).host;
    const { serve } = await startRecordingServe(f.procs, { dir: f.dir, data: dir, connection: { name: connection, store: 'redis', endpoints: [f.url()], prefixes: ['note:'] } });
    const peer = f.peer(name, 'hold', null);
    await peer.until(['acquired']);
    await eventually(async () => (await f.list('note:')).find((l) => l.name === name)?.holder ?? undefined, 15_000, 'held');
    await recordedWhen(dir, name, (holds) => holds.length === 1, 'serve to record the hold');
    const r = await f.procs.run(['unlock', name, '--force', '--yes', '--url', f.url()], { env: { LOCKLENS_DATA: dir } });
    assert.equal(r.code, 0, show(r));
    const [hold] = await recorded(dir, name, 1);
    assert.deepEqual([hold.connection, hold.end, hold.forceReleasedBy], [connection, 'forceReleased', userInfo().username]);
    await stop(serve);
  });

  test('a note that cannot be written is said on stderr; the release stands (exit 0)', async () => {
    const peer = f.peer('note:other', 'hold', null);
    await peer.until(['acquired']);
    await eventually(async () => (await f.list('note:')).find((l) => l.name === 'note:other')?.holder ?? undefined, 15_000, 'held');
    const notADir = join(f.dir, 'file');
    writeFileSync(notADir, '');
    const r = await f.procs.run(['unlock', 'note:other', '--force', '--yes', '--url', f.url(), '--data', notADir]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^released 'note:other'/);
    assert.match(r.stderr, new RegExp(`^locklens: released, but not noted in ${escapeRegExp(notADir)}: `));
    assert.equal((await f.list('note:')).find((l) => l.name === 'note:other'), undefined, 'released');
  });
});

describe('locklens history --data: who may read it', () => {
  test('a user without write access to the data directory is told what reading needs (exit 4)', async (t) => {
    if (process.getuid?.() !== 0) return t.skip('needs root, to run the CLI as another user (runuser -u nobody)');
    // Under /tmp with the modes a service's data directory has: others may read, not write.
    const dir = mkdtempSync('/tmp/locklens-perm-');
    try {
      chmodSync(dir, 0o755);
      const recorder = await HistoryRecorder.open(join(dir, 'data'));
      await recorder.close();
      chmodSync(join(dir, 'data'), 0o755);
      // The CLI's bundle beside it, where nobody may read it: a checkout can be under a directory only its owner enters
      // (a clone in `mktemp -d`, mode 0700).
      const cli = join(dir, 'dist', basename(CLI));
      cpSync(dirname(CLI), dirname(cli), { recursive: true });
      const procs = new Procs('');
      try {
        const r = await procs.spawn('runuser', ['-u', 'nobody', '--', process.execPath, cli, 'history', 'jobs', '--data', join(dir, 'data')]).wait();
        assert.equal(r.code, 4, show(r));
        assert.match(r.stderr, /reading the recorded history needs write access to this directory and .*history\.db \(SQLite locks the file by creating .*history\.db\.lock beside it/);
      } finally {
        await procs.dispose();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('locklens history --data: ZooKeeper locks recorded (kazoo)', { timeout: 180_000 }, () => {
  const f = zookeeperCli();
  test('released, force-released, and released again after a restart of serve', async () => {
    const name = '/rec/job';
    await releasedForcedRestarted({
      dir: f.dir,
      data: join(f.dir, 'data'),
      connection: 'coordination',
      store: 'zookeeper',
      releasedAs: null,
      procs: f.procs,
      url: f.url(),
      name,
      prefixes: ['/rec/'],
      env: {},
      take: () => f.kazoo(name),
      holder: async () => (await f.list('/rec/')).find((l) => l.name === name)?.holder ?? undefined,
      cli: (args, env) => f.procs.run(args, { env }),
    });
  });
});

describe('locklens history --data: PostgreSQL advisory locks recorded (psycopg2)', { timeout: 300_000 }, () => {
  const f = postgresCli();
  test('released, force-released, and released again after a restart of serve', async () => {
    const name = f.fresh();
    await releasedForcedRestarted({
      dir: f.dir,
      data: join(f.dir, 'data'),
      connection: 'billing-db',
      store: 'postgres',
      releasedAs: 'released',
      procs: f.procs,
      url: f.url(),
      name,
      prefixes: [name],
      env: { PGPASSWORD: SUPERUSER_PASSWORD },
      passwordEnv: 'PGPASSWORD',
      take: () => f.psycopg(name, { stay: true }),
      holder: async () => (await f.lockNamed(name))?.holder ?? undefined,
      cli: f.cli,
    });
  });
});

describe('locklens history --data: MariaDB GET_LOCKs recorded (PyMySQL)', { timeout: 300_000 }, () => {
  const f = mariadbCli();
  test('released, force-released, and released again after a restart of serve', async () => {
    const name = f.fresh('rec-job');
    await releasedForcedRestarted({
      dir: f.dir,
      data: join(f.dir, 'data'),
      connection: 'orders-db',
      store: 'mysql',
      releasedAs: 'released',
      procs: f.procs,
      url: f.url(),
      name,
      prefixes: [name],
      env: { MYSQL_PWD: ADMIN.password },
      passwordEnv: 'MYSQL_PWD',
      take: () => f.pymysql(name, { stay: true }),
      holder: async () => (await f.lockNamed(name))?.holder ?? undefined,
      cli: f.cli,
    });
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { HistoryStore } from '../../src/core/recording/historyStore';
import { HistoryRecorder } from '../../src/core/recording/recorder';
import type { RecordedHold } from '../../src/core/recording/recordedHold';
import { profileFrom } from '../../src/cli/options';
import { CLI, Procs, show, type Result } from '../harness/cli';
import { eventually } from '../harness/etcd';
import { mariadbCli } from '../harness/mariadbCli';
import { ADMIN } from '../harness/mariadb';
import { postgresCli } from '../harness/postgresCli';
import { SUPERUSER_PASSWORD } from '../harness/postgres';
import { recordWatch } from '../harness/recordingWatch';
import { redisCli } from '../harness/redisCli';
import { zookeeperCli } from '../harness/zookeeperCli';

/**
 * `locklens history NAME --data DIR` over holds recorded from real stores and their own clients' locks (redis-py,
 * kazoo, psycopg2, PyMySQL): one released, one force-released by `locklens unlock --force --data DIR`, and, after the
 * recorder was stopped and started again (a restart of serve), one more released.
 */

/** A peer that holds a lock until told to release it. */
interface Peer {
  until(words: readonly string[]): Promise<string>;
  release(): void;
}

interface Scenario {
  readonly dir: string;
  readonly connection: string;
  readonly url: string;
  readonly name: string;
  readonly prefixes: readonly string[];
  /** The store's password, as its own variable names it. */
  readonly env: NodeJS.ProcessEnv;
  readonly take: () => Peer;
  /** The holder `locklens list` shows now: its key and owner. */
  readonly holder: () => Promise<{ key: string; owner: string } | undefined>;
  readonly cli: (args: string[], env?: NodeJS.ProcessEnv) => Promise<Result>;
}

async function recorded(dir: string, name: string, ended: number): Promise<RecordedHold[]> {
  return eventually(async () => {
    const store = await HistoryStore.openReader(dir);
    try {
      const holds = await store.holds({ lock: name });
      return holds.filter((h) => h.endedAt !== null).length >= ended ? holds : undefined;
    } finally {
      store.close();
    }
  }, 20_000, `${ended} ended holds of ${name} recorded`);
}

async function holdAndShow(s: Scenario): Promise<{ peer: Peer; shown: { key: string; owner: string } }> {
  const peer = s.take();
  await peer.until(['acquired']);
  const shown = await eventually(s.holder, 15_000, `${s.name} listed as held`);
  return { peer, shown };
}

async function releasedForcedRestarted(s: Scenario): Promise<void> {
  const profile = profileFrom({ url: s.url }, s.env);
  const start = () => recordWatch({ dir: s.dir, connection: s.connection, profile, prefixes: s.prefixes });
  let recording = await start();
  const first = await holdAndShow(s);
  first.peer.release();
  await first.peer.until(['released', 'release-failed']);
  await recorded(s.dir, s.name, 1);

  const second = await holdAndShow(s);
  const unlock = await s.cli(['unlock', s.name, '--force', '--yes', '--url', s.url, '--data', s.dir, '--connection-name', s.connection], s.env);
  assert.equal(unlock.code, 0, show(unlock));
  assert.equal(unlock.stderr, '', show(unlock));
  await recorded(s.dir, s.name, 2);

  // serve stops and starts again: the history goes on in the same file.
  await recording.close();
  recording = await start();
  const third = await holdAndShow(s);
  third.peer.release();
  await third.peer.until(['released', 'release-failed']);
  await recorded(s.dir, s.name, 3);
  await recording.close();

  const r = await s.cli(['history', s.name, '--data', s.dir, '--json']);
  assert.equal(r.code, 0, show(r));
  const doc = JSON.parse(r.stdout) as { lock: string; dataDir: string; connection: null; since: null; holds: Record<string, unknown>[] };
  assert.deepEqual([doc.lock, doc.dataDir, doc.connection, doc.since], [s.name, s.dir, null, null]);
  assert.deepEqual(
    doc.holds.map((h) => [h.key, h.owner, h.end, h.forceReleasedBy, h.connection, h.acquiredExact, h.endedExact]),
    [
      [first.shown.key, first.shown.owner, 'released', null, s.connection, true, true],
      [second.shown.key, second.shown.owner, 'forceReleased', userInfo().username, s.connection, true, true],
      [third.shown.key, third.shown.owner, 'released', null, s.connection, true, true],
    ],
    r.stdout,
  );
  for (const h of doc.holds) assert.ok(Date.parse(h.acquiredAt as string) < Date.parse(h.endedAt as string), JSON.stringify(h));
  assert.deepEqual(Object.keys(doc.holds[0]), ['connection', 'store', 'key', 'owner', 'token', 'acquiredAt', 'acquiredExact', 'endedAt', 'endedExact', 'end', 'forceReleasedBy', 'waitedMs']);

  const text = await s.cli(['history', s.name, '--data', s.dir, '--connection', s.connection, '--since', '1h']);
  assert.equal(text.code, 0, show(text));
  const lines = text.stdout.trimEnd().split('\n');
  assert.match(lines[0], new RegExp(`^the lock ${escape(s.name)}: recorded in ${escape(s.dir)}, connection ${s.connection}, since \\S+Z, 3 holds$`));
  assert.deepEqual(
    lines.slice(1).map((l) => l.split('  ').slice(5).join('  ')),
    ['released', `force-released by ${userInfo().username}`, 'released'],
    text.stdout,
  );
  assert.match(lines[2], new RegExp(`^  ${escape(second.shown.key)}  owner ${escape(second.shown.owner)}  token \\S+  \\S+Z → \\S+Z \\([\\d.]+ ?m?s\\)  force-released`));
  const other = await s.cli(['history', s.name, '--data', s.dir, '--connection', 'another']);
  assert.equal(other.stdout, `the lock ${s.name}: recorded in ${s.dir}, connection another, 0 holds\n`);
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('locklens history --data: Redis locks recorded (redis-py)', () => {
  const f = redisCli();
  test('released, force-released, and released again after a restart of the recorder', async () => {
    const name = 'rec:jobs';
    await releasedForcedRestarted({
      dir: join(f.dir, 'data'),
      connection: 'cache',
      url: f.url(),
      name,
      prefixes: ['rec:'],
      env: {},
      take: () => f.peer(name, 'hold', null),
      holder: async () => (await f.list('rec:')).find((l) => l.name === name)?.holder ?? undefined,
      cli: (args, env) => f.procs.run(args, { env }),
    });
  });
});

describe('locklens unlock --force: where its note goes', () => {
  const f = redisCli();

  test('LOCKLENS_DATA names the data directory, and the connection is the URL`s host by default', async () => {
    const name = 'note:jobs';
    const dir = join(f.dir, 'data');
    const connection = new URL(f.url()).host;
    const recording = await recordWatch({ dir, connection, profile: profileFrom({ url: f.url() }, {}), prefixes: ['note:'] });
    try {
      const peer = f.peer(name, 'hold', null);
      await peer.until(['acquired']);
      await eventually(async () => (await f.list('note:')).find((l) => l.name === name)?.holder ?? undefined, 15_000, 'held');
      const r = await f.procs.run(['unlock', name, '--force', '--yes', '--url', f.url()], { env: { LOCKLENS_DATA: dir } });
      assert.equal(r.code, 0, show(r));
      const [hold] = await recorded(dir, name, 1);
      assert.deepEqual([hold.connection, hold.end, hold.forceReleasedBy], [connection, 'forceReleased', userInfo().username]);
    } finally {
      await recording.close();
    }
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
    assert.match(r.stderr, new RegExp(`^locklens: released, but not noted in ${escape(notADir)}: `));
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
      const procs = new Procs('');
      try {
        const r = await procs.spawn('runuser', ['-u', 'nobody', '--', process.execPath, CLI, 'history', 'jobs', '--data', join(dir, 'data')]).wait();
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
  test('released, force-released, and released again after a restart of the recorder', async () => {
    const name = '/rec/job';
    await releasedForcedRestarted({
      dir: join(f.dir, 'data'),
      connection: 'coordination',
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
  test('released, force-released, and released again after a restart of the recorder', async () => {
    const name = f.fresh();
    await releasedForcedRestarted({
      dir: join(f.dir, 'data'),
      connection: 'billing-db',
      url: f.url(),
      name,
      prefixes: [name],
      env: { PGPASSWORD: SUPERUSER_PASSWORD },
      take: () => f.psycopg(name),
      holder: async () => (await f.lockNamed(name))?.holder ?? undefined,
      cli: f.cli,
    });
  });
});

describe('locklens history --data: MariaDB GET_LOCKs recorded (PyMySQL)', { timeout: 300_000 }, () => {
  const f = mariadbCli();
  test('released, force-released, and released again after a restart of the recorder', async () => {
    const name = f.fresh('rec-job');
    await releasedForcedRestarted({
      dir: join(f.dir, 'data'),
      connection: 'orders-db',
      url: f.url(),
      name,
      prefixes: [name],
      env: { MYSQL_PWD: ADMIN.password },
      take: () => f.pymysql(name),
      holder: async () => (await f.lockNamed(name))?.holder ?? undefined,
      cli: f.cli,
    });
  });
});

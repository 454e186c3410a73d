import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isLockLensError } from '../../src/core/errors';
import { historyFile } from '../../src/core/recording/dataDir';
import { HistoryStore } from '../../src/core/recording/historyStore';
import { HistoryRecorder } from '../../src/core/recording/recorder';
import { SCHEMA_VERSION, userVersion } from '../../src/core/recording/schema';
import { lockDirOf } from '../../src/core/recording/lockDir';
import { SqliteFile } from '../../src/core/recording/sqliteFile';
import { eventsOf } from '../harness/recordedEvents';

const T0 = Date.UTC(2025, 0, 1);
const jobs = eventsOf('prod', 'jobs');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'locklens-history-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function read(query: Parameters<HistoryStore['holds']>[0], from = dir) {
  const store = await HistoryStore.openReader(from);
  try {
    return await store.holds(query);
  } finally {
    store.close();
  }
}

describe('the recorded history: written, read back', () => {
  test('holds and how they ended, with their waits, come back oldest first', async () => {
    const r = await HistoryRecorder.open(dir);
    r.record(jobs.holdStarted('jobs/a', T0, { token: 7 }), 'etcd');
    r.record(jobs.waitStarted('jobs/b', T0 + 10), 'etcd');
    r.record(jobs.holdEnded('jobs/a', T0 + 1000, 'released', 1000, { token: 7 }), 'etcd');
    r.record(jobs.waitEnded('jobs/b', T0 + 1000, true, 990), 'etcd');
    r.record(jobs.holdStarted('jobs/b', T0 + 1000, { waitedMs: 990 }), 'etcd');
    r.record(eventsOf('prod', 'other').holdStarted('other/x', T0), 'etcd');
    assert.equal(await r.flush(), true);
    assert.deepEqual(r.status, { committed: 6, pending: 0, dropped: 0, failing: undefined });
    await r.close();
    const holds = await read({ lock: 'jobs' });
    assert.deepEqual(
      holds.map((h) => [h.key, h.owner, h.token, h.acquiredAt - T0, h.acquiredExact, h.endedAt === null ? null : h.endedAt - T0, h.end, h.waitedMs, h.store, h.connection]),
      [
        ['jobs/a', 'owner-of-jobs/a', 7, 0, true, 1000, 'released', null, 'etcd', 'prod'],
        ['jobs/b', 'owner-of-jobs/b', null, 1000, true, null, null, 990, 'etcd', 'prod'],
      ],
    );
  });

  test('a query takes a connection, a time (holds not ended by then) and a limit (the newest)', async () => {
    const r = await HistoryRecorder.open(dir);
    for (const [conn, i] of [['a', 0], ['b', 1], ['a', 2], ['a', 3]] as const) {
      const e = eventsOf(conn, 'jobs');
      r.record(e.holdStarted(`k${i}`, T0 + i * 100), 'redis');
      if (i < 3) r.record(e.holdEnded(`k${i}`, T0 + i * 100 + 50, 'expired', 50), 'redis');
    }
    await r.close();
    assert.deepEqual((await read({ lock: 'jobs', connection: 'a' })).map((h) => h.key), ['k0', 'k2', 'k3']);
    assert.deepEqual((await read({ lock: 'jobs', since: T0 + 200 })).map((h) => h.key), ['k2', 'k3'], 'k2 ended at +250; k3 still holds');
    assert.deepEqual((await read({ lock: 'jobs', limit: 2 })).map((h) => h.key), ['k2', 'k3']);
    assert.deepEqual(await read({ lock: 'nothing' }), []);
  });

  test('a hold found again by the next run goes on; one not found again ends when the watch has caught up', async () => {
    const first = await HistoryRecorder.open(dir);
    first.record(jobs.holdStarted('jobs/a', T0), 'zookeeper');
    first.record(jobs.holdStarted('jobs/b', T0 + 5), 'zookeeper');
    await first.close();
    const second = await HistoryRecorder.open(dir);
    second.record(jobs.holdStarted('jobs/a', T0 + 60_000, { exact: false }), 'zookeeper');
    second.caughtUp('prod', T0 + 60_001);
    second.record(jobs.holdEnded('jobs/a', T0 + 70_000, 'released', null), 'zookeeper');
    await second.close();
    assert.deepEqual(
      (await read({ lock: 'jobs' })).map((h) => [h.key, h.acquiredAt - T0, h.acquiredExact, h.endedAt! - T0, h.endedExact, h.end]),
      [
        ['jobs/a', 0, true, 70_000, true, 'released'],
        ['jobs/b', 5, true, 60_001, false, null],
      ],
    );
  });

  test('an end whose start was never written is recorded with the start it implies', async () => {
    const r = await HistoryRecorder.open(dir);
    r.record(jobs.holdEnded('jobs/z', T0 + 5000, 'expired', 3000), 'redis');
    await r.close();
    assert.deepEqual((await read({ lock: 'jobs' })).map((h) => [h.acquiredAt - T0, h.acquiredExact, h.end]), [[2000, false, 'expired']]);
  });
});

describe('the recorded history: force releases', () => {
  const note = (at: number) => ({ connection: 'prod', lock: 'jobs', member: 'jobs/a', owner: 'owner-of-jobs/a', by: 'alice', at });

  test('noted before the watcher saw the hold end: that end is force-released, by whom; not an earlier hold of the same key', async () => {
    const r = await HistoryRecorder.open(dir);
    // A Redis token lock: every hold has the same key, its token (the owner) tells them apart.
    r.record(jobs.holdStarted('jobs/a', T0, { owner: 'token-1' }), 'redis');
    r.record(jobs.holdEnded('jobs/a', T0 + 900, 'released', 900, { owner: 'token-1' }), 'redis');
    r.record(jobs.holdStarted('jobs/a', T0 + 950), 'redis');
    await r.flush();
    await HistoryStore.noteForceRelease(dir, note(T0 + 1000));
    r.record(jobs.holdEnded('jobs/a', T0 + 1200, 'released', 250), 'redis');
    r.record(jobs.holdStarted('jobs/a', T0 + 2000), 'redis');
    r.record(jobs.holdEnded('jobs/a', T0 + 3000, 'released', 1000), 'redis');
    await r.close();
    assert.deepEqual(
      (await read({ lock: 'jobs' })).map((h) => [h.owner, h.end, h.forceReleasedBy]),
      [
        ['token-1', 'released', null],
        ['owner-of-jobs/a', 'forceReleased', 'alice'],
        ['owner-of-jobs/a', 'released', null],
      ],
      'the hold of that owner that held then, and no other',
    );
  });

  test('noted after the end was recorded, and with no recorder running: the end is marked all the same', async () => {
    const r = await HistoryRecorder.open(dir);
    r.record(jobs.holdStarted('jobs/a', T0), 'mysql');
    r.record(jobs.holdEnded('jobs/a', T0 + 1100, 'released', 1100), 'mysql');
    await r.close();
    await HistoryStore.noteForceRelease(dir, note(T0 + 1000));
    await HistoryStore.noteForceRelease(dir, { ...note(T0 + 1000), member: 'jobs/other' });
    assert.deepEqual((await read({ lock: 'jobs' })).map((h) => [h.key, h.end, h.forceReleasedBy]), [['jobs/a', 'forceReleased', 'alice']]);
  });

  test('a note in a directory nobody recorded into yet creates the history', async () => {
    await HistoryStore.noteForceRelease(dir, note(T0));
    assert.deepEqual(await read({ lock: 'jobs' }), []);
  });
});

describe('the recorded history: its file', () => {
  test('the schema version is kept in the file; a file from a newer LockLens is refused by readers and the writer', async () => {
    await (await HistoryRecorder.open(dir)).close();
    const f = SqliteFile.open(historyFile(dir), false);
    assert.equal(userVersion(f), SCHEMA_VERSION);
    f.db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    f.close();
    const newer = new RegExp(`written by a newer LockLens \\(schema ${SCHEMA_VERSION + 1}; this one knows up to ${SCHEMA_VERSION}\\)`);
    await assert.rejects(HistoryStore.openReader(dir), newer);
    await assert.rejects(HistoryRecorder.open(dir), newer);
    await (await HistoryRecorder.open(join(dir, 'fresh'))).close();
  });

  test('a directory without a history says so', async () => {
    await assert.rejects(HistoryStore.openReader(dir), (e) => isLockLensError(e, 'INVALID_ARGUMENT') && /holds no recorded history \(no .*history\.db\)/.test(e.message));
  });

  test('one recorder per directory: a second is refused while the first runs; a dead one`s pid file is taken over', async () => {
    const first = await HistoryRecorder.open(dir);
    await assert.rejects(HistoryRecorder.open(dir), new RegExp(`recorded into by another locklens serve \\(pid ${process.pid}\\)`));
    await first.close();
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    writeFileSync(join(dir, 'serve.pid'), JSON.stringify({ pid: Number(dead) }));
    await (await HistoryRecorder.open(dir)).close();
  });

  test('a lock directory left behind: the recorder clears it at once; a reader waits, then says who holds it', async () => {
    await (await HistoryRecorder.open(dir)).close();
    mkdirSync(lockDirOf(historyFile(dir)));
    const started = Date.now();
    await assert.rejects(read({ lock: 'jobs' }), (e) => isLockLensError(e, 'TIMEOUT') && /no locklens serve records here; a transaction has held its lock for/.test(e.message));
    assert.ok(Date.now() - started >= 3000, 'it retried for a while');
    const old = (Date.now() - 60_000) / 1000;
    utimesSync(lockDirOf(historyFile(dir)), old, old);
    await assert.rejects(read({ lock: 'jobs' }), /left 6\d s ago by a process killed inside a transaction: locklens serve clears it when it runs; or remove that directory/);
    const r = await HistoryRecorder.open(dir);
    assert.throws(() => statSync(lockDirOf(historyFile(dir))), /ENOENT/);
    r.record(jobs.holdStarted('jobs/a', T0), 'etcd');
    await r.close();
    assert.equal((await read({ lock: 'jobs' })).length, 1);
  });
});

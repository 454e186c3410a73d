import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from 'node-sqlite3-wasm';
import { historyFile } from '../../src/core/recording/dataDir';
import { HistoryStore } from '../../src/core/recording/historyStore';
import { lockDirOf } from '../../src/core/recording/lockDir';
import { HistoryRecorder } from '../../src/core/recording/recorder';
import { SqliteFile } from '../../src/core/recording/sqliteFile';
import { eventsOf } from '../harness/recordedEvents';

/**
 * A writer killed in the middle of a transaction leaves its journal beside the database, and pages of the transaction
 * in the file. SQLite rolls such a journal back before reading; node-sqlite3-wasm never does (its VFS takes every
 * journal for a live writer's), so hotJournal.ts does it. The state a kill leaves is made exactly here: the files are
 * copied while a transaction that spilled pages into the database is open.
 */

const T0 = Date.UTC(2025, 0, 1);
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'locklens-journal-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** 2,000 committed holds; then the files as a kill inside a big uncommitted change would leave them, in `crashed`. */
async function killedInsideATransaction(crashed: string): Promise<void> {
  const r = await HistoryRecorder.open(join(dir, 'live'));
  const jobs = eventsOf('prod', 'jobs');
  for (let i = 0; i < 2000; i++) r.record(jobs.holdStarted(`k${i}`, T0 + i, { owner: 'committed' }), 'redis');
  await r.close();
  const live = SqliteFile.open(historyFile(join(dir, 'live')), false);
  // A small cache: the change does not fit, so SQLite writes its pages into the database before the commit.
  live.db.exec('PRAGMA cache_size = 5');
  live.db.exec('BEGIN IMMEDIATE');
  live.db.run(`UPDATE holds SET owner = 'uncommitted ' || hex(randomblob(100)), started_at = 0`);
  mkdirSync(crashed);
  copyFileSync(historyFile(join(dir, 'live')), historyFile(crashed));
  copyFileSync(`${historyFile(join(dir, 'live'))}-journal`, `${historyFile(crashed)}-journal`);
  live.db.exec('ROLLBACK');
  live.close();
}

test('node-sqlite3-wasm alone reads a dead transaction`s pages: the case recovery exists for', async () => {
  const crashed = join(dir, 'crashed');
  await killedInsideATransaction(crashed);
  const raw = new Database(historyFile(crashed));
  try {
    const owners = raw.all('SELECT DISTINCT substr(owner, 1, 11) AS o FROM holds') as { o: string }[];
    assert.ok(owners.some((r) => r.o === 'uncommitted'), `the file holds uncommitted rows: ${JSON.stringify(owners)}`);
  } finally {
    raw.close();
  }
});

test('a reader rolls the dead transaction back before it reads: the committed rows, intact, and no journal left', async () => {
  const crashed = join(dir, 'crashed');
  await killedInsideATransaction(crashed);
  const store = await HistoryStore.openReader(crashed);
  try {
    const holds = await store.holds({ lock: 'jobs' });
    assert.equal(holds.length, 2000);
    assert.ok(holds.every((h) => h.owner === 'committed' && h.acquiredAt >= T0));
  } finally {
    store.close();
  }
  assert.equal(existsSync(`${historyFile(crashed)}-journal`), false);
  const f = SqliteFile.open(historyFile(crashed), false);
  assert.deepEqual(await f.read(() => f.db.all('PRAGMA integrity_check'), () => ''), [{ integrity_check: 'ok' }]);
  f.close();
});

test('with the killed writer`s lock left too, the next recorder clears it, rolls back, and writes on', async () => {
  const crashed = join(dir, 'crashed');
  await killedInsideATransaction(crashed);
  mkdirSync(lockDirOf(historyFile(crashed)));
  const r = await HistoryRecorder.open(crashed);
  r.record(eventsOf('prod', 'jobs').holdStarted('after', T0 + 5000, { owner: 'next' }), 'redis');
  await r.close();
  const store = await HistoryStore.openReader(crashed);
  try {
    const holds = await store.holds({ lock: 'jobs' });
    assert.deepEqual([holds.length, new Set(holds.map((h) => h.owner))], [2001, new Set(['committed', 'next'])]);
  } finally {
    store.close();
  }
});

test('a journal whose header was never synced saved nothing: it is deleted, the file read as it is', async () => {
  const live = join(dir, 'live');
  const r = await HistoryRecorder.open(live);
  r.record(eventsOf('prod', 'jobs').holdStarted('k', T0), 'redis');
  await r.close();
  // SQLite writes a journal's header with its magic zeroed and fills it in only when it syncs.
  writeFileSync(`${historyFile(live)}-journal`, Buffer.alloc(512));
  const store = await HistoryStore.openReader(live);
  assert.equal((await store.holds({ lock: 'jobs' })).length, 1);
  store.close();
  assert.equal(existsSync(`${historyFile(live)}-journal`), false);
});

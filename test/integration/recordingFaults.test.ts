import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { historyFile } from '../../src/core/recording/dataDir';
import { HistoryStore } from '../../src/core/recording/historyStore';
import { HistoryRecorder } from '../../src/core/recording/recorder';
import { lockDirOf } from '../../src/core/recording/lockDir';
import { SqliteFile } from '../../src/core/recording/sqliteFile';
import { killOnExit, stopProcess } from '../harness/processes';
import { eventsOf } from '../harness/recordedEvents';

/**
 * The recorded history under the faults the issue names: a recorder killed with SIGKILL while it writes, and a disk
 * that fills up. What was committed before a fault is there after it, the file is intact, and recording goes on.
 */

const WRITER = join(__dirname, '../harness/recordingWriter.js');

/** The file's own check, the keys of the lock `jobs` it holds, and how many of its holds have no end. */
async function inspect(dir: string): Promise<{ integrity: string; keys: Set<string>; open: number }> {
  const f = SqliteFile.open(historyFile(dir), false);
  try {
    const integrity = await f.read(() => (f.db.all('PRAGMA integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check).join('\n'), () => 'locked');
    const keys = await f.read(() => new Set((f.db.all("SELECT member FROM holds WHERE lock = 'jobs'") as { member: string }[]).map((r) => r.member)), () => 'locked');
    const open = await f.read(() => Number((f.db.get("SELECT count(*) AS n FROM holds WHERE lock = 'jobs' AND ended_at IS NULL") as { n: number }).n), () => 'locked');
    return { integrity, keys, open };
  } finally {
    f.close();
  }
}

/** Starts the writer child; resolves once it has committed, with what it reports committed as it goes. */
async function startWriter(dir: string, first: number) {
  const child = killOnExit(spawn(process.execPath, [WRITER, dir, String(first)], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const lastCommitted = () => {
    const all = [...out.matchAll(/^committed (\d+)$/gm)];
    return all.length ? Number(all.at(-1)![1]) : first - 1;
  };
  // Once its first transaction committed: each round has something to lose.
  const deadline = Date.now() + 15_000;
  while (lastCommitted() < first) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the writer did not start: ${out} ${err}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return { child, lastCommitted, output: () => `${out.slice(-300)} ${err}` };
}

describe('the recorded history: a writer killed with SIGKILL while it writes', () => {
  test('every transaction it reported committed is there, the file is intact, and the next writer starts at once', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'locklens-kill-'));
    try {
      let next = 0;
      let stale = 0;
      let hot = 0;
      for (let round = 0; round < 8; round++) {
        const writer = await startWriter(dir, next);
        // A random moment: the writer spends nearly all its time inside transactions (each one syncs twice).
        await new Promise((r) => setTimeout(r, Math.random() * 400));
        // Read before the kill: the last commit reported before it, whatever the pipe still holds.
        await stopProcess(writer.child, 'SIGKILL');
        const committed = writer.lastCommitted();
        assert.ok(committed >= next, `round ${round}: the writer committed something (${committed - next + 1} holds): ${writer.output()}`);
        if (existsSync(lockDirOf(historyFile(dir)))) stale++;
        if (existsSync(`${historyFile(dir)}-journal`)) hot++;

        const started = Date.now();
        const recorder = await HistoryRecorder.open(dir);
        assert.ok(Date.now() - started < 2_000, `round ${round}: the next writer opened in ${Date.now() - started} ms, despite the lock left behind`);
        await recorder.close();
        const { integrity, keys, open } = await inspect(dir);
        assert.equal(integrity, 'ok', `round ${round}`);
        const last = Math.max(...[...keys].map((k) => Number(k.slice(1))));
        const missing = [];
        for (let i = 0; i <= last; i++) if (!keys.has(`k${i}`)) missing.push(i);
        assert.deepEqual(missing, [], `round ${round}: every hold reported committed is there, and nothing is missing before the last`);
        assert.ok(last >= committed, `round ${round}: k${committed} reported committed, k${last} the last there`);
        // The writer's transactions record holds with their ends: nothing of one that did not commit shows.
        assert.equal(open, 0, `round ${round}: a hold without its end, from a transaction that did not commit`);
        next = last + 1;
      }
      t.diagnostic(`${next} holds written over 8 kills; ${stale} left the lock directory, ${hot} a hot journal`);
      // The kills landed inside transactions: the case the stale lock handling exists for.
      assert.ok(stale > 0, `a lock directory was left behind by ${stale} of 8 kills (${hot} with a hot journal)`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Mounts a tmpfs of `size` at a new directory; undefined (with why) when this system refuses. */
function mountTmpfs(size: string): { dir: string; unmount: () => void } | string {
  const dir = mkdtempSync(join(tmpdir(), 'locklens-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    return `mount -t tmpfs refused (${String((e as { stderr?: Buffer }).stderr ?? e).trim()}): the full-disk test needs root or CAP_SYS_ADMIN`;
  }
  return {
    dir,
    unmount: () => {
      execFileSync('umount', [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('the recorded history: its disk full', () => {
  test('a write that finds the disk full commits nothing and loses nothing committed; the queue is bounded; writes resume once there is room', async (t) => {
    const mount = mountTmpfs('512k');
    if (typeof mount === 'string') return t.skip(mount);
    const logs: string[] = [];
    let recorder: HistoryRecorder | undefined;
    try {
      const dir = join(mount.dir, 'data');
      mkdirSync(dir);
      // Room taken by something else on the disk, freed later.
      const filler = join(mount.dir, 'filler');
      writeFileSync(filler, Buffer.alloc(256 * 1024));
      const maxPending = 200;
      recorder = await HistoryRecorder.open(dir, { maxPending, log: (level, msg) => logs.push(`${level} ${msg}`) });
      const jobs = eventsOf('prod', 'jobs');
      const owner = 'o'.repeat(200);
      let i = 0;
      let committedKeys = 0;
      while (await recorder.flush()) {
        committedKeys = i;
        for (const end = i + 50; i < end; i++) recorder.record(jobs.holdStarted(`k${i}`, Date.now(), { owner }), 'postgres');
        assert.ok(i < 100_000, 'the disk never filled');
      }
      assert.match(recorder.status.failing!, /disk I\/O error|database or disk is full/);
      assert.ok(logs.some((l) => /^warn recorded history: a write failed; its events stay queued/.test(l)), logs.join('\n'));
      const before = await inspect(dir);
      assert.equal(before.integrity, 'ok');
      assert.equal(before.keys.size, committedKeys, 'what was committed before the disk filled, and nothing of the failed write');

      // Still full: the queue keeps the newest, dropping the oldest and saying so.
      for (let end = i + 3 * maxPending; i < end; i++) recorder.record(jobs.holdStarted(`k${i}`, Date.now(), { owner }), 'postgres');
      assert.equal(await recorder.flush(), false);
      assert.ok(recorder.status.pending <= maxPending, `${recorder.status.pending} queued`);
      assert.ok(recorder.status.dropped >= 2 * maxPending, `${recorder.status.dropped} dropped`);
      assert.ok(logs.some((l) => /^error recorded history: writes keep failing and the queue is full; dropping the oldest events/.test(l)), logs.join('\n'));
      assert.equal((await inspect(dir)).keys.size, committedKeys, 'reading a full disk is fine, and changed nothing');

      rmSync(filler);
      const queued = recorder.status.pending;
      assert.equal(await recorder.flush(), true, `writes resumed: ${recorder.status.failing}`);
      assert.ok(logs.some((l) => /^info recorded history: writes resumed/.test(l)), logs.join('\n'));
      await recorder.close();
      const after = await inspect(dir);
      assert.equal(after.integrity, 'ok');
      assert.equal(after.keys.size, committedKeys + queued, 'the committed ones and the queued ones, no more');
      assert.ok(after.keys.has(`k${i - 1}`), 'the newest queued event is written');
      assert.ok(statSync(historyFile(dir)).size < 512 * 1024);
      const reader = await HistoryStore.openReader(dir);
      assert.equal((await reader.holds({ lock: 'jobs', limit: 1 }))[0].key, `k${i - 1}`);
      reader.close();
    } finally {
      await recorder?.close();
      mount.unmount();
    }
  });
});

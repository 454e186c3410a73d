import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { historyFile } from '../../src/core/recording/dataDir';
import { HistoryStore } from '../../src/core/recording/historyStore';
import { HistoryRecorder } from '../../src/core/recording/recorder';
import { eventsOf } from '../harness/recordedEvents';

const T0 = Date.UTC(2025, 0, 1);
const HOUR = 3600_000;
const jobs = eventsOf('prod', 'jobs');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'locklens-retention-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function withStore<T>(fn: (store: HistoryStore) => T | Promise<T>): Promise<T> {
  const store = await HistoryStore.openWriter(dir);
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}

test('by age: what ended before maxAge goes, holds still open stay whatever their age; so do force releases of the span', async () => {
  const r = await HistoryRecorder.open(dir);
  r.record(jobs.holdStarted('old', T0), 'redis');
  r.record(jobs.holdEnded('old', T0 + 1000, 'released', 1000), 'redis');
  r.record(jobs.holdStarted('recent', T0 + HOUR), 'redis');
  r.record(jobs.holdEnded('recent', T0 + 1.5 * HOUR, 'expired', 0.5 * HOUR), 'redis');
  r.record(jobs.holdStarted('open', T0), 'redis');
  r.record(jobs.waitStarted('w-old', T0), 'redis');
  r.record(jobs.waitEnded('w-old', T0 + 10, false, 10), 'redis');
  await r.close();
  const result = await withStore((s) => s.prune({ maxAgeMs: HOUR, maxBytes: 1024 ** 3 }, T0 + 2 * HOUR));
  assert.equal(result.deletedByAge, 2, 'the old hold and the old wait');
  assert.equal(result.deletedBySize, 0);
  const left = await withStore((s) => s.holds({ lock: 'jobs' }));
  assert.deepEqual(left.map((h) => h.key), ['open', 'recent']);
});

test('by size: the oldest rows go until the file is under maxBytes, and the file shrinks (incremental vacuum)', async () => {
  const r = await HistoryRecorder.open(dir, { bounds: { maxAgeMs: 1e12, maxBytes: 1024 ** 3 } });
  const owner = 'x'.repeat(300);
  const count = 12_000;
  for (let i = 0; i < count; i++) {
    r.record(jobs.holdStarted(`k${i}`, T0 + i * 1000, { owner }), 'etcd');
    r.record(jobs.holdEnded(`k${i}`, T0 + i * 1000 + 500, 'released', 500, { owner }), 'etcd');
  }
  await r.close();
  const before = statSync(historyFile(dir)).size;
  assert.ok(before > 4 * 1024 ** 2, `${before} bytes written`);
  const maxBytes = 1024 ** 2;
  const result = await withStore((s) => s.prune({ maxAgeMs: 1e12, maxBytes }, T0 + count * 1000));
  const after = statSync(historyFile(dir)).size;
  assert.equal(result.bytes, after);
  assert.ok(after <= maxBytes, `${after} bytes left, at most ${maxBytes}`);
  assert.ok(after > maxBytes / 2, `${after} bytes: not much more deleted than needed`);
  const left = await withStore((s) => s.holds({ lock: 'jobs' }));
  assert.equal(left.length, count - result.deletedBySize);
  // The newest are kept, without a gap: the oldest went first.
  assert.equal(left.at(-1)!.key, `k${count - 1}`);
  assert.equal(left[0].key, `k${count - left.length}`);
  // Writes go on in the file kept.
  const again = await HistoryRecorder.open(dir, { bounds: { maxAgeMs: 1e12, maxBytes } });
  again.record(jobs.holdStarted('after', T0 + count * 1000), 'etcd');
  await again.close();
  assert.equal((await withStore((s) => s.holds({ lock: 'jobs', limit: 1 })))[0].key, 'after');
});

test('the recorder applies the bounds as soon as a write finds the file over maxBytes', async () => {
  const maxBytes = 256 * 1024;
  const r = await HistoryRecorder.open(dir, { bounds: { maxAgeMs: 1e12, maxBytes } });
  const owner = 'y'.repeat(300);
  for (let i = 0; i < 3000; i++) {
    r.record(jobs.holdStarted(`k${i}`, T0 + i, { owner }), 'etcd');
    if (i % 500 === 499) await r.flush();
  }
  await r.close();
  assert.ok(statSync(historyFile(dir)).size <= maxBytes * 1.5, `${statSync(historyFile(dir)).size} bytes: pruned while writing`);
});

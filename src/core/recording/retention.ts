/**
 * The recorded history's bounds: rows older than `maxAgeMs` go, and while the file is above `maxBytes` the oldest
 * rows go, then the freed pages are given back to the file system. Every step is its own short transaction (a chunk
 * of rows, a few MB of pages), so readers and unlock's notes are never kept out for long and the lock never looks
 * stale (sqliteFile.ts).
 *
 * Shrinking uses incremental vacuum (the file is created with auto_vacuum = INCREMENTAL): it moves pages from the end
 * into free ones and truncates, a bounded number of pages per step. VACUUM would rewrite the whole database into a
 * copy first: as much free disk again as the file (on a disk that is full, none) and one transaction as long as the
 * copy, holding the lock for seconds on a large file.
 */
import type { SqliteFile } from './sqliteFile';

export interface HistoryBounds {
  /** Rows that ended longer ago than this are deleted. */
  readonly maxAgeMs: number;
  /** The file is kept under this size: the oldest rows are deleted first. */
  readonly maxBytes: number;
}

export const DEFAULT_BOUNDS: HistoryBounds = { maxAgeMs: 30 * 24 * 3600_000, maxBytes: 1024 ** 3 };

/** Rows deleted in one transaction. */
const CHUNK_ROWS = 2_000;
/** Pages given back in one transaction: 8 MB at the default page size. */
const CHUNK_PAGES = 2_048;
/** Pruning for size aims this far under the bound, so that it does not run again at every write. */
const SIZE_TARGET = 0.9;

export interface PruneResult {
  readonly deletedByAge: number;
  readonly deletedBySize: number;
  readonly bytes: number;
}

/** Pages in use (not free) times the page size: what the file needs, whatever it has not given back yet. */
export function usedBytes(f: SqliteFile): number {
  const pages = Number((f.db.get('PRAGMA page_count') as { page_count: number }).page_count);
  const free = Number((f.db.get('PRAGMA freelist_count') as { freelist_count: number }).freelist_count);
  return (pages - free) * pageSize(f);
}

export function fileBytes(f: SqliteFile): number {
  return Number((f.db.get('PRAGMA page_count') as { page_count: number }).page_count) * pageSize(f);
}

function pageSize(f: SqliteFile): number {
  return Number((f.db.get('PRAGMA page_size') as { page_size: number }).page_size);
}

/** Applies the bounds now. Throws what SQLite throws (BUSY, a full disk): the recorder tries again later. */
export function prune(f: SqliteFile, bounds: HistoryBounds, now: number): PruneResult {
  const cutoff = now - bounds.maxAgeMs;
  const deletedByAge =
    deleteChunked(f, 'holds', 'ended_at < :t', cutoff) + deleteChunked(f, 'waits', 'ended_at < :t', cutoff) + deleteChunked(f, 'force_releases', 'at < :t', cutoff);
  let deletedBySize = 0;
  // Each round deletes the oldest rows in the share the file is over its target: rows are of similar sizes.
  for (let round = 0; round < 20; round++) {
    const used = f.write(() => usedBytes(f));
    if (used <= bounds.maxBytes) break;
    const share = (used - bounds.maxBytes * SIZE_TARGET) / used;
    const before = f.write(() => oldestToKeep(f, share));
    if (before === undefined) break;
    const deleted =
      deleteChunked(f, 'holds', 'started_at < :t', before) + deleteChunked(f, 'waits', 'started_at < :t', before) + deleteChunked(f, 'force_releases', 'at < :t', before);
    deletedBySize += deleted;
    if (deleted === 0) break;
  }
  giveBackFreePages(f);
  return { deletedByAge, deletedBySize, bytes: f.write(() => fileBytes(f)) };
}

/** The start time from which rows are kept so that about `share` of the holds and waits are deleted. */
function oldestToKeep(f: SqliteFile, share: number): number | undefined {
  const rows = Number((f.db.get('SELECT (SELECT count(*) FROM holds) + (SELECT count(*) FROM waits) AS n') as { n: number }).n);
  if (rows === 0) return undefined;
  const skip = Math.min(rows - 1, Math.max(1, Math.ceil(rows * share)));
  const row = f.db.get('SELECT started_at AS t FROM (SELECT started_at FROM holds UNION ALL SELECT started_at FROM waits) ORDER BY started_at LIMIT 1 OFFSET :skip', {
    ':skip': skip,
  }) as { t: number } | null;
  // Past every row's start when the share is all of them: at least the oldest goes.
  return row === null ? undefined : Number(row.t) + (skip === rows - 1 ? 1 : 0);
}

function deleteChunked(f: SqliteFile, table: string, where: string, t: number): number {
  let total = 0;
  for (;;) {
    const n = f.write(() => f.statement(`DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE ${where} LIMIT ${CHUNK_ROWS})`).run({ ':t': t }).changes);
    total += n;
    if (n < CHUNK_ROWS) return total;
  }
}

function giveBackFreePages(f: SqliteFile): void {
  for (;;) {
    const free = f.write(() => {
      f.db.exec(`PRAGMA incremental_vacuum(${CHUNK_PAGES})`);
      return Number((f.db.get('PRAGMA freelist_count') as { freelist_count: number }).freelist_count);
    });
    if (free === 0) return;
  }
}

/**
 * The lock node-sqlite3-wasm takes on a database: the directory `<file>.lock`, created (mkdir is atomic on every file
 * system) at the first statement of any transaction, reads included, and removed at its end. One process at a time,
 * readers as well as writers. A process killed inside a transaction leaves the directory behind, and every later
 * transaction of every process is BUSY until it goes.
 */
import { rmdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Far above the longest transaction we run (a batch of recorded rows, a retention chunk: milliseconds to a few hundred
 * ms), so a lock directory this old belongs to a process killed inside a transaction.
 */
export const STALE_LOCK_MS = 10_000;

export const lockDirOf = (file: string) => `${resolve(file)}.lock`;

/** How long the lock directory has existed; undefined when nobody holds the lock. */
export function lockAgeMs(file: string, now = Date.now()): number | undefined {
  try {
    return Math.max(0, now - statSync(lockDirOf(file)).mtimeMs);
  } catch {
    return undefined;
  }
}

/**
 * Removes the lock directory when it is older than `olderThanMs` (0: whatever its age, for a recorder starting while
 * it owns the data directory). Safe because the journal is a rollback journal with synchronous=FULL: the dead
 * process's transaction is either committed (its journal deleted) or not (its journal is hot), and the next
 * transaction, now that no lock says someone is inside one, rolls a hot journal back before reading anything
 * (hotJournal.ts). The one case it would be wrong, a live transaction older than the bound, never happens: ours last
 * milliseconds, and the readers' are single bounded queries.
 */
export function clearStaleLock(file: string, olderThanMs: number, now = Date.now()): boolean {
  const age = lockAgeMs(file, now);
  if (age === undefined || age < olderThanMs) return false;
  try {
    rmdirSync(lockDirOf(file));
    return true;
  } catch {
    return false;
  }
}

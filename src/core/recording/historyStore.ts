/**
 * The recorded history of a data directory: `history.db`, an SQLite file (sqliteFile.ts says how its locking works).
 * One writer records into it (HistoryRecorder, in `locklens serve`); readers (`locklens history --data`, the Lock
 * History view) read it and `locklens unlock --force --data` adds its note, each in short transactions of its own.
 */
import { accessSync, constants, existsSync } from 'node:fs';
import { LockLensError } from '../errors';
import { sleep } from '../sleep';
import { historyFile, writerOf } from './dataDir';
import type { ForceReleaseNote, HoldQuery, MatchedForceRelease, RecordedHold } from './recordedHold';
import { prune, usedBytes, fileBytes, type HistoryBounds, type PruneResult } from './retention';
import { applyPending, insertForceRelease, matchForceReleases, selectHolds, selectMatchedForceReleases, type Pending } from './rows';
import { checkReadable, ensureSchema } from './schema';
import { clearStaleLock, lockAgeMs, STALE_LOCK_MS } from './lockDir';
import { isBusy, SqliteFile } from './sqliteFile';

/** How long opening for a write waits for another process's transaction (a reader's, unlock's note) to end. */
const WRITE_PATIENCE_MS = 3_000;

export class HistoryStore {
  private constructor(
    readonly dir: string,
    private file: SqliteFile,
  ) {}

  /**
   * Opens `dir`'s history for the recorder, which owns the directory (dataDir.claimDataDir): a lock directory found
   * now is a killed process's (nothing else runs transactions for seconds), so it is cleared at once. Creates the file
   * and its tables where missing.
   */
  static async openWriter(dir: string): Promise<HistoryStore> {
    const path = historyFile(dir);
    const store = new HistoryStore(dir, SqliteFile.open(path, true));
    try {
      await store.patiently(() => ensureSchema(store.file), { clearAnyLock: true });
      return store;
    } catch (e) {
      store.close();
      throw e;
    }
  }

  /** Opens `dir`'s history to read it; a directory without one is an error that says so. */
  static async openReader(dir: string): Promise<HistoryStore> {
    const path = historyFile(dir);
    if (!existsSync(path)) {
      throw new LockLensError('INVALID_ARGUMENT', `${dir} holds no recorded history (no ${path}): locklens serve records into the data directory its config names`);
    }
    mayLock(dir, path);
    const store = new HistoryStore(dir, SqliteFile.open(path, false));
    try {
      await store.file.read(() => checkReadable(store.file), () => store.lockHolder());
      return store;
    } catch (e) {
      store.close();
      throw e;
    }
  }

  /**
   * Adds a force release to `dir`'s history (creating the file if serve has not yet), and marks the hold it ended if
   * that end is recorded already.
   */
  static async noteForceRelease(dir: string, note: ForceReleaseNote): Promise<void> {
    if (existsSync(historyFile(dir))) mayLock(dir, historyFile(dir));
    const store = new HistoryStore(dir, SqliteFile.open(historyFile(dir), true));
    try {
      await store.patiently(() => ensureSchema(store.file));
      await store.patiently(() =>
        store.file.write(() => {
          insertForceRelease(store.file, note);
          matchForceReleases(store.file);
        }),
      );
    } finally {
      store.close();
    }
  }

  get path(): string {
    return this.file.file;
  }

  /**
   * Writes `pending` in one transaction (the recorder's batch); returns the file's size. Throws BUSY, a full disk, …
   * as SQLite does.
   */
  write(pending: readonly Pending[], run: number): number {
    return this.file.write(() => {
      for (const p of pending) applyPending(this.file, p, run);
      matchForceReleases(this.file);
      return fileBytes(this.file);
    });
  }

  /** The force releases noted from `since` on that were matched with the hold they ended (by whichever process). */
  matchedForceReleases(since: number): MatchedForceRelease[] {
    return this.file.write(() => selectMatchedForceReleases(this.file, since));
  }

  /** A new recorder run's number, kept in the file (rows record the last run that saw them open). */
  nextRun(): number {
    return this.file.write(() => {
      this.file.db.run("INSERT INTO meta (key, value) VALUES ('run', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1");
      return Number((this.file.db.get("SELECT value FROM meta WHERE key = 'run'") as { value: number }).value);
    });
  }

  async holds(query: HoldQuery): Promise<RecordedHold[]> {
    return this.file.read(() => selectHolds(this.file, query), () => this.lockHolder());
  }

  prune(bounds: HistoryBounds, now: number): PruneResult {
    return prune(this.file, bounds, now);
  }

  /** Bytes the rows need (without free pages not given back yet). */
  usedBytes(): number {
    return this.file.write(() => usedBytes(this.file));
  }

  fileBytes(): number {
    return this.file.write(() => fileBytes(this.file));
  }

  /**
   * Closes and opens the file again: after a failed commit (a full disk) SQLite may keep the connection in an error
   * state; a new one starts clean, and rolls back the journal the failure left, if any, before it reads.
   */
  reopen(): void {
    this.file.close();
    this.file = SqliteFile.open(this.file.file, false);
  }

  /** A lock directory older than any transaction of ours is a killed process's: cleared (see clearStaleLock). */
  clearStaleLock(now = Date.now()): boolean {
    return clearStaleLock(this.file.file, STALE_LOCK_MS, now);
  }

  /** Runs `fn`, retrying while another process's transaction holds the lock; a stale lock is cleared meanwhile. */
  private async patiently<T>(fn: () => T, options: { readonly clearAnyLock?: boolean } = {}): Promise<T> {
    if (options.clearAnyLock) clearStaleLock(this.file.file, 0);
    const deadline = Date.now() + WRITE_PATIENCE_MS;
    for (;;) {
      try {
        return fn();
      } catch (e) {
        if (!isBusy(e)) throw e;
        this.clearStaleLock();
        if (Date.now() > deadline) throw new LockLensError('TIMEOUT', `${this.path} stayed locked for ${WRITE_PATIENCE_MS / 1000} s: ${this.lockHolder()}`);
        await sleep(50);
      }
    }
  }

  /** Who may hold the lock, for a reader that waited too long. */
  lockHolder(now = Date.now()): string {
    const age = lockAgeMs(this.path, now);
    const writer = writerOf(this.dir);
    const recorder = writer ? `locklens serve (pid ${writer.pid}) records here${writer.alive ? '' : ' but is not running'}` : 'no locklens serve records here';
    if (age === undefined) return `${recorder}; the lock was released meanwhile, try again`;
    if (age < STALE_LOCK_MS) return `${recorder}; a transaction has held its lock for ${(age / 1000).toFixed(1)} s`;
    return `${recorder}; its lock ${this.path}.lock was left ${Math.round(age / 1000)} s ago by a process killed inside a transaction: locklens serve clears it when it runs${writer?.alive ? '' : '; or remove that directory while nothing else uses the file'}`;
  }

  close(): void {
    this.file.close();
  }
}

/**
 * Reading takes the lock too, and so needs to write where the file is: refused up front with what to do, where
 * SQLite would only say it could not open the database.
 */
function mayLock(dir: string, path: string): void {
  try {
    accessSync(dir, constants.W_OK);
    accessSync(path, constants.R_OK | constants.W_OK);
  } catch {
    throw new LockLensError(
      'PERMISSION',
      `${dir}: reading the recorded history needs write access to this directory and ${path} (SQLite locks the file by creating ${path}.lock beside it, and rolls back what a killed writer left): run as the user locklens serve runs as, or give your group write access to both`,
    );
  }
}

/**
 * One SQLite file through node-sqlite3-wasm, and what its locking means for us (lockDir.ts): transactions are short
 * (batches and retention chunks are bounded), readers retry BUSY for a while and then say what holds the lock, the
 * recorder clears a lock directory older than STALE_LOCK_MS, and before each transaction a dead writer's journal is
 * rolled back (hotJournal.ts), which this VFS leaves to us.
 */
import type { Database, Statement } from 'node-sqlite3-wasm';
import { LockLensError } from '../errors';
import { sleep } from '../sleep';
import { recoverHotJournal } from './hotJournal';

/**
 * node-sqlite3-wasm, loaded on first use: its WebAssembly (1.2 MB) is compiled then, not when the CLI or the extension
 * starts.
 */
function sqlite(): typeof import('node-sqlite3-wasm') {
  return require('node-sqlite3-wasm') as typeof import('node-sqlite3-wasm');
}

/** How long a reader retries a locked database before it says who holds it. */
const READ_PATIENCE_MS = 3_000;

export const isBusy = (e: unknown) => e instanceof Error && /database is locked|database table is locked/.test(e.message);

/**
 * An open database with its prepared statements kept (preparing costs more than running the small statements we
 * repeat thousands of times).
 */
export class SqliteFile {
  private readonly statements = new Map<string, Statement>();
  private configured = false;

  private constructor(
    readonly file: string,
    readonly db: Database,
  ) {}

  /** `create`: make the file when it does not exist (else a missing file is an error). */
  static open(file: string, create: boolean): SqliteFile {
    const { Database } = sqlite();
    return new SqliteFile(file, new Database(file, { fileMustExist: !create }));
  }

  statement(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }

  /** Runs `fn` in one write transaction (taken at BEGIN), rolled back if it throws. BUSY is thrown as it is. */
  write<T>(fn: () => T): T {
    if (!this.configured) {
      // Set at the first write, not at open: any statement reads the schema, so it takes the lock and may be BUSY.
      // FULL: each commit syncs the journal and the database, so a power cut keeps the last committed transaction
      // too. The journal stays the rollback journal (DELETE): WAL needs shared memory that this VFS does not offer.
      this.db.exec('PRAGMA synchronous = FULL');
      this.configured = true;
    }
    recoverHotJournal(this.file);
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (e) {
      this.rollback();
      throw e;
    }
  }

  /** Runs `fn` in one read transaction, retrying while the database is locked; then says who holds the lock. */
  async read<T>(fn: () => T, describeHolder: () => string): Promise<T> {
    const deadline = Date.now() + READ_PATIENCE_MS;
    for (;;) {
      try {
        recoverHotJournal(this.file);
        this.db.exec('BEGIN');
        try {
          return fn();
        } finally {
          this.rollback();
        }
      } catch (e) {
        if (!isBusy(e)) throw e;
        if (Date.now() > deadline) throw new LockLensError('TIMEOUT', `${this.file} stayed locked for ${READ_PATIENCE_MS / 1000} s: ${describeHolder()}`);
        await sleep(50);
      }
    }
  }

  /** Ends an open transaction; a failed commit may have ended it already, and a rollback that fails leaves a hot journal the next open rolls back. */
  private rollback(): void {
    try {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
    } catch {
      // See above: the file is safe either way.
    }
  }

  close(): void {
    for (const s of this.statements.values()) {
      try {
        s.finalize();
      } catch {
        // A statement of a database in error is finalized with it.
      }
    }
    this.statements.clear();
    if (this.db.isOpen) this.db.close();
  }
}

/**
 * Records lock events into a data directory's history (historyStore.ts): `locklens serve`'s one writer. Events are
 * queued in memory and written in one transaction per burst, at most every FLUSH_MS. A write that fails (the disk full,
 * an I/O error, another process's transaction) leaves what was committed as it was (a rollback journal with
 * synchronous=FULL) and its rows queued: they are written again later, and while writes keep failing the queue is
 * bounded, its oldest events dropped and counted.
 */
import type { LockEvent } from '../lockEventTypes';
import { errorMessage } from '../errors';
import { claimDataDir } from './dataDir';
import { HistoryStore } from './historyStore';
import { DEFAULT_BOUNDS, type HistoryBounds } from './retention';
import type { MatchedForceRelease } from './recordedHold';
import type { Pending } from './rows';
import { isBusy } from './sqliteFile';

export type RecorderLog = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

export interface RecorderOptions {
  readonly bounds?: HistoryBounds;
  readonly log?: RecorderLog;
  /** Events kept in memory while writes fail; beyond it the oldest are dropped. */
  readonly maxPending?: number;
  /** How often the bounds are applied (they are also whenever a write finds the file over maxBytes). */
  readonly pruneIntervalMs?: number;
  readonly now?: () => number;
  /**
   * Hears each LockLens force release noted while it runs, once matched with the hold it ended: `locklens unlock
   * --force --data DIR` notes it from another process, so the file is looked at after each write and every
   * FORCE_RELEASE_CHECK_MS.
   */
  readonly onForceReleases?: (found: readonly MatchedForceRelease[]) => void;
}

const FORCE_RELEASE_CHECK_MS = 2_000;

/**
 * One transaction per burst, at most this often. Each commit syncs the journal and the file, and costs about a
 * millisecond of CPU besides its events: every 100 ms, that was about half of what recording cost serve's main thread
 * under load (docs/BENCHMARKS.md, serve, the twelfth round). A kill loses what was queued since the last commit, a
 * second at most; SIGTERM writes it first.
 */
export const FLUSH_MS = 1000;
/**
 * Events in one transaction at most (about 100 ms of writing: the API is synchronous, so a transaction holds the event
 * loop): a longer queue, after a failure, is written in several, back to back.
 */
const MAX_BATCH = 1_000;
const DEFAULT_MAX_PENDING = 50_000;
const MAX_RETRY_MS = 10_000;

export interface RecorderStatus {
  /** Events and notes written since it opened. */
  readonly committed: number;
  readonly pending: number;
  /** Dropped from a full queue since it opened. */
  readonly dropped: number;
  /** Why the last write failed, while writes fail. */
  readonly failing: string | undefined;
}

export class HistoryRecorder {
  private pending: Pending[] = [];
  private committed = 0;
  private dropped = 0;
  private failures = 0;
  private failing: string | undefined;
  /** The connection could not be opened again after a failed commit: it is before the next write. */
  private broken = false;
  /** The last write failed for want of the disk (not another process's lock): retried with a growing pause. */
  private backingOff = false;
  private lastWrite = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly pruneTimer: NodeJS.Timeout;
  private closed = false;
  private readonly bounds: HistoryBounds;
  private readonly log: RecorderLog;
  private readonly maxPending: number;
  private readonly now: () => number;
  private readonly openedAt: number;
  /** The force releases already told to onForceReleases. */
  private readonly toldForceReleases = new Set<number>();
  private readonly forceReleaseTimer: NodeJS.Timeout | undefined;
  private readonly onForceReleases: RecorderOptions['onForceReleases'];

  private constructor(
    private readonly store: HistoryStore,
    private readonly run: number,
    private readonly release: () => void,
    options: RecorderOptions,
  ) {
    this.bounds = options.bounds ?? DEFAULT_BOUNDS;
    this.log = options.log ?? (() => undefined);
    this.maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
    this.now = options.now ?? Date.now;
    this.pruneTimer = setInterval(() => this.prune(), options.pruneIntervalMs ?? 60_000);
    this.pruneTimer.unref();
    this.openedAt = this.now();
    this.onForceReleases = options.onForceReleases;
    if (this.onForceReleases) {
      this.forceReleaseTimer = setInterval(() => this.checkForceReleases(), FORCE_RELEASE_CHECK_MS);
      this.forceReleaseTimer.unref();
    }
  }

  private checkForceReleases(): void {
    const told = this.onForceReleases;
    if (!told || this.closed || this.broken || this.backingOff) return;
    let found: MatchedForceRelease[];
    try {
      found = this.store.matchedForceReleases(this.openedAt).filter((m) => !this.toldForceReleases.has(m.id));
    } catch {
      return; // busy, or failing: looked at again later
    }
    for (const m of found) this.toldForceReleases.add(m.id);
    if (found.length) told(found);
  }

  /**
   * Takes `dir` (created if missing) as this process's: refused while another recorder runs there (dataDir.ts).
   * Applies the bounds once before it returns.
   */
  static async open(dir: string, options: RecorderOptions = {}): Promise<HistoryRecorder> {
    const release = claimDataDir(dir);
    let store: HistoryStore | undefined;
    try {
      store = await HistoryStore.openWriter(dir);
      const recorder = new HistoryRecorder(store, store.nextRun(), release, options);
      recorder.prune();
      return recorder;
    } catch (e) {
      store?.close();
      release();
      throw e;
    }
  }

  get path(): string {
    return this.store.path;
  }

  get status(): RecorderStatus {
    return { committed: this.committed, pending: this.pending.length, dropped: this.dropped, failing: this.failing };
  }

  /** Queues an event of a connection of the store `store` (its StoreKind). */
  record(event: LockEvent, store: string): void {
    this.enqueue({ type: 'event', store, event });
  }

  /**
   * Says that `connection`'s watch has read the store (its first full read, or one after a reconnect): holds and waits
   * an earlier run left open that this run has not found again ended while nobody watched, found gone `at`.
   */
  caughtUp(connection: string, at = this.now()): void {
    this.enqueue({ type: 'caughtUp', connection, at });
  }

  /** Writes what is queued now, as far as the store lets it; resolves true when nothing is left queued. */
  async flush(): Promise<boolean> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.pending.length && this.writeBatch());
    if (this.pending.length && !this.closed) this.schedule(this.retryDelay());
    return this.pending.length === 0;
  }

  /** Writes what is queued (once), and gives up the data directory. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.pruneTimer);
    clearInterval(this.forceReleaseTimer);
    if (this.pending.length) this.log('error', 'recorded history: events not written at exit', { events: this.pending.length, reason: this.failing });
    this.store.close();
    this.release();
  }

  private enqueue(p: Pending): void {
    if (this.closed) return;
    this.pending.push(p);
    if (this.pending.length > this.maxPending) {
      // A tenth at a time, so a queue that stays full does not copy itself at every event.
      const drop = Math.max(1, Math.ceil(this.maxPending / 10));
      this.pending.splice(0, drop);
      if (this.dropped === 0) this.log('error', 'recorded history: writes keep failing and the queue is full; dropping the oldest events', { reason: this.failing, queued: this.maxPending });
      this.dropped += drop;
    }
    this.schedule(Math.max(0, this.lastWrite + FLUSH_MS - this.now()));
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, delayMs);
  }

  /** One transaction of at most MAX_BATCH events; false when it failed (the events stay queued). */
  private writeBatch(): boolean {
    this.lastWrite = this.now();
    const batch = this.pending.slice(0, MAX_BATCH);
    try {
      if (this.broken) {
        this.store.reopen();
        this.broken = false;
      }
      const bytes = this.store.write(batch, this.run);
      this.pending.splice(0, batch.length);
      this.committed += batch.length;
      if (this.failing !== undefined) this.log('info', 'recorded history: writes resumed', { failedTries: this.failures, dropped: this.dropped });
      this.failing = undefined;
      this.failures = 0;
      this.backingOff = false;
      if (bytes > this.bounds.maxBytes) this.prune();
      this.checkForceReleases();
      return true;
    } catch (e) {
      this.failures++;
      if (isBusy(e)) {
        // Another process's transaction, or a killed one's lock: cleared once it is older than any transaction.
        this.store.clearStaleLock();
      } else {
        this.backingOff = true;
        this.reopen();
      }
      if (this.failing === undefined) this.log('warn', 'recorded history: a write failed; its events stay queued and are written again', { reason: errorMessage(e), queued: this.pending.length });
      this.failing = errorMessage(e);
      return false;
    }
  }

  /**
   * Opens the file again after a write that failed other than BUSY: SQLite may keep the connection in an error state,
   * and holding its lock, after a failed commit (a full disk). Closing releases the lock, so readers read meanwhile;
   * the next connection rolls back what the failure left in the journal before it reads.
   */
  private reopen(): void {
    try {
      this.store.reopen();
    } catch {
      // Tried again before the next write.
      this.broken = true;
    }
  }

  private retryDelay(): number {
    return this.backingOff ? Math.min(MAX_RETRY_MS, 500 * 2 ** Math.min(this.failures, 5)) : FLUSH_MS;
  }

  private prune(): void {
    if (this.closed || this.backingOff) return;
    try {
      const r = this.store.prune(this.bounds, this.now());
      if (r.deletedByAge || r.deletedBySize) this.log('info', 'recorded history: pruned', { ...r });
    } catch (e) {
      this.log('warn', 'recorded history: applying its bounds failed; tried again later', { reason: errorMessage(e) });
    }
  }
}

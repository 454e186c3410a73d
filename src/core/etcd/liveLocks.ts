import type { IEvent } from 'etcd3';
import { call, type EtcdConnection } from './connect';
import type { LiveStatus } from '../backend';
import { Emitter, type Disposable } from '../emitter';
import { LockLensError, errorMessage } from '../errors';
import { hasPrefix, normalizePrefixes } from '../keys';
import { prefixRange } from './keyRange';
import { readPrefix, readPrefixes, type PrefixRead } from './keyspace';
import { LockModel } from './lockModel';
import { type ChangeSet } from '../lockState';
import { toKeyRecord, type RawKeyValue } from './records';
import { sleep } from '../sleep';
import { WatchStream } from './watchStream';

export interface LiveLocksOptions {
  /** Views are told at most once per this interval; a quiet model tells them at once. */
  readonly minNotifyIntervalMs?: number;
  readonly maxBackoffMs?: number;
  /** Told of every resync and reconnect, for a log. */
  readonly log?: (message: string) => void;
}

interface Followed {
  readonly prefix: Buffer;
  /** The last reload or event applied: the model holds this prefix as of this revision, and events up to it are skipped. */
  applied: number;
  /**
   * The revision etcd confirmed this watch has delivered through (progress replies), never below `applied`. Kept apart
   * from `applied` on purpose: etcd before 3.4.24 can send a progress reply ahead of history a new watch is still
   * replaying (etcd-io/etcd#15220), so a progress reply must never cause events to be skipped.
   */
  confirmed: number;
  /**
   * Whether progress replies can be believed: the watch is known to be synced, because it started past the store's
   * revision at creation, or has applied an event at or after it. Before that, sync() reconciles with a read instead.
   */
  synced: boolean;
  watch?: WatchStream;
  live: boolean;
  lastError?: LockLensError;
}

/**
 * The lock model kept equal to etcd for a set of prefixes: one consistent read, then a watch per prefix from the
 * read revision + 1. After any stream failure it re-reads and reconciles before watching again (the read decides,
 * never an assumed resume point), and a compacted watch start triggers the same full resync. Changes reach views as
 * coalesced change sets: one per burst, at most one per `minNotifyIntervalMs`.
 */
export class LiveLocks implements Disposable {
  readonly model = new LockModel();
  private readonly followed: Followed[];
  private readonly changes = new Emitter<ChangeSet>();
  private readonly statusChanges = new Emitter<LiveStatus>();
  readonly onDidChange = this.changes.event;
  readonly onDidChangeStatus = this.statusChanges.event;
  private currentStatus: LiveStatus = { state: 'loading' };
  private disposed = false;
  private lastNotify = 0;
  private pendingNotify?: () => void;
  private progressWaiter?: () => void;
  private readonly minNotifyIntervalMs: number;

  constructor(
    private readonly conn: EtcdConnection,
    prefixes: readonly Uint8Array[],
    private readonly options: LiveLocksOptions = {},
  ) {
    this.followed = normalizePrefixes(prefixes).map((prefix) => ({ prefix, applied: 0, confirmed: 0, synced: false, live: false }));
    this.minNotifyIntervalMs = options.minNotifyIntervalMs ?? 100;
  }

  get status(): LiveStatus {
    return this.currentStatus;
  }

  get prefixes(): readonly Buffer[] {
    return this.followed.map((f) => f.prefix);
  }

  /** The revision through which every prefix is known to be applied. */
  get revision(): number {
    return Math.min(...this.followed.map((f) => f.confirmed));
  }

  /**
   * Loads every prefix at one revision, then follows changes in the background. Give `initial` (a readPrefixes
   * result for the same prefixes) to continue from a listing already made; if etcd has compacted past it since, the
   * watch says so and the model resyncs.
   */
  async start(initial?: PrefixRead): Promise<void> {
    const read = initial ?? (await readPrefixes(this.conn, this.prefixes));
    this.model.reload(() => true, read.records, read.revision);
    for (const f of this.followed) f.applied = f.confirmed = read.revision;
    this.notifyNow();
    for (const f of this.followed) void this.follow(f, false);
  }

  /**
   * Resolves once the model has caught up with etcd as of this call (a progress request on every watch). Views do not
   * need it; commands that act on what the user saw, and tests, do.
   */
  async sync(timeoutMs = 5000): Promise<number> {
    const target = Number((await call(this.conn.client.maintenance.status())).header.revision);
    const deadline = Date.now() + timeoutMs;
    while (this.revision < target) {
      if (this.disposed) throw new LockLensError('CLOSED', 'the live view was closed');
      if (Date.now() > deadline) throw new LockLensError('TIMEOUT', `the model did not catch up with revision ${target} in ${timeoutMs} ms`);
      for (const f of this.followed) if (f.live && !f.synced) await this.reconcile(f);
      const answered = new Promise<void>((resolve) => (this.progressWaiter = resolve));
      for (const f of this.followed) f.watch?.requestProgress();
      await Promise.race([answered, sleep(100)]);
      this.progressWaiter = undefined;
    }
    this.flushNow();
    return this.revision;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const f of this.followed) f.watch?.close();
    this.pendingNotify?.();
    this.setStatus({ state: 'closed' });
    this.changes.dispose();
    this.statusChanges.dispose();
  }

  private async follow(f: Followed, reload: boolean): Promise<void> {
    let backoff = 100;
    while (!this.disposed) {
      try {
        if (reload) {
          const read = await readPrefix(this.conn, f.prefix);
          if (this.disposed) return;
          if (read.revision < f.applied) this.options.log?.(`revision went back from ${f.applied} to ${read.revision}: etcd was restored or replaced`);
          this.model.reload((key) => hasPrefix(key, f.prefix), read.records, read.revision);
          // The read decides: after a restore or a wiped member, revisions can go backwards.
          f.applied = f.confirmed = read.revision;
          this.scheduleNotify();
        }
        const range = prefixRange(this.conn.toEtcd(f.prefix));
        f.watch = await WatchStream.open(
          this.conn,
          { key: range.key, rangeEnd: range.range_end, startRevision: f.applied + 1 },
          { onEvents: (events) => this.apply(f, events), onProgress: (revision) => this.progressed(f, revision) },
        );
        if (this.disposed) return f.watch.close();
        f.synced = f.watch.createdRevision < f.applied + 1;
        f.live = true;
        f.lastError = undefined;
        backoff = 100;
        this.updateStatus();
        const end = await f.watch.ended;
        f.live = false;
        if (end.kind === 'closed') return;
        if (end.kind === 'compacted') {
          this.options.log?.(`watch on '${f.prefix}' fell behind compaction at ${end.compactRevision}: resyncing`);
          f.lastError = new LockLensError('ETCD', `history compacted at revision ${end.compactRevision}: reloading`);
          this.setStatus({ state: 'resyncing', error: f.lastError });
          reload = true;
          continue;
        }
        throw end.error;
      } catch (e) {
        if (this.disposed) return;
        f.live = false;
        f.lastError = e instanceof LockLensError ? e : new LockLensError('ETCD', errorMessage(e), { cause: e });
        this.options.log?.(`watch on '${f.prefix}' failed (${f.lastError.message}); retrying in ${backoff} ms`);
        this.updateStatus();
        await sleep(backoff);
        backoff = Math.min(backoff * 2, this.options.maxBackoffMs ?? 5000);
        reload = true;
      }
    }
  }

  private apply(f: Followed, events: IEvent[]): void {
    const strip = this.conn.namespace.length;
    for (const ev of events) {
      const kv = ev.kv as RawKeyValue;
      const revision = Number(kv.mod_revision);
      if (revision <= f.applied) continue;
      if (ev.type === 'Put') this.model.put(toKeyRecord(kv, strip));
      else this.model.delete(kv.key.subarray(strip), revision);
    }
    f.applied = Math.max(f.applied, Number(events[events.length - 1].kv.mod_revision));
    f.confirmed = Math.max(f.confirmed, f.applied);
    if (f.watch && f.applied >= f.watch.createdRevision) f.synced = true;
    this.scheduleNotify();
  }

  /** For sync() on a watch still replaying history: read the prefix and reconcile, unless events already passed it. */
  private async reconcile(f: Followed): Promise<void> {
    const read = await readPrefix(this.conn, f.prefix);
    if (this.disposed || read.revision < f.applied) return;
    this.model.reload((key) => hasPrefix(key, f.prefix), read.records, read.revision);
    // Not `synced`: the watch may still be replaying history, and a progress reply could run ahead of it.
    f.applied = f.confirmed = read.revision;
    this.scheduleNotify();
  }

  private progressed(f: Followed, revision: number): void {
    if (f.synced) f.confirmed = Math.max(f.confirmed, revision);
    this.progressWaiter?.();
  }

  private updateStatus(): void {
    const broken = this.followed.find((f) => !f.live);
    if (!broken) this.setStatus({ state: 'live' });
    else if (broken.lastError) this.setStatus({ state: 'reconnecting', error: broken.lastError });
  }

  private setStatus(status: LiveStatus): void {
    if (status.state === this.currentStatus.state && status.error === this.currentStatus.error) return;
    this.currentStatus = status;
    this.statusChanges.fire(status);
  }

  private scheduleNotify(): void {
    if (this.pendingNotify || !this.model.hasChanges()) return;
    const wait = this.lastNotify + this.minNotifyIntervalMs - Date.now();
    if (wait <= 0) {
      // Let the rest of this burst (events already in the socket buffer) land first.
      const handle = setImmediate(() => this.notifyNow());
      this.pendingNotify = () => clearImmediate(handle);
    } else {
      const handle = setTimeout(() => this.notifyNow(), wait);
      this.pendingNotify = () => clearTimeout(handle);
    }
  }

  private flushNow(): void {
    this.pendingNotify?.();
    this.notifyNow();
  }

  private notifyNow(): void {
    this.pendingNotify = undefined;
    if (this.disposed || !this.model.hasChanges()) return;
    this.lastNotify = Date.now();
    this.changes.fire(this.model.takeChanges());
  }
}

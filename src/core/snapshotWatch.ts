/**
 * What the watches of stores that are read rather than streamed (Redis, ZooKeeper, SQL) share: every read goes through
 * a SnapshotModel, whose change sets reach views coalesced; reads run one at a time, so a partial read never lands in
 * the middle of a full one; a status is told only when it says something new. Each store keeps how and when it reads
 * (timers, notifications, watches) and its TTLs.
 */
import type { LiveStatus, LockWatch, WatchOptions } from './backend';
import { Emitter } from './emitter';
import { LockLensError } from './errors';
import type { LeaseInfo } from './leaseInfo';
import type { ChangeSet, LockState } from './lockState';
import { ChangeSetCoalescer, SnapshotModel } from './snapshotModel';

const COALESCE_MS = 100;

/** Whether a view would tell the user anything new going from `a` to `b`. */
function sameStatus(a: LiveStatus, b: LiveStatus): boolean {
  return (
    a.state === b.state &&
    a.detail === b.detail &&
    a.hidden === b.hidden &&
    a.unreachable?.join('\n') === b.unreachable?.join('\n') &&
    a.error?.message === b.error?.message
  );
}

export abstract class SnapshotLockWatch implements LockWatch {
  protected readonly model = new SnapshotModel();
  private readonly statusEmitter = new Emitter<LiveStatus>();
  private readonly locksEmitter = new Emitter<ChangeSet>();
  protected readonly leasesEmitter = new Emitter<readonly LeaseInfo[]>();
  readonly onDidChangeStatus = this.statusEmitter.event;
  readonly onDidChangeLocks = this.locksEmitter.event;
  readonly onDidChangeLeases = this.leasesEmitter.event;
  private readonly changes: ChangeSetCoalescer;
  private current: LiveStatus = { state: 'loading' };
  private queue: Promise<void> = Promise.resolve();
  protected disposed = false;

  constructor(protected readonly options: WatchOptions) {
    this.changes = new ChangeSetCoalescer((set) => this.locksEmitter.fire(set), options.minNotifyIntervalMs ?? COALESCE_MS);
  }

  abstract start(): Promise<void>;
  abstract lease(id: string): LeaseInfo | undefined;
  abstract sweep(): Promise<void>;
  /**
   * A read of everything, as `sync` wants it. A failure is told in the status (or the log) as a poll's is, and returned:
   * sync rejects with it, as etcd's does, for its callers act on the store as it is now (a deadlock is confirmed only
   * by a second read; a stale model resolved as synced confirmed one from the first read again).
   */
  protected abstract readWhole(): Promise<LockLensError | undefined>;
  /** Lets go of the store's side: timers, subscriptions, listeners. */
  protected abstract stop(): void;

  get status(): LiveStatus {
    return this.current;
  }

  protected setStatus(status: LiveStatus): void {
    if (this.disposed) return;
    const same = sameStatus(status, this.current);
    this.current = status;
    if (!same) this.statusEmitter.fire(status);
  }

  /** Runs `task` after every task before it, whether they failed or not. */
  protected enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  protected emit(set: ChangeSet | undefined): void {
    if (!this.disposed) this.changes.push(set);
  }

  locks(): LockState[] {
    return this.model.locks();
  }

  unordered(): Iterable<LockState> {
    return this.model.unordered();
  }

  lock(id: string): LockState | undefined {
    return this.model.lock(id);
  }

  sync(): Promise<void> {
    return this.enqueue(async () => {
      const failed = await this.readWhole();
      this.changes.flush();
      if (failed) throw failed;
    });
  }

  dispose(): void {
    if (this.disposed) return;
    this.setStatus({ state: 'closed' });
    this.disposed = true;
    this.stop();
    this.changes.dispose();
    this.model.clear();
    this.statusEmitter.dispose();
    this.locksEmitter.dispose();
    this.leasesEmitter.dispose();
  }
}

/** What a read of a watch disposed meanwhile returns (see readWhole). */
export function closedError(): LockLensError {
  return new LockLensError('CLOSED', 'the watch was closed');
}

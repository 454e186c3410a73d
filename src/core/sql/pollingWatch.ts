/**
 * Keeps a SQL store's locks current by reading them whole every poll interval (databases push nothing about advisory
 * locks or lock rows). Reads go through a SnapshotModel, so a quiet poll emits nothing and a change emits only the locks
 * that moved, coalesced as the other stores' change sets are. Lock-table rows with an expiry are sampled as TTLs; they
 * are never renewed by their owners the way leases are (ShedLock sets `lock_until` once), so none is ever "stalled".
 */
import type { Listing, LiveStatus, LockWatch, WatchOptions } from '../backend';
import { Emitter } from '../emitter';
import { LockLensError, errorMessage } from '../errors';
import { hasPrefix } from '../keys';
import { observeLease, type LeaseInfo } from '../leaseInfo';
import type { ChangeSet, LockState } from '../lockState';
import { ChangeSetCoalescer, SnapshotModel } from '../snapshotModel';

const DEFAULT_POLL_MS = 1000;
const COALESCE_MS = 100;

/** What a member expires with, read with the locks: a lock row's expiry column. */
export interface ExpirySample {
  /** `LockMember.lease` of the members it expires. */
  readonly id: string;
  /** Seconds left, as the database computed them (negative: past). */
  readonly ttl: number;
  /** Seconds from when the row was written to its expiry, where the row says when it was written; else `ttl` at first sight. */
  readonly grantedTtl: number;
  readonly keys: readonly Buffer[];
}

/** One whole read of a SQL store. */
export interface SqlReading {
  readonly locks: readonly LockState[];
  readonly expiries: readonly ExpirySample[];
  /** What the read could not see and why (another user's sessions hidden by the server's permissions). */
  readonly hidden?: string;
}

/** The locks of a reading under any of `prefixes` (every lock when there is none). */
function underPrefixes(locks: readonly LockState[], prefixes: readonly Uint8Array[]): LockState[] {
  return prefixes.length === 0 ? [...locks] : locks.filter((l) => prefixes.some((p) => hasPrefix(l.name, p)));
}

/** Folds a reading's expiries into the sampled TTLs known before (ids no longer read are dropped). */
function sampleExpiries(previous: ReadonlyMap<string, LeaseInfo>, expiries: readonly ExpirySample[], at = Date.now()): Map<string, LeaseInfo> {
  const next = new Map<string, LeaseInfo>();
  for (const e of expiries) next.set(e.id, observeLease(previous.get(e.id), e.id, { ttl: e.ttl, grantedTtl: e.grantedTtl, keys: [...e.keys], at }, 0));
  return next;
}

/** A SQL store's listing: one reading's locks under the prefixes, in name order, with its expiries sampled once. */
export function listingOf(reading: SqlReading, prefixes: readonly Uint8Array[]): Listing {
  const leases = sampleExpiries(new Map(), reading.expiries);
  const locks = underPrefixes(reading.locks, prefixes).sort((a, b) => Buffer.compare(a.name, b.name));
  return { revision: null, locks, lease: (id) => leases.get(id), ...(reading.hidden ? { hidden: reading.hidden } : {}) };
}

export class SqlLockWatch implements LockWatch {
  private readonly model = new SnapshotModel();
  private readonly statusEmitter = new Emitter<LiveStatus>();
  private readonly locksEmitter = new Emitter<ChangeSet>();
  private readonly leasesEmitter = new Emitter<readonly LeaseInfo[]>();
  readonly onDidChangeStatus = this.statusEmitter.event;
  readonly onDidChangeLocks = this.locksEmitter.event;
  readonly onDidChangeLeases = this.leasesEmitter.event;
  private readonly changes: ChangeSetCoalescer;
  private readonly pollMs: number;
  private leases = new Map<string, LeaseInfo>();
  private current: LiveStatus = { state: 'loading' };
  private queue: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  /** The next read follows an error (or is the first): what it finds was already in place, not seen happening. */
  private resync = true;
  private disposed = false;

  constructor(
    private readonly read: () => Promise<SqlReading>,
    private readonly prefixes: readonly Uint8Array[],
    private readonly label: string,
    private readonly options: WatchOptions = {},
  ) {
    this.pollMs = options.pollIntervalMs ?? DEFAULT_POLL_MS;
    this.changes = new ChangeSetCoalescer((set) => this.locksEmitter.fire(set), options.minNotifyIntervalMs ?? COALESCE_MS);
  }

  get status(): LiveStatus {
    return this.current;
  }

  private setStatus(status: LiveStatus): void {
    if (this.disposed) return;
    const same =
      status.state === this.current.state &&
      status.detail === this.current.detail &&
      status.hidden === this.current.hidden &&
      status.error?.message === this.current.error?.message;
    this.current = status;
    if (!same) this.statusEmitter.fire(status);
  }

  async start(): Promise<void> {
    this.setStatus({ state: 'loading' });
    await this.enqueue(() => this.poll(true));
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private schedule(): void {
    clearTimeout(this.timer);
    if (!this.disposed) this.timer = setTimeout(() => void this.enqueue(() => this.poll(false)), this.pollMs);
  }

  private async poll(throwOnError: boolean): Promise<void> {
    if (this.disposed) return;
    try {
      const reading = await this.read();
      if (this.disposed) return;
      this.changes.push(this.model.replaceAll(underPrefixes(reading.locks, this.prefixes), this.resync));
      this.resync = false;
      this.leases = sampleExpiries(this.leases, reading.expiries);
      if (this.leases.size) this.leasesEmitter.fire([...this.leases.values()]);
      const detail = `polling every ${this.pollMs / 1000} s: databases push no lock changes`;
      this.setStatus({ state: 'live', detail, ...(reading.hidden ? { hidden: reading.hidden } : {}) });
    } catch (e) {
      const error = e instanceof LockLensError ? e : new LockLensError('STORE', errorMessage(e), { cause: e });
      if (throwOnError) throw error;
      if (error.code === 'CLOSED' || this.disposed) return;
      this.options.log?.(`reading the locks of ${this.label} failed: ${error.message}`);
      this.resync = true;
      this.setStatus({ state: 'reconnecting', error });
    } finally {
      this.schedule();
    }
  }

  locks(): LockState[] {
    return this.model.locks();
  }

  lock(id: string): LockState | undefined {
    return this.model.lock(id);
  }

  lease(id: string): LeaseInfo | undefined {
    return this.leases.get(id);
  }

  /** A read now: TTLs come with the locks. */
  sweep(): Promise<void> {
    return this.sync();
  }

  sync(): Promise<void> {
    return this.enqueue(async () => {
      await this.poll(false);
      this.changes.flush();
    });
  }

  dispose(): void {
    if (this.disposed) return;
    this.setStatus({ state: 'closed' });
    this.disposed = true;
    clearTimeout(this.timer);
    this.changes.dispose();
    this.model.clear();
    this.statusEmitter.dispose();
    this.locksEmitter.dispose();
    this.leasesEmitter.dispose();
  }
}

/**
 * Keeps a SQL store's locks current by reading them whole every poll interval (databases push nothing about advisory
 * locks or lock rows). Reads go through a SnapshotModel, so a quiet poll emits nothing and a change emits only the locks
 * that moved, coalesced as the other stores' change sets are. Lock-table rows with an expiry are sampled as TTLs; they
 * are never renewed by their owners the way leases are (ShedLock sets `lock_until` at each run, and its unlock moves it
 * to now or to the end of lockAtLeastFor), so none is ever "stalled".
 */
import type { Listing, WatchOptions } from '../backend';
import { LockLensError, errorMessage } from '../errors';
import { hasAnyPrefix } from '../keys';
import { observeLease, type LeaseInfo } from '../leaseInfo';
import { goneOwners } from '../holdEndEvidence';
import { byName, type LockState } from '../lockState';
import { SnapshotLockWatch, closedError } from '../snapshotWatch';

const DEFAULT_POLL_MS = 1000;

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
  /** In any order: `listingOf` and the watch's SnapshotModel sort by name. */
  readonly locks: readonly LockState[];
  readonly expiries: readonly ExpirySample[];
  /** What the read could not see and why (another user's sessions hidden by the server's permissions). */
  readonly hidden?: string;
}

/** The locks of a reading under any of `prefixes` (every lock when there is none). */
function underPrefixes(locks: readonly LockState[], prefixes: readonly Uint8Array[]): LockState[] {
  if (prefixes.length === 0) return [...locks];
  const under: LockState[] = [];
  for (const lock of locks) if (hasAnyPrefix(lock.name, prefixes)) under.push(lock);
  return under;
}

/** Folds a reading's expiries into the sampled TTLs known before (ids no longer read are dropped). */
function sampleExpiries(previous: ReadonlyMap<string, LeaseInfo>, expiries: readonly ExpirySample[], at = Date.now()): Map<string, LeaseInfo> {
  const next = new Map<string, LeaseInfo>();
  for (const e of expiries) next.set(e.id, observeLease(previous.get(e.id), e.id, { ttl: e.ttl, grantedTtl: e.grantedTtl, keys: [...e.keys], at }, 0));
  return next;
}

/**
 * Which of these sessions or connections (what members that end with theirs have as `lease`) the server has now;
 * undefined where the reader may not see them all.
 */
export type LivingSessions = (ids: readonly string[]) => Promise<ReadonlySet<string> | undefined>;

/** A SQL store's listing: one reading's locks under the prefixes, in name order, with its expiries sampled once. */
export function listingOf(reading: SqlReading, prefixes: readonly Uint8Array[]): Listing {
  const leases = sampleExpiries(new Map(), reading.expiries);
  const locks = underPrefixes(reading.locks, prefixes).sort(byName);
  return { revision: null, locks, lease: (id) => leases.get(id), ...(reading.hidden ? { hidden: reading.hidden } : {}) };
}

export class SqlLockWatch extends SnapshotLockWatch {
  private readonly pollMs: number;
  private leases = new Map<string, LeaseInfo>();
  /** Of the members the last read found gone that end with their connection: whether it was still there. */
  private owners = new Map<string, boolean>();
  private timer: NodeJS.Timeout | undefined;
  /** The next read follows an error (or is the first): what it finds was already in place, not seen happening. */
  private resync = true;

  constructor(
    private readonly read: () => Promise<SqlReading>,
    private readonly prefixes: readonly Uint8Array[],
    private readonly label: string,
    options: WatchOptions = {},
    private readonly living?: LivingSessions,
  ) {
    super(options);
    this.pollMs = options.pollIntervalMs ?? DEFAULT_POLL_MS;
  }

  async start(): Promise<void> {
    this.setStatus({ state: 'loading' });
    await this.enqueue(() => this.poll(true));
  }

  private schedule(): void {
    clearTimeout(this.timer);
    if (!this.disposed) this.timer = setTimeout(() => void this.enqueue(() => this.poll(false)), this.pollMs);
  }

  /** Reads everything; a failure is thrown (throwOnError) or told in the status and returned (see readWhole). */
  private async poll(throwOnError: boolean): Promise<LockLensError | undefined> {
    if (this.disposed) return closedError();
    try {
      const reading = await this.read();
      if (this.disposed) return closedError();
      const locks = underPrefixes(reading.locks, this.prefixes);
      // Before the change is told: those who hear of a lock gone ask then whether its connection was. Asked after the
      // locks were read (a connection there now was there when its lock went), and only of the members that went,
      // which only the locks that changed or went can have lost.
      const diff = this.model.compareAll(locks);
      const gone = this.living ? goneOwners(this.model.replaced(diff), diff.changed) : [];
      const alive = gone.length ? await this.living?.(gone) : undefined;
      if (this.disposed) return closedError();
      this.owners = new Map(alive ? gone.map((id) => [id, alive.has(id)]) : []);
      this.emit(this.model.commit(diff, this.resync));
      this.resync = false;
      this.leases = sampleExpiries(this.leases, reading.expiries);
      if (this.leases.size) this.leasesEmitter.fire([...this.leases.values()]);
      const detail = `polling every ${this.pollMs / 1000} s: databases push no lock changes`;
      this.setStatus({ state: 'live', detail, ...(reading.hidden ? { hidden: reading.hidden } : {}) });
      return undefined;
    } catch (e) {
      const error = e instanceof LockLensError ? e : new LockLensError('STORE', errorMessage(e), { cause: e });
      if (throwOnError) throw error;
      if (error.code === 'CLOSED' || this.disposed) return error;
      this.options.log?.(`reading the locks of ${this.label} failed: ${error.message}`);
      this.resync = true;
      this.setStatus({ state: 'reconnecting', error });
      return error;
    } finally {
      this.schedule();
    }
  }

  lease(id: string): LeaseInfo | undefined {
    return this.leases.get(id);
  }

  ownerLives(id: string): boolean | undefined {
    return this.owners.get(id);
  }

  /** A read now: TTLs come with the locks. A failed one is told in the status, as a poll's is. */
  sweep(): Promise<void> {
    return this.sync().catch(() => undefined);
  }

  /** A poll now (the timer starts again from it). */
  protected readWhole(): Promise<LockLensError | undefined> {
    return this.poll(false);
  }

  protected stop(): void {
    clearTimeout(this.timer);
  }
}

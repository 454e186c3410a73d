import type { LiveStatus, LockWatch } from '../backend';
import type { EtcdConnection } from './connect';
import { Emitter, type Disposable } from '../emitter';
import type { LeaseInfo } from '../leaseInfo';
import { LeaseTracker } from './leases';
import { LiveLocks } from './liveLocks';
import { members, type ChangeSet, type LockState } from '../lockState';

export interface EtcdLockWatchOptions {
  /** How often every shown lease's TTL is sampled (etcd never pushes TTLs). */
  readonly leaseSampleIntervalMs?: number;
  readonly stallFraction?: number;
  /** See WatchOptions.countdowns. */
  readonly countdowns?: boolean;
  /** See LiveLocksOptions. */
  readonly minNotifyIntervalMs?: number;
  readonly log?: (message: string) => void;
}

export const DEFAULT_LEASE_SAMPLE_INTERVAL_MS = 2000;

/** A new lease is sampled this soon after it appears, so a new waiter shows its TTL without waiting for the sweep. */
const NEW_LEASE_DELAY_MS = 50;

/**
 * What the views of one cluster show: the live lock model of its watched prefixes, and the TTLs of the leases its
 * locks hold, sampled in sweeps. Both arrive as events, so a view never polls: the tree and the timeline render from
 * the same change sets.
 */
export class EtcdLockWatch implements LockWatch {
  readonly live: LiveLocks;
  readonly leases: LeaseTracker;
  private readonly leaseChanges = new Emitter<readonly LeaseInfo[]>();
  /** Lease infos updated by a sweep (TTL counted down, refreshed, stalled, expired). */
  readonly onDidChangeLeases = this.leaseChanges.event;
  private readonly subscriptions: Disposable[] = [];
  private readonly intervalMs: number;
  private timer?: NodeJS.Timeout;
  private sweeping?: Promise<void>;
  /** The leases the locks are on, kept until the next change set: a quiet sweep would walk every lock for the same ids. */
  private heldLeases?: Set<string>;
  private disposed = false;

  constructor(conn: EtcdConnection, prefixes: readonly Uint8Array[], options: EtcdLockWatchOptions = {}) {
    this.live = new LiveLocks(conn, prefixes, { log: options.log, minNotifyIntervalMs: options.minNotifyIntervalMs });
    this.leases = new LeaseTracker(conn, { stallFraction: options.stallFraction, countdowns: options.countdowns });
    this.intervalMs = options.leaseSampleIntervalMs ?? DEFAULT_LEASE_SAMPLE_INTERVAL_MS;
    this.subscriptions.push(
      this.leases.onDidChange((infos) => this.leaseChanges.fire(infos)),
      this.live.onDidChange((changes) => {
        this.heldLeases = undefined;
        this.sampleNewLeases(changes);
      }),
    );
  }

  get onDidChangeLocks() {
    return this.live.onDidChange;
  }

  get onDidChangeStatus() {
    return this.live.onDidChangeStatus;
  }

  get status(): LiveStatus {
    return this.live.status;
  }

  locks(): LockState[] {
    return this.live.model.locks();
  }

  unordered(): Iterable<LockState> {
    return this.live.model.unordered();
  }

  lock(id: string): LockState | undefined {
    return this.live.model.lock(id);
  }

  async sync(): Promise<void> {
    await this.live.sync();
  }

  lease(id: string): LeaseInfo | undefined {
    return this.leases.get(id);
  }

  /** Loads the prefixes, then follows them and samples their leases until disposed. */
  async start(): Promise<void> {
    await this.live.start();
    await this.sweep();
  }

  /** Samples every lease now (and restarts the sweep clock): after a command that changed leases, say. */
  async sweep(): Promise<void> {
    clearTimeout(this.timer);
    if (this.disposed) return;
    // One sweep at a time: a slow cluster must not pile sweeps up.
    this.sweeping ??= this.leases.sweep(this.leaseIds()).finally(() => {
      this.sweeping = undefined;
      if (!this.disposed) this.timer = setTimeout(() => void this.sweep(), this.intervalMs);
    });
    return this.sweeping;
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
    this.subscriptions.forEach((s) => s.dispose());
    this.live.dispose();
    this.leases.dispose();
    this.leaseChanges.dispose();
  }

  private leaseIds(): Set<string> {
    if (this.heldLeases) return this.heldLeases;
    const ids = new Set<string>();
    for (const lock of this.live.model.unordered()) for (const m of members(lock)) if (m.lease) ids.add(m.lease);
    return (this.heldLeases = ids);
  }

  private sampleNewLeases(changes: ChangeSet): void {
    const unseen = changes.changed.some((lock) => members(lock).some((m) => m.lease && !this.leases.get(m.lease)));
    if (!unseen || this.sweeping || this.disposed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.sweep(), NEW_LEASE_DELAY_MS);
  }
}

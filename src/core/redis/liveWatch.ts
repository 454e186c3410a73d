/**
 * Keeps the locks under some prefixes current. Redis pushes nothing by default: keyspace notifications are off unless
 * configured (and managed Redis often forbids CONFIG), so the watch reads everything again every poll interval and
 * uses notifications when the server has them on, re-reading only the keys they name. Redisson publishes on every
 * unlock without any configuration, and its channel names the lock, so those messages re-read that lock at once in
 * either mode. Reads go through a SnapshotModel, so only locks that really changed are emitted, and bursts are
 * coalesced.
 *
 * What the nodes push is nodeSubscriptions.ts's, when full reads run is fullReads.ts's, the TTLs between reads are
 * ttlSampler.ts's, the connection events of each topology are topologyEvents.ts's. The second walk that finds free
 * fair locks (`redisson_lock_queue:*`, see keyspaceReader.ts) runs only every `queueResyncMs`; the fair queues of the
 * locks already known are read on every poll without it.
 */
import type { LiveStatus, WatchOptions } from '../backend';
import { LockLensError, errorMessage } from '../errors';
import { hasAnyPrefix, keyId } from '../keys';
import type { LeaseInfo } from '../leaseInfo';
import { SnapshotLockWatch, closedError } from '../snapshotWatch';
import { FullReads } from './fullReads';
import { storeError, type ReadOptions } from './keyspaceReader';
import { NodeSubscriptions, unlockedNames } from './nodeSubscriptions';
import { queueOwnerName } from './recognize';
import { RW_TIMEOUT_SUFFIX, redissonNameFromPrefixed } from './redissonNames';
import type { Subscriber } from './subscriber';
import type { RedisNode, Topology, Unreachable } from './topology';
import { followTopology } from './topologyEvents';
import { TtlSampler } from './ttlSampler';

/** How often a full read also walks the keyspace for fair queues whose lock is free (its hash gone while waiters remain). */
const QUEUE_RESYNC_MS = 30_000;
/**
 * Touched keys are gathered this long before they are read (unless WatchOptions.readDelayMs says otherwise), so that
 * the notifications of one script or one socket read (Redisson's lock is an HINCRBY and a PEXPIRE) are one read.
 */
const TOUCH_DELAY_MS = 2;

export interface WatchDeps {
  readonly topology: Topology;
  /** A subscriber connection to one node (keyspace notifications are node-local). */
  readonly openSubscriber: (node: RedisNode) => Promise<Subscriber>;
  readonly readOptions?: ReadOptions;
  /** Test seam: how often a full read also looks for free fair locks (QUEUE_RESYNC_MS). */
  readonly queueResyncMs?: number;
}

export class RedisLockWatch extends SnapshotLockWatch {
  private readonly subscriptions: NodeSubscriptions;
  private readonly fullReads: FullReads;
  private readonly ttls: TtlSampler;
  private readonly queueResyncMs: number;
  /** When a full read last walked for free fair queues. */
  private lastQueueScan = 0;
  /** Names from Redisson unlock messages whose fair queues the next full read reads (a cluster has no partial read). */
  private readonly unlocked = new Map<string, Buffer>();
  /** Nodes the last full read could not reach (redlock instances, cluster masters). */
  private down: readonly Unreachable[] = [];
  private touchTimer: NodeJS.Timeout | undefined;
  private readonly touched = new Map<string, Buffer>();
  /** Stops following the topology's connection events. */
  private unfollow: (() => void) | undefined;

  constructor(
    private readonly deps: WatchDeps,
    private readonly prefixes: readonly Buffer[],
    options: WatchOptions = {},
  ) {
    super(options);
    this.subscriptions = new NodeSubscriptions(deps.topology, deps.openSubscriber, prefixes, {
      unlocked: (channel) => this.unlockedLock(channel),
      touched: (key) => this.touch(key),
      expired: (key) => this.expiredKey(key),
      detected: () => {
        if (this.status.state === 'live') this.setStatus(this.liveStatus);
      },
      log: options.log,
    });
    this.fullReads = new FullReads(Math.max(50, options.pollIntervalMs ?? 1000), (task) => this.enqueue(task), () => this.fullRead(false));
    this.ttls = new TtlSampler(
      deps.topology,
      Math.max(50, options.leaseSampleIntervalMs ?? 2000),
      (infos) => this.leasesEmitter.fire(infos),
      (key) => this.touch(key),
      () => this.subscriptions.expiryEvents,
      // A cluster's notification is a full read, paced by its cost: a renewal could wait past its countdown's stall.
      (key) => this.subscriptions.notifications && this.deps.topology.kind !== 'cluster' && hasAnyPrefix(key, this.prefixes),
      options.countdowns,
    );
    this.queueResyncMs = deps.queueResyncMs ?? QUEUE_RESYNC_MS;
  }

  private get detail(): string {
    const { notifications, configRefused, expiryEvents } = this.subscriptions;
    const followed = notifications ? 'keyspace notifications' : this.fullReads.pacer.describe(configRefused ? 'unreadable' : 'off');
    // Keyspace notifications that are on include expiries; without them, `expired` key events may still come.
    const how = expiryEvents && !notifications ? `${followed}; expired events tell expiries from deletes` : followed;
    const topology = this.deps.topology;
    if (this.down.length === 0) return how;
    // A cluster master that is down is not among the connected ones; a redlock instance that is down still is.
    const connected = new Set(topology.nodes().map((n) => n.label));
    const total = connected.size + this.down.filter((d) => !connected.has(d.label)).length;
    const which = this.down.map((d) => d.label).join(', ');
    const consequence =
      topology.kind === 'cluster' ? 'the locks on it are not shown' : 'its locks count as not agreeing, the others are shown';
    return `${how}; ${this.down.length} of ${total} ${topology.noun(total)} unreachable (${which}): ${consequence}`;
  }

  private get liveStatus(): LiveStatus {
    return this.down.length ? { state: 'live', detail: this.detail, unreachable: this.down.map((d) => d.label) } : { state: 'live', detail: this.detail };
  }

  /** The one instance's label, for messages. */
  private get label(): string {
    return this.deps.topology.nodes().map((n) => n.label).join(', ');
  }

  async start(): Promise<void> {
    this.setStatus({ state: 'loading' });
    this.unfollow = followTopology(this.deps.topology, {
      closed: () => {
        if (this.disposed || this.status.state === 'reconnecting') return;
        this.setStatus({ state: 'reconnecting', error: new LockLensError('UNREACHABLE', `lost the connection to Redis at ${this.label}; reconnecting`), detail: this.detail });
      },
      ready: () => {
        if (this.disposed || this.status.state !== 'reconnecting') return;
        void this.subscriptions.detect().then(() => this.enqueue(() => this.fullRead(true)));
      },
      // The next read says which instance is down.
      nodeClosed: (node) => {
        if (!this.disposed && !this.down.some((d) => d.label === node.label)) void this.fullReads.request();
      },
      // Subscribe to new nodes, read everything again.
      nodesChanged: () => {
        if (!this.disposed) void this.subscriptions.detect().then(() => this.fullReads.request());
      },
    });
    await this.fullRead(true, true);
    await this.subscriptions.detect();
    this.setStatus(this.liveStatus);
    this.fullReads.poll(() => this.subscriptions.notifications && this.status.state === 'live');
    this.ttls.start();
  }

  /** Redisson says a lock was unlocked: re-read it (and its fair queue: it may be free with waiters now). */
  private unlockedLock(channel: Buffer): void {
    if (this.disposed) return;
    const names = unlockedNames(channel).filter((n) => hasAnyPrefix(n, this.prefixes));
    // A lock outside the prefixes is not ours to read.
    for (const name of names) {
      if (this.deps.topology.kind === 'cluster') this.unlocked.set(keyId(name), name);
      this.touch(name);
    }
  }

  /**
   * The server said `key` expired: its TTL's last word is said before the read that finds its lock gone, so that how
   * the hold ended is known when it ends.
   */
  private expiredKey(key: Buffer): void {
    if (this.disposed || !this.ttls.toldExpired(key)) return;
    this.touch(key);
  }

  /** A key changed: re-read the lock it belongs to. */
  private touch(key: Buffer): void {
    if (this.disposed) return;
    let name: Buffer | undefined = key;
    const queueName = queueOwnerName(key) ?? redissonNameFromPrefixed('redisson_lock_timeout', key);
    if (queueName) name = queueName;
    else if (RW_TIMEOUT_SUFFIX.test(key.toString('latin1'))) name = undefined; // its hash changes too
    if (!name || !hasAnyPrefix(name, this.prefixes)) return;
    // A cluster's names live on different masters: a change there is read whole (coalesced).
    if (this.deps.topology.kind === 'cluster') return void this.fullReads.request();
    this.touched.set(keyId(name), name);
    if (!this.touchTimer) {
      this.touchTimer = setTimeout(() => {
        this.touchTimer = undefined;
        const names = [...this.touched.values()];
        this.touched.clear();
        this.enqueue(() => this.partialRead(names)).catch(() => undefined);
      }, this.options.readDelayMs ?? TOUCH_DELAY_MS);
    }
  }

  /** The names whose fair queues a full read reads besides those of the hashes it finds: fair locks known to have waiters. */
  private knownQueues(): Buffer[] {
    const names = new Map<string, Buffer>(this.unlocked);
    for (const lock of this.model.locks()) {
      // A held fair lock with waiters whose hash expires, or one already free: the waiters are still to be shown.
      if (lock.kind === 'queue' && (lock.holder === null || lock.waiters.length > 0)) names.set(lock.id, lock.name);
    }
    return [...names.values()];
  }

  /** Reads everything; a failure is thrown (throwOnError) or told in the status or the log and returned (see readWhole). */
  private async fullRead(resynced: boolean, throwOnError = false): Promise<LockLensError | undefined> {
    if (this.disposed) return closedError();
    const started = Date.now();
    const queueScan = resynced || started - this.lastQueueScan >= this.queueResyncMs;
    const queueNames = this.knownQueues();
    this.unlocked.clear();
    try {
      const { recognized, down, cost } = await this.deps.topology.read(this.prefixes, this.deps.readOptions, { queueScan, queueNames });
      const now = Date.now();
      if (queueScan) this.lastQueueScan = started;
      const paceChanged = this.fullReads.ended(started, now, cost);
      const { locks, ttls } = recognized;
      const wasReconnecting = this.status.state === 'reconnecting';
      const downChanged = down.map((d) => d.label).join() !== this.down.map((d) => d.label).join();
      this.down = down;
      this.ttls.replace(ttls);
      this.emit(this.model.replaceAll(locks, resynced || wasReconnecting));
      this.ttls.observe([...ttls.values()], now, this.model.unordered());
      const restate = downChanged || (paceChanged && !this.subscriptions.notifications);
      if (wasReconnecting || (restate && this.status.state === 'live')) this.setStatus(this.liveStatus);
      return undefined;
    } catch (e) {
      // The failed read's time (a timeout, say) spaces nothing: the read after it is wanted soon.
      // Asked for again by the next read.
      for (const name of queueNames) if (!this.unlocked.has(keyId(name)) && !this.model.lock(keyId(name))) this.unlocked.set(keyId(name), name);
      const error = storeError(e);
      if (throwOnError) throw error;
      if (error.code === 'UNREACHABLE' || error.code === 'TIMEOUT') this.setStatus({ state: 'reconnecting', error, detail: this.detail });
      else this.options.log?.(`Redis read failed: ${error.message}`);
      return error;
    }
  }

  private async partialRead(names: Buffer[]): Promise<void> {
    if (this.disposed || names.length === 0) return;
    try {
      const read = await this.deps.topology.readNames(names, this.prefixes);
      if (!read) return void this.fullReads.request();
      const now = Date.now();
      const { locks, ttls } = read.recognized;
      const ids = names.map((n) => keyId(n));
      // The locks this read may change, as they were: what their members' TTLs are counted down from.
      const touched = [...new Set([...ids, ...locks.map((l) => l.id)])];
      const before = touched.map((id) => this.model.lock(id));
      this.emit(this.model.replaceSome(ids, locks));
      this.ttls.add(ttls);
      this.ttls.observeChanged([...ttls.values()], now, before, touched.map((id) => this.model.lock(id)));
    } catch (e) {
      this.options.log?.(`Redis read failed: ${errorMessage(e)}`);
      void this.fullReads.request();
    }
  }

  lease(id: string): LeaseInfo | undefined {
    return this.ttls.lease(id);
  }

  sweep(): Promise<void> {
    return this.ttls.sweep();
  }

  protected readWhole(): Promise<LockLensError | undefined> {
    return this.fullRead(false);
  }

  protected stop(): void {
    this.fullReads.stop();
    this.ttls.stop();
    clearTimeout(this.touchTimer);
    this.unfollow?.();
    this.subscriptions.dispose();
  }
}

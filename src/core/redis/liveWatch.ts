/**
 * Keeps the locks under some prefixes current. Redis pushes nothing by default: keyspace notifications are off unless
 * configured (and managed Redis often forbids CONFIG), so the watch reads everything again every poll interval and
 * uses notifications when the server has them on, re-reading only the keys they name. Redisson publishes on every
 * unlock without any configuration, and its channel names the lock, so those messages re-read that lock at once in
 * either mode. Reads go through a SnapshotModel, so only locks that really changed are emitted, and bursts are
 * coalesced.
 *
 * A full read walks the server's whole keyspace (SCAN), which is load on the user's Redis: polls are spaced by what
 * the last read cost (see pollPacing.ts), full reads asked for by events keep the same spacing, and the second walk
 * that finds free fair locks (`redisson_lock_queue:*`, see keyspaceReader.ts) runs only every `queueResyncMs`. The
 * fair queues of the locks already known are read on every poll without it.
 */
import type Redis from 'ioredis';
import type { LiveStatus, WatchOptions } from '../backend';
import type { Disposable } from '../emitter';
import { LockLensError, errorMessage } from '../errors';
import { hasPrefix, keyId } from '../keys';
import type { LeaseInfo } from '../leaseInfo';
import { members } from '../lockState';
import { SnapshotLockWatch } from '../snapshotWatch';
import { globPrefix, storeError, type ReadOptions } from './keyspaceReader';
import { PollPacer } from './pollPacing';
import { queueOwnerName, type TtlSource } from './recognize';
import { RW_TIMEOUT_SUFFIX, redissonNameFromPrefixed } from './redissonNames';
import type { Subscriber } from './subscriber';
import type { RedisNode, Topology, Unreachable } from './topology';
import { TtlTable } from './ttlTable';

/** Notifications can be missed (a reconnect, a buffer limit): with them on, a full read still runs this often. */
const SAFETY_RESYNC_MS = 30_000;
/** How often a full read also walks the keyspace for fair queues whose lock is free (its hash gone while waiters remain). */
const QUEUE_RESYNC_MS = 30_000;
const FAIR_WAKE_SUFFIX = /:[0-9a-f-]{36}:\d+$/;
/**
 * Touched keys are gathered this long before they are read, so that the notifications of one script or one socket
 * read (Redisson's lock is an HINCRBY and a PEXPIRE) are one read; longer would only add to every change's latency,
 * since reads are serialised anyway and views are told at most once per COALESCE_MS.
 */
const TOUCH_DELAY_MS = 2;

/** Whether `notify-keyspace-events` sends keyspace events for generic, string, hash and expired events. */
export function keyspaceNotificationsOn(flags: string): boolean {
  if (!flags.includes('K')) return false;
  const all = flags.includes('A');
  return ['g', '$', 'h', 'x'].every((c) => all || flags.includes(c));
}

export interface WatchDeps {
  readonly topology: Topology;
  /** A subscriber connection to one node (keyspace notifications are node-local). */
  readonly openSubscriber: (node: RedisNode) => Promise<Subscriber>;
  readonly readOptions?: ReadOptions;
  /** Test seam: how often a full read also looks for free fair locks (QUEUE_RESYNC_MS). */
  readonly queueResyncMs?: number;
}

/**
 * The lock names a Redisson unlock message's channel may stand for: `redisson_lock__channel:{name}`, a fair lock's
 * `redisson_lock__channel:{name}:<uuid>:<thread>` (the waiter it wakes), `redisson_rwlock:{name}`. Both readings of a
 * channel that ends like a fair wake-up are given: reading a name too many costs one key.
 */
export function unlockedNames(channel: Buffer): Buffer[] {
  const plain = redissonNameFromPrefixed('redisson_lock__channel', channel) ?? redissonNameFromPrefixed('redisson_rwlock', channel);
  if (!plain) return [];
  const out = [plain];
  const wake = FAIR_WAKE_SUFFIX.exec(channel.toString('latin1'));
  if (wake && channel.toString('latin1').startsWith('redisson_lock__channel:')) {
    const name = redissonNameFromPrefixed('redisson_lock__channel', channel.subarray(0, channel.length - wake[0].length));
    if (name && !name.equals(plain)) out.push(name);
  }
  return out;
}

interface NodeSubscription {
  readonly subscriber: Subscriber;
  readonly subscriptions: Disposable[];
  notifications: boolean;
}

export class RedisLockWatch extends SnapshotLockWatch {
  private readonly ttls = new TtlTable();
  private sources = new Map<string, TtlSource>();
  private readonly pollMs: number;
  private readonly sampleMs: number;
  private readonly pacer: PollPacer;
  private readonly queueResyncMs: number;
  /** When the last full read ended, and how long it took (ms): the next one waits for the pacer's gap after it. */
  private lastFullEnd = 0;
  private lastFullMs = 0;
  /** When a full read last walked for free fair queues. */
  private lastQueueScan = 0;
  /** Names from Redisson unlock messages whose fair queues the next full read reads (a cluster has no partial read). */
  private readonly unlocked = new Map<string, Buffer>();
  private fullTimer: NodeJS.Timeout | undefined;
  private fullTimerDone: (() => void) | undefined;
  private notifications = false;
  /**
   * Some node refused `CONFIG GET` (managed services, a renamed command): whether it sends keyspace notifications
   * cannot be read, so everything is polled, and notifications, if it sends them, are followed as well.
   */
  private configRefused = false;
  /** Per node label: its subscriber and what it is subscribed to. */
  private readonly subscribers = new Map<string, NodeSubscription>();
  /** Nodes the last full read could not reach (redlock instances, cluster masters). */
  private down: readonly Unreachable[] = [];
  private pollTimer: NodeJS.Timeout | undefined;
  private sampleTimer: NodeJS.Timeout | undefined;
  private touchTimer: NodeJS.Timeout | undefined;
  private readonly touched = new Map<string, Buffer>();
  private fullPending: Promise<void> | undefined;
  private readonly clientListeners: [Redis, string, (...a: unknown[]) => void][] = [];
  /** The detections in flight, one after the other (see detectMode). */
  private detection: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: WatchDeps,
    private readonly prefixes: readonly Buffer[],
    options: WatchOptions = {},
  ) {
    super(options);
    this.pollMs = Math.max(50, options.pollIntervalMs ?? 1000);
    this.sampleMs = Math.max(50, options.leaseSampleIntervalMs ?? 2000);
    this.pacer = new PollPacer(this.pollMs);
    this.queueResyncMs = deps.queueResyncMs ?? QUEUE_RESYNC_MS;
  }

  private get detail(): string {
    const how = this.notifications ? 'keyspace notifications' : this.pacer.describe(this.configRefused ? 'unreadable' : 'off');
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
    const topology = this.deps.topology;
    if (topology.kind === 'single') {
      const onClose = () => {
        if (this.disposed || this.status.state === 'reconnecting') return;
        this.setStatus({ state: 'reconnecting', error: new LockLensError('UNREACHABLE', `lost the connection to Redis at ${this.label}; reconnecting`), detail: this.detail });
      };
      const onReady = () => {
        if (this.disposed || this.status.state !== 'reconnecting') return;
        void this.detectMode().then(() => this.enqueue(() => this.fullRead(true)));
      };
      this.listen(topology.router, 'close', onClose);
      this.listen(topology.router, 'ready', onReady);
    } else if (topology.kind === 'redlock') {
      // One instance of several going away is not the view going away: the next read says which is down.
      for (const node of topology.nodes()) {
        this.listen(node.client, 'close', () => {
          if (!this.disposed && !this.down.some((d) => d.label === node.label)) void this.requestFull();
        });
        this.listen(node.client, 'ready', () => {
          if (!this.disposed) void this.detectMode().then(() => this.requestFull());
        });
      }
    } else {
      // Masters come and go with failovers: subscribe to new ones, read everything again.
      const changed = () => {
        if (!this.disposed) void this.detectMode().then(() => this.requestFull());
      };
      this.listen(topology.cluster as unknown as Redis, '+node', changed);
      this.listen(topology.cluster as unknown as Redis, '-node', changed);
    }
    await this.fullRead(true, true);
    await this.detectMode();
    this.setStatus(this.liveStatus);
    this.schedulePoll();
    this.scheduleSample();
  }

  private listen(client: Redis, event: string, listener: (...a: unknown[]) => void): void {
    client.on(event, listener);
    this.clientListeners.push([client, event, listener]);
  }

  /**
   * Notifications on or off (CONFIG may be forbidden: then polling, quietly), and the subscriptions that go with it,
   * on every node: keyspace notifications are node-local, and each redlock instance publishes its own Redisson
   * unlocks. Notifications count only when every node has them on and is subscribed; otherwise everything is polled.
   */
  private detectMode(): Promise<void> {
    // One at a time: two at once (several nodes reconnecting, a burst of +node events) would each open a subscriber
    // for a node that has none, and the one filed second would leave the first connected for ever.
    const run = this.detection.then(() => this.detectModeNow());
    this.detection = run.catch(() => undefined);
    return run;
  }

  private async detectModeNow(): Promise<void> {
    const nodes = this.deps.topology.nodes();
    const results = await Promise.all(nodes.map((n) => this.detectNode(n)));
    if (this.disposed) return;
    this.configRefused = results.some((r) => r === 'unreadable');
    for (const label of [...this.subscribers.keys()]) {
      if (nodes.some((n) => n.label === label)) continue;
      // A master that left the cluster.
      const gone = this.subscribers.get(label)!;
      this.subscribers.delete(label);
      gone.subscriptions.forEach((d) => d.dispose());
      gone.subscriber.dispose();
    }
    this.notifications = results.length > 0 && results.every((r) => r === 'on');
    if (this.status.state === 'live') this.setStatus(this.liveStatus);
  }

  /** Whether `node` sends keyspace notifications (`unreadable`: CONFIG refused), subscribing to what it sends. */
  private async detectNode(node: RedisNode): Promise<'on' | 'off' | 'unreadable'> {
    let mode: 'on' | 'off' | 'unreadable' = 'off';
    try {
      const reply = (await node.client.config('GET', 'notify-keyspace-events')) as string[];
      if (keyspaceNotificationsOn(reply?.[1] ?? '')) mode = 'on';
    } catch (e) {
      mode = 'unreadable';
      this.options.log?.(`Redis CONFIG GET refused at ${node.label} (${errorMessage(e)}): polling, and following keyspace notifications if it sends them`);
    }
    try {
      let entry = this.subscribers.get(node.label);
      if (!entry) {
        const subscriber = await this.deps.openSubscriber(node);
        const redisson = (channel: Buffer) => this.unlockedLock(channel);
        try {
          const subscriptions = [
            await subscriber.psubscribe(Buffer.from('redisson_lock__channel:*'), redisson),
            await subscriber.psubscribe(Buffer.from('redisson_rwlock:*'), redisson),
          ];
          entry = { subscriber, subscriptions, notifications: false };
        } catch (e) {
          // Not filed half-subscribed: the next detection opens a fresh one.
          subscriber.dispose();
          throw e;
        }
        if (this.disposed) {
          subscriber.dispose();
          return 'off';
        }
        this.subscribers.set(node.label, entry);
      }
      if (mode !== 'off' && !entry.notifications) {
        const base = Buffer.from(`__keyspace@${node.spec.endpoint.db}__:`);
        const onKey = (channel: Buffer) => this.touch(channel.subarray(base.length));
        for (const p of [...this.prefixes.map(globPrefix), Buffer.from('redisson_lock_queue:*')]) {
          entry.subscriptions.push(await entry.subscriber.psubscribe(Buffer.concat([base, p]), onKey));
        }
        entry.notifications = true;
      }
      return mode;
    } catch (e) {
      this.options.log?.(`Redis subscribe failed at ${node.label} (${errorMessage(e)}): polling`);
      return mode === 'unreadable' ? mode : 'off';
    }
  }

  /** Redisson says a lock was unlocked: re-read it (and its fair queue: it may be free with waiters now). */
  private unlockedLock(channel: Buffer): void {
    if (this.disposed) return;
    const names = unlockedNames(channel).filter((n) => this.prefixes.some((p) => hasPrefix(n, p)));
    // A lock outside the prefixes is not ours to read.
    for (const name of names) {
      if (this.deps.topology.kind === 'cluster') this.unlocked.set(keyId(name), name);
      this.touch(name);
    }
  }

  /** A key changed: re-read the lock it belongs to. */
  private touch(key: Buffer): void {
    if (this.disposed) return;
    let name: Buffer | undefined = key;
    const queueName = queueOwnerName(key) ?? redissonNameFromPrefixed('redisson_lock_timeout', key);
    if (queueName) name = queueName;
    else if (RW_TIMEOUT_SUFFIX.test(key.toString('latin1'))) name = undefined; // its hash changes too
    if (!name || !this.prefixes.some((p) => hasPrefix(name!, p))) return;
    // A cluster's names live on different masters: a change there is read whole (coalesced).
    if (this.deps.topology.kind === 'cluster') return void this.requestFull();
    this.touched.set(keyId(name), name);
    if (!this.touchTimer) {
      this.touchTimer = setTimeout(() => {
        this.touchTimer = undefined;
        const names = [...this.touched.values()];
        this.touched.clear();
        this.enqueue(() => this.partialRead(names)).catch(() => undefined);
      }, TOUCH_DELAY_MS);
    }
  }

  /**
   * A full read soon; calls made while one is waiting share it. Not sooner than the pacer's gap after the last one
   * (events, a cluster's notifications, ask for them too: a burst must not walk a big keyspace again and again).
   */
  private requestFull(): Promise<void> {
    if (this.disposed) return Promise.resolve();
    if (!this.fullPending) {
      const wait = this.lastFullEnd + this.pacer.gapAfter(this.lastFullMs) - Date.now();
      const due =
        wait > 0
          ? new Promise<void>((resolve) => {
              this.fullTimerDone = resolve;
              this.fullTimer = setTimeout(resolve, wait);
            })
          : Promise.resolve();
      this.fullPending = due.then(() =>
        this.enqueue(async () => {
          this.fullPending = undefined;
          await this.fullRead(false);
        }),
      );
      this.fullPending.catch(() => undefined);
    }
    return this.fullPending;
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

  private async fullRead(resynced: boolean, throwOnError = false): Promise<void> {
    if (this.disposed) return;
    const started = Date.now();
    const queueScan = resynced || started - this.lastQueueScan >= this.queueResyncMs;
    const queueNames = this.knownQueues();
    this.unlocked.clear();
    try {
      const { recognized, down, cost } = await this.deps.topology.read(this.prefixes, this.deps.readOptions, { queueScan, queueNames });
      const now = Date.now();
      if (queueScan) this.lastQueueScan = started;
      this.lastFullEnd = now;
      // What the nodes that answered spent (a redlock instance that timed out is not load to space polls by).
      this.lastFullMs = cost?.totalMs ?? now - started;
      const paceChanged = cost ? this.pacer.observe(cost) : false;
      const { locks, ttls } = recognized;
      const wasReconnecting = this.status.state === 'reconnecting';
      const downChanged = down.map((d) => d.label).join() !== this.down.map((d) => d.label).join();
      this.down = down;
      this.sources = ttls;
      this.emit(this.model.replaceAll(locks, resynced || wasReconnecting));
      this.observeTtls([...ttls.values()], now);
      const restate = downChanged || (paceChanged && !this.notifications);
      if (wasReconnecting || (restate && this.status.state === 'live')) this.setStatus(this.liveStatus);
    } catch (e) {
      // The failed read's time (a timeout, say) spaces nothing: the read after it is wanted soon.
      // Asked for again by the next read.
      for (const name of queueNames) if (!this.unlocked.has(keyId(name)) && !this.model.lock(keyId(name))) this.unlocked.set(keyId(name), name);
      const error = storeError(e);
      if (throwOnError) throw error;
      if (error.code === 'UNREACHABLE' || error.code === 'TIMEOUT') this.setStatus({ state: 'reconnecting', error, detail: this.detail });
      else this.options.log?.(`Redis read failed: ${error.message}`);
    }
  }

  private async partialRead(names: Buffer[]): Promise<void> {
    if (this.disposed || names.length === 0) return;
    try {
      const read = await this.deps.topology.readNames(names, this.prefixes);
      if (!read) return void this.requestFull();
      const now = Date.now();
      const { locks, ttls } = read.recognized;
      const ids = names.map((n) => keyId(n));
      this.emit(this.model.replaceSome(ids, locks));
      for (const [id, s] of ttls) this.sources.set(id, s);
      this.observeTtls([...ttls.values()], now);
    } catch (e) {
      this.options.log?.(`Redis read failed: ${errorMessage(e)}`);
      void this.requestFull();
    }
  }

  /** Folds TTL samples in and forgets the ones no member refers to any more. */
  private observeTtls(samples: readonly TtlSource[], now: number): void {
    const live = new Set<string>();
    for (const lock of this.model.locks()) for (const m of members(lock)) if (m.lease) live.add(m.lease);
    for (const id of [...this.sources.keys()]) if (!live.has(id)) this.sources.delete(id);
    const changed = this.ttls.observe(samples.filter((s) => live.has(s.id)), now);
    const gone = this.ttls.retain(live, now);
    if (changed.length || gone.length) this.leasesEmitter.fire([...changed, ...gone]);
  }

  /** The wait before the next full read. */
  private pollDelay(): number {
    // Never sooner than the last read's cost allows, even when it walked for fair queues too.
    const gap = this.pacer.gapAfter(this.lastFullMs);
    if (this.notifications && this.status.state === 'live') return Math.max(SAFETY_RESYNC_MS, gap);
    return Math.max(this.pacer.intervalMs, gap);
  }

  private schedulePoll(): void {
    if (this.disposed) return;
    const ms = this.pollDelay();
    this.pollTimer = setTimeout(() => void this.requestFull().finally(() => this.schedulePoll()), ms);
  }

  private scheduleSample(): void {
    if (this.disposed) return;
    this.sampleTimer = setTimeout(() => void this.sweep().catch(() => undefined).finally(() => this.scheduleSample()), this.sampleMs);
  }

  lease(id: string): LeaseInfo | undefined {
    return this.ttls.get(id);
  }

  async sweep(): Promise<void> {
    if (this.disposed) return;
    const now = Date.now();
    const keyed = [...this.sources.values()].filter((s) => s.deadline === undefined);
    const waiting = [...this.sources.values()].filter((s) => s.deadline !== undefined);
    let pttls: (number | undefined)[];
    try {
      pttls = await this.deps.topology.pttls(keyed);
    } catch {
      return; // the next poll reports the connection
    }
    const samples: TtlSource[] = [
      ...keyed.map((s, i) => ({ ...s, ms: pttls[i] === undefined || pttls[i] === -1 ? s.ms : pttls[i]! })),
      ...waiting.map((s) => ({ ...s, ms: Math.max(0, s.deadline! - now) })),
    ];
    const changed = this.ttls.observe(samples, now);
    if (changed.length) this.leasesEmitter.fire(changed);
    // A key that expired is a lock gone (or a fair lock left with waiters): read it now rather than at the next poll.
    keyed.forEach((s, i) => pttls[i] === -2 && this.touch(s.keys[0]));
  }

  protected readWhole(): Promise<void> {
    return this.fullRead(false);
  }

  protected stop(): void {
    clearTimeout(this.pollTimer);
    clearTimeout(this.sampleTimer);
    clearTimeout(this.touchTimer);
    clearTimeout(this.fullTimer);
    this.fullTimerDone?.();
    for (const [client, event, l] of this.clientListeners) client.off(event, l);
    for (const entry of this.subscribers.values()) {
      entry.subscriptions.forEach((s) => s.dispose());
      entry.subscriber.dispose();
    }
    this.subscribers.clear();
  }
}

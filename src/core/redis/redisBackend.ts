/**
 * LockLens's Redis store: one verified connection per configured instance (several are independent instances for
 * redlock, never replicas: every one is read and each lock shows on how many of them its holder agrees), or a Redis
 * Cluster, detected on open from `INFO cluster` (every master scanned; see topology.ts), read and watched under key
 * prefixes, with locks recognised by their layout. Redis has no
 * fencing tokens and no lease that owns several keys, and only Redisson's fair locks keep waiters in the store; the
 * capabilities say so. An owner of several holds is one Redisson field, as one thread of Redisson's MultiLock.
 */
import { randomUUID } from 'node:crypto';
import type { ForceReleaseResult, Listing, LockBackend, LockHold, LockOwner, LockWatch, AcquireOptions, WatchOptions } from '../backend';
import { ConnectionScope } from '../connectionScope';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState } from '../lockState';
import type { ConnectionProfile } from '../profile';
import { acquire } from './acquire';
import type { RenewingHold } from './acquire/hold';
import { ReadWriteHolds } from './acquire/readWriteHold';
import { clientSpecs, isClusterNode, openClient, openCluster, type ClientSpec } from './connect';
import { describeForceRelease, forceRelease } from './forceRelease';
import type { ReadOptions } from './keyspaceReader';
import { RedisLockWatch } from './liveWatch';
import { Subscriber } from './subscriber';
import { Topology } from './topology';
import { TtlTable } from './ttlTable';
import { REDIS_CAPABILITIES } from './capabilities';
import { REDLOCK_LAYOUTS } from './layouts';
import type { FreeNameLayouts } from '../storeLayouts';

export class RedisBackend implements LockBackend {
  readonly kind = 'redis' as const;
  readonly capabilities = REDIS_CAPABILITIES;
  /** Our Redisson client id: fields `<uuid>:<n>` of the locks we take the Redisson way. */
  private readonly uuid = randomUUID();
  private threads = 0;
  /** Our read/write holds, whose thread a new acquire on the same name re-enters (see ReadWriteHolds). */
  private readonly readWriteHolds = new ReadWriteHolds();
  private sharedSubscriber: Promise<Subscriber> | undefined;
  /** Watches, holds and waiting acquires taken through this connection: ended when it closes. */
  private readonly scope = new ConnectionScope<RenewingHold>('Redis', closedWhileHeld);
  /** Test seam: see ReadOptions. */
  readOptions: ReadOptions = {};

  private constructor(
    private readonly specs: readonly ClientSpec[],
    /** Where the keys live: one instance, independent instances (redlock), or a cluster's masters. */
    readonly topology: Topology,
  ) {
    if (topology.writeClients.length > 1) this.freeNameLayouts = REDLOCK_LAYOUTS;
  }

  readonly freeNameLayouts?: FreeNameLayouts;

  /**
   * Connects to every endpoint and checks each answers PING, or throws a LockLensError saying why not. A server that
   * is a Redis Cluster node (`cluster_enabled:1`) makes the connection a cluster one, the endpoints its seeds.
   */
  static async open(profile: ConnectionProfile): Promise<RedisBackend> {
    const specs = await clientSpecs(profile);
    const opened = await Promise.allSettled(specs.map((s) => openClient(s)));
    const failed = opened.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    const clients = opened.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    if (failed) {
      for (const c of clients) c.disconnect();
      throw failed.reason;
    }
    const cluster = await Promise.all(clients.map(isClusterNode));
    if (cluster.some(Boolean)) {
      for (const c of clients) c.disconnect();
      if (!cluster.every(Boolean)) {
        const odd = specs.filter((_, i) => !cluster[i]).map((s) => s.endpoint.label);
        throw new LockLensError('INVALID_ARGUMENT', `some endpoints are Redis Cluster nodes and ${odd.join(', ')} is not: give the seeds of one cluster, or independent instances`);
      }
      return new RedisBackend(specs, Topology.ofCluster(await openCluster(specs), specs[0]));
    }
    return new RedisBackend(specs, Topology.ofInstances(clients.map((client, i) => ({ label: specs[i].endpoint.label, client, spec: specs[i] }))));
  }

  private checkOpen(): void {
    this.scope.checkOpen();
  }

  private subscriber(): Promise<Subscriber> {
    // Opened after close(), it would never be disconnected and would keep the process alive.
    this.checkOpen();
    this.sharedSubscriber ??= openClient(this.specs[0], 'locklens-sub').then((c) => new Subscriber(c));
    this.sharedSubscriber.catch(() => (this.sharedSubscriber = undefined));
    return this.sharedSubscriber;
  }

  watch(prefixes: readonly Uint8Array[], options?: WatchOptions): LockWatch {
    this.checkOpen();
    const watch = new RedisLockWatch(
      {
        topology: this.topology,
        openSubscriber: (node) => openClient(node.spec, 'locklens-watch').then((c) => new Subscriber(c)),
        readOptions: this.readOptions,
      },
      prefixes.map((p) => Buffer.from(p)),
      options,
    );
    return this.scope.watch(watch);
  }

  async list(prefixes: readonly Uint8Array[]): Promise<Listing> {
    this.checkOpen();
    const bufs = prefixes.map((p) => Buffer.from(p));
    // Every instance (or master) in parallel; those that are down leave their part out (redlock: not agreeing).
    const { recognized } = await this.topology.read(bufs, this.readOptions);
    const now = Date.now();
    const { locks, ttls } = recognized;
    const table = new TtlTable();
    table.observe(ttls.values(), now);
    return { revision: null, locks, lease: (id) => table.get(id) };
  }

  /** Redisson locks (plain, fair, read/write: the last with a mode) and token keys. */
  acquirable(lock: LockState): boolean {
    // A semaphore's permits are taken where their holders are recorded (not an RSemaphore's: Redis has no trace of them).
    return lock.kind === 'queue' || lock.kind === 'single' || lock.kind === 'readwrite' || (lock.kind === 'semaphore' && lock.permits?.holdersRecorded === true);
  }

  async acquire(name: Uint8Array, options: AcquireOptions): Promise<LockHold> {
    this.checkOpen();
    const signal = this.scope.signal(options.signal);
    const owner = options.owner && ownerOf(options.owner);
    const hold = await acquire(
      {
        clients: this.topology.writeClients,
        subscriber: () => this.subscriber(),
        newField: () => owner?.id ?? this.newField(),
        readWriteHolds: this.readWriteHolds,
      },
      name,
      { ...options, signal },
    );
    owner?.keep(hold);
    return this.scope.hold(hold);
  }

  /**
   * One Redisson field `<uuid>:<n>` for several holds, as one thread of Redisson's MultiLock takes several RLocks: every
   * Redisson lock (plain, fair, read/write) is taken with it. A token lock keeps a random token of its own.
   */
  async openOwner(): Promise<LockOwner> {
    this.checkOpen();
    return new RedisOwner(this.newField());
  }

  private newField(): string {
    return `${this.uuid}:${++this.threads}`;
  }

  forceRelease(lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
    this.checkOpen();
    return forceRelease(this.topology.writeClients, lock, member);
  }

  describeForceRelease(lock: LockState, member: LockMember): string {
    return describeForceRelease(lock, member);
  }

  close(): void {
    // Holds stop renewing and say they are lost now, rather than fail renewals for a whole TTL.
    if (!this.scope.close()) return;
    void this.sharedSubscriber?.then((s) => s.dispose()).catch(() => undefined);
    this.topology.close();
  }

  dispose(): void {
    this.close();
  }
}

function closedWhileHeld(name: Buffer): LockLensError {
  return new LockLensError('LOCK_LOST', `lost ${displayKey(name)}: the Redis connection was closed while it was held (the key expires by its TTL)`);
}

/** A Redisson field several holds share. Nothing in Redis is the owner's own: closing it releases what it still holds. */
class RedisOwner implements LockOwner {
  private readonly holds = new Set<RenewingHold>();

  constructor(readonly id: string) {}

  keep(hold: RenewingHold): void {
    for (const h of this.holds) if (h.ended) this.holds.delete(h);
    this.holds.add(hold);
  }

  async close(): Promise<void> {
    const left = [...this.holds].filter((h) => !h.ended);
    this.holds.clear();
    await Promise.all(left.map((h) => h.release().catch(() => false)));
  }
}

function ownerOf(owner: LockOwner): RedisOwner {
  if (!(owner instanceof RedisOwner)) throw new LockLensError('INVALID_ARGUMENT', `owner ${owner.id} is not a Redisson field opened by this connection`);
  return owner;
}

/**
 * LockLens's Redis store: one verified connection per configured instance (several are independent instances for
 * redlock, never replicas), read and watched under key prefixes, with locks recognised by their layout. Redis has no
 * fencing tokens and no lease that owns several keys, and only Redisson's fair locks keep waiters in the store; the
 * capabilities say so.
 */
import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import type { Capabilities, ForceReleaseResult, Listing, LockBackend, LockHold, LockWatch, AcquireOptions, WatchOptions } from '../backend';
import { LockLensError } from '../errors';
import type { LockMember, LockState } from '../lockState';
import type { ConnectionProfile } from '../profile';
import { acquire } from './acquire';
import { clientSpecs, openClient, type ClientSpec } from './connect';
import { describeForceRelease, forceRelease } from './forceRelease';
import { readSnapshot, recognizeSnapshot, type ReadOptions } from './keyspaceReader';
import { RedisLockWatch } from './liveWatch';
import { Subscriber } from './subscriber';
import { TtlTable } from './ttlTable';

export const REDIS_CAPABILITIES: Capabilities = {
  waiters: true,
  fencingTokens: false,
  ttl: true,
  owner: 'token',
  revokeOwner: false,
  queuedAcquire: false,
};

export class RedisBackend implements LockBackend {
  readonly kind = 'redis' as const;
  readonly capabilities = REDIS_CAPABILITIES;
  /** Our Redisson client id: fields `<uuid>:<n>` of the locks we take the Redisson way. */
  private readonly uuid = randomUUID();
  private threads = 0;
  private sharedSubscriber: Promise<Subscriber> | undefined;
  private readonly watches = new Set<RedisLockWatch>();
  private closed = false;
  /** Test seam: see ReadOptions. */
  readOptions: ReadOptions = {};

  private constructor(
    private readonly specs: readonly ClientSpec[],
    private readonly clients: readonly Redis[],
  ) {}

  /** Connects to every endpoint and checks each answers PING, or throws a LockLensError saying why not. */
  static async open(profile: ConnectionProfile): Promise<RedisBackend> {
    const specs = await clientSpecs(profile);
    const opened = await Promise.allSettled(specs.map((s) => openClient(s)));
    const failed = opened.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      for (const r of opened) if (r.status === 'fulfilled') r.value.disconnect();
      throw failed.reason;
    }
    return new RedisBackend(specs, opened.map((r) => (r as PromiseFulfilledResult<Redis>).value));
  }

  private checkOpen(): void {
    if (this.closed) throw new LockLensError('CLOSED', 'the Redis connection is closed');
  }

  private subscriber(): Promise<Subscriber> {
    this.sharedSubscriber ??= openClient(this.specs[0], 'locklens-sub').then((c) => new Subscriber(c));
    this.sharedSubscriber.catch(() => (this.sharedSubscriber = undefined));
    return this.sharedSubscriber;
  }

  watch(prefixes: readonly Uint8Array[], options?: WatchOptions): LockWatch {
    this.checkOpen();
    const spec = this.specs[0];
    const watch = new RedisLockWatch(
      {
        client: this.clients[0],
        db: spec.endpoint.db,
        endpointLabel: spec.endpoint.label,
        openSubscriber: () => openClient(spec, 'locklens-watch').then((c) => new Subscriber(c)),
        readOptions: this.readOptions,
      },
      prefixes.map((p) => Buffer.from(p)),
      options,
    );
    this.watches.add(watch);
    const dispose = watch.dispose.bind(watch);
    watch.dispose = () => {
      this.watches.delete(watch);
      dispose();
    };
    return watch;
  }

  async list(prefixes: readonly Uint8Array[]): Promise<Listing> {
    this.checkOpen();
    const bufs = prefixes.map((p) => Buffer.from(p));
    const raw = await readSnapshot(this.clients[0], bufs, this.readOptions);
    const now = Date.now();
    const { locks, ttls } = recognizeSnapshot(raw, bufs, now);
    const table = new TtlTable();
    table.observe(ttls.values(), now);
    return { revision: null, locks, lease: (id) => table.get(id) };
  }

  /** Redisson locks (plain and fair) and token keys; a read/write lock only from Redisson itself. */
  acquirable(lock: LockState): boolean {
    return lock.kind === 'queue' || lock.kind === 'single';
  }

  acquire(name: Uint8Array, options: AcquireOptions): Promise<LockHold> {
    this.checkOpen();
    return acquire(
      { clients: this.clients, subscriber: () => this.subscriber(), newField: () => `${this.uuid}:${++this.threads}` },
      name,
      options,
    );
  }

  forceRelease(lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
    this.checkOpen();
    return forceRelease(this.clients, lock, member);
  }

  describeForceRelease(lock: LockState, member: LockMember): string {
    return describeForceRelease(lock, member);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of [...this.watches]) w.dispose();
    void this.sharedSubscriber?.then((s) => s.dispose()).catch(() => undefined);
    for (const c of this.clients) c.disconnect();
  }

  dispose(): void {
    this.close();
  }
}

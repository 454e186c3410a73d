/**
 * LockLens's ZooKeeper store: one session for reading and watching the locks under the user's paths (renewed when
 * the ensemble expires it), a session of its own for every lock taken (see acquire.ts) or one shared by several
 * (an owner), and force-release by deleting
 * the holder's node if it is still the one shown. ZooKeeper has no per-node TTL, so nothing counts down; sessions own
 * the nodes, and a session's remaining time cannot be read.
 */
import type { AcquireOptions, ForceReleaseResult, Listing, LockBackend, LockHold, LockOwner, LockWatch, WatchOptions } from '../backend';
import { ConnectionScope } from '../connectionScope';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import { byName, members, type LockMember, type LockState } from '../lockState';
import type { ConnectionProfile } from '../profile';
import { startAcquire, type ZooKeeperHold } from './acquire';
import { ZkConnection, ensembleOf, openSession } from './connect';
import type { ZooKeeperServer } from './url';
import type { SessionSpec, ZkClient } from './client';
import { describeForceRelease, forceRelease } from './forceRelease';
import { ZooKeeperLockWatch } from './liveWatch';
import { ZnodeTree, distinctRoots, rootOf } from './znodeTree';
import { ZOOKEEPER_CAPABILITIES } from './capabilities';
import { readConnections, withConnections } from './cons';
import { acquireLockOrPermit } from './semaphoreAcquire';

export class ZooKeeperBackend implements LockBackend {
  readonly kind = 'zookeeper' as const;
  readonly capabilities = ZOOKEEPER_CAPABILITIES;
  /** Watches, holds and waiting acquires taken through this connection: ended when it closes. */
  private readonly scope = new ConnectionScope<ZooKeeperHold>('ZooKeeper', closedWhileHeld);
  /** Sessions opened for several holds: closed with the connection if their owner has not closed them. */
  private readonly owners = new Set<ZooKeeperOwner>();

  private constructor(
    readonly connection: ZkConnection,
    private readonly spec: SessionSpec,
    private readonly servers: readonly ZooKeeperServer[],
  ) {}

  /** Opens the reading session, or throws a LockLensError saying why not (unreachable, not ZooKeeper, …). */
  static async open(profile: ConnectionProfile): Promise<ZooKeeperBackend> {
    const { url, spec } = ensembleOf(profile);
    return new ZooKeeperBackend(await ZkConnection.open(spec, url.servers), spec, url.servers);
  }

  private checkOpen(): void {
    this.scope.checkOpen();
  }

  watch(prefixes: readonly Uint8Array[], options?: WatchOptions): LockWatch {
    this.checkOpen();
    return this.scope.watch(new ZooKeeperLockWatch(this.connection, distinctRoots(prefixes.map(rootOf)), this.servers, options));
  }

  async list(prefixes: readonly Uint8Array[]): Promise<Listing> {
    this.checkOpen();
    const tree = new ZnodeTree(() => this.connection.client, distinctRoots(prefixes.map(rootOf)));
    await tree.readAll();
    const read = tree.locks().sort(byName);
    // Asked after the read: a session seen connected now was so when its nodes were read.
    const { bySession, hidden } = await readConnections(this.servers);
    const source = `cons on ${this.servers.map((s) => `${s.host}:${s.port}`).join(', ')}`;
    const locks = bySession ? withConnections(read, bySession, source) : read;
    return { revision: null, locks, lease: () => undefined, ...(hidden ? { hidden } : {}) };
  }

  /**
   * Locks, read/write locks and kazoo's semaphores; not an election (a leader latch), nor a Curator semaphore, whose
   * acquire needs the limit its clients are given (`permitLimit`), which the store does not record.
   */
  acquirable(lock: LockState): boolean {
    return lock.kind === 'queue' || lock.kind === 'readwrite' || members(lock).some((m) => m.convention === 'kazoo-semaphore');
  }

  async acquire(name: Uint8Array, options: AcquireOptions): Promise<LockHold> {
    this.checkOpen();
    const ownerSession = options.owner && this.sessionOf(options.owner);
    const context = { openSession: (timeoutMs: number) => this.openSession(timeoutMs), ownerSession };
    const scoped = { ...options, signal: this.scope.signal(options.signal) };
    return this.scope.hold(await acquireLockOrPermit(await startAcquire(context, name, scoped), scoped));
  }

  /** One session for several locks, as one kazoo client holds several: its timeout is the TTL asked for. */
  async openOwner(ttlSeconds: number): Promise<LockOwner> {
    this.checkOpen();
    if (!(ttlSeconds > 0)) throw new LockLensError('INVALID_ARGUMENT', 'the TTL (the session timeout) must be positive');
    const owner = new ZooKeeperOwner(await this.openSession(Math.max(1, Math.round(ttlSeconds * 1000))), (o) => this.owners.delete(o));
    this.owners.add(owner);
    return owner;
  }

  private openSession(sessionTimeoutMs: number): Promise<ZkClient> {
    return openSession({ ...this.spec, sessionTimeoutMs }, this.servers);
  }

  private sessionOf(owner: LockOwner): ZkClient {
    if (!(owner instanceof ZooKeeperOwner) || !this.owners.has(owner)) throw new LockLensError('INVALID_ARGUMENT', `owner ${owner.id} is not a session opened by this connection`);
    return owner.session;
  }

  forceRelease(lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
    this.checkOpen();
    return forceRelease(this.connection.client, lock, member);
  }

  describeForceRelease(lock: LockState, member: LockMember): string {
    return describeForceRelease(lock, member);
  }

  close(): void {
    if (!this.scope.close()) return;
    for (const owner of [...this.owners]) void owner.close();
    void this.connection.close();
  }

  dispose(): void {
    this.close();
  }
}

function closedWhileHeld(name: Buffer): LockLensError {
  return new LockLensError('LOCK_LOST', `lost ${displayKey(name)}: the ZooKeeper connection was closed while it was held (its session was closed, deleting its node)`);
}

/** A session several holds share; closing it deletes whatever node is still on it. */
class ZooKeeperOwner implements LockOwner {
  constructor(
    readonly session: ZkClient,
    private readonly onClose: (owner: ZooKeeperOwner) => void,
  ) {}

  get id(): string {
    return this.session.sessionId;
  }

  close(): Promise<void> {
    this.onClose(this);
    return this.session.close();
  }
}

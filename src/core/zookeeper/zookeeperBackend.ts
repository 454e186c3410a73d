/**
 * LockLens's ZooKeeper store: one session for reading and watching the locks under the user's paths (renewed when
 * the ensemble expires it), a session of its own for every lock taken (see acquire.ts), and force-release by deleting
 * the holder's node if it is still the one shown. ZooKeeper has no per-node TTL, so nothing counts down; sessions own
 * the nodes, and a session's remaining time cannot be read.
 */
import type { AcquireOptions, ForceReleaseResult, Listing, LockBackend, LockHold, LockWatch, WatchOptions } from '../backend';
import { ConnectionScope } from '../connectionScope';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState } from '../lockState';
import type { ConnectionProfile } from '../profile';
import { acquire, type ZooKeeperHold } from './acquire';
import { ZkConnection, ensembleOf, openSession } from './connect';
import type { ZooKeeperServer } from './url';
import type { SessionSpec } from './client';
import { describeForceRelease, forceRelease } from './forceRelease';
import { ZooKeeperLockWatch } from './liveWatch';
import { ZnodeTree, distinctRoots, rootOf } from './znodeTree';
import { ZOOKEEPER_CAPABILITIES } from './capabilities';
import { readConnections, withConnections } from './cons';

export class ZooKeeperBackend implements LockBackend {
  readonly kind = 'zookeeper' as const;
  readonly capabilities = ZOOKEEPER_CAPABILITIES;
  /** Watches, holds and waiting acquires taken through this connection: ended when it closes. */
  private readonly scope = new ConnectionScope<ZooKeeperHold>('ZooKeeper', closedWhileHeld);

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
    return this.scope.watch(new ZooKeeperLockWatch(this.connection, distinctRoots(prefixes.map(rootOf)), options));
  }

  async list(prefixes: readonly Uint8Array[]): Promise<Listing> {
    this.checkOpen();
    const tree = new ZnodeTree(() => this.connection.client, distinctRoots(prefixes.map(rootOf)));
    await tree.readAll();
    const read = tree.locks().sort((a, b) => Buffer.compare(a.name, b.name));
    // Asked after the read: a session seen connected now was so when its nodes were read.
    const { bySession, hidden } = await readConnections(this.servers);
    const source = `cons on ${this.servers.map((s) => `${s.host}:${s.port}`).join(', ')}`;
    const locks = bySession ? withConnections(read, bySession, source) : read;
    return { revision: null, locks, lease: () => undefined, ...(hidden ? { hidden } : {}) };
  }

  /** Locks and read/write locks; an election (a leader latch) is not joined. */
  acquirable(lock: LockState): boolean {
    return lock.kind === 'queue' || lock.kind === 'readwrite';
  }

  async acquire(name: Uint8Array, options: AcquireOptions): Promise<LockHold> {
    this.checkOpen();
    const openHoldSession = (sessionTimeoutMs: number) => openSession({ ...this.spec, sessionTimeoutMs }, this.servers);
    return this.scope.hold(await acquire({ openSession: openHoldSession }, name, { ...options, signal: this.scope.signal(options.signal) }));
  }

  forceRelease(lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
    this.checkOpen();
    return forceRelease(this.connection.client, lock, member);
  }

  describeForceRelease(lock: LockState, member: LockMember): string {
    return describeForceRelease(lock, member);
  }

  close(): void {
    if (this.scope.close()) void this.connection.close();
  }

  dispose(): void {
    this.close();
  }
}

function closedWhileHeld(name: Buffer): LockLensError {
  return new LockLensError('LOCK_LOST', `lost ${displayKey(name)}: the ZooKeeper connection was closed while it was held (its session was closed, deleting its node)`);
}

import type { Disposable, Event } from './emitter';
import type { LockLensError } from './errors';
import type { HistoryOperations } from './history';
import type { LeaseInfo } from './leaseInfo';
import type { ChangeSet, LockMember, LockState } from './lockState';
import type { FreeNameLayouts } from './storeLayouts';

/**
 * The one contract between LockLens and a store that keeps locks. Every store (etcd, Redis, …) implements it in its
 * own folder under src/core/; the tree, the timeline, the commands and the CLI talk only to this. What a store cannot
 * do it says in `capabilities`, and views adapt to what is declared instead of asking which store they show (the way
 * Grafana data sources declare what they support).
 */

/**
 * What a store has and can do. Views read these; they never test `kind`. What a store can do through a part of its
 * own (revoke leases, replay history) is not a flag here: that part of the backend is present or absent.
 */
export interface Capabilities {
  /** Waiters are visible in the store, in queue order (etcd queues, Redisson fair locks). */
  readonly waiters: boolean;
  /** Members carry a fencing token (etcd: the create revision; ZooKeeper: the node's creation zxid). */
  readonly fencingTokens: boolean;
  /** Members carry a TTL that can be sampled (etcd leases, Redis PTTL; not ZooKeeper sessions). */
  readonly ttl: boolean;
  /**
   * What `LockMember.owner` is, for labels: an etcd lease, a Redis token or client field, a ZooKeeper session (which,
   * like a lease, owns several nodes and ends them when it expires, but has no TTL to read and cannot be revoked), a
   * database connection (a PostgreSQL backend pid, a MySQL connection id: its locks end when it does, and a force
   * release terminates it).
   */
  readonly owner: 'lease' | 'token' | 'session' | 'connection';
  /** Acquire from LockLens queues fairly and reports its position (false: it retries until the lock is free). */
  readonly queuedAcquire: boolean;
  /**
   * The store has read/write locks that LockLens takes for reading or for writing (Redisson's RReadWriteLock):
   * `AcquireOptions.mode` is then accepted, and an acquire on such a lock needs one.
   */
  readonly readWriteLocks: boolean;
}

/** How a read/write lock is taken: shared with other readers, or alone. */
export type LockMode = 'read' | 'write';

export type LiveState = 'loading' | 'live' | 'resyncing' | 'reconnecting' | 'closed';

export interface LiveStatus {
  readonly state: LiveState;
  /** Why the view is not live, for the user. */
  readonly error?: LockLensError;
  /** How the view is kept current, when that is worth saying ("polling every 1 s: keyspace notifications are off"). */
  readonly detail?: string;
  /**
   * Nodes of the store that could not be read (a redlock instance, a cluster master) while the others were: the view
   * is partial, and `detail` says what that means for it.
   */
  readonly unreachable?: readonly string[];
  /**
   * What the store would not show LockLens and how to see it ("2 sessions of other roles show no query: GRANT
   * pg_read_all_stats TO …"): what is listed is true, but not all there is.
   */
  readonly hidden?: string;
}

/** The live locks under a connection's prefixes, and the TTLs of what they expire with. */
export interface LockWatch extends Disposable {
  /** Loads the prefixes, then follows them until disposed. */
  start(): Promise<void>;
  readonly status: LiveStatus;
  readonly onDidChangeStatus: Event<LiveStatus>;
  /** Coalesced: one change set per burst, each lock once. */
  readonly onDidChangeLocks: Event<ChangeSet>;
  /** TTL samples (counted down, refreshed, stalled, expired). */
  readonly onDidChangeLeases: Event<readonly LeaseInfo[]>;
  /** Every lock, in the store's order of names. */
  locks(): LockState[];
  /** Every lock, in no order: for a pass over them all that sorts by its own measure or needs none (serve's scrapes). */
  unordered(): Iterable<LockState>;
  lock(id: string): LockState | undefined;
  /** The sampled TTL a member expires with (`LockMember.lease`). */
  lease(id: string): LeaseInfo | undefined;
  /**
   * Whether the session or connection with this id (the `lease` of a member that ends with it) was there at the
   * watch's last read: what tells a lock its owner let go of from one lost with its owner (holdEndEvidence.ts).
   * undefined for an id that is no such member's, or where the store would not say.
   */
  ownerLives?(id: string): boolean | undefined;
  /** Samples every TTL now: after a command that changed something, say. */
  sweep(): Promise<void>;
  /**
   * Resolves once the model has caught up with the store as of this call: for commands acting on what was shown, and
   * for the second read that confirms a deadlock. Rejects when the store could not be read (the model is then as it
   * was) or the watch was closed.
   */
  sync(): Promise<void>;
}

/** A listing at one point in time, for the CLI. */
export interface Listing {
  /** The store's revision where it has one. */
  readonly revision: number | null;
  readonly locks: readonly LockState[];
  lease(id: string): LeaseInfo | undefined;
  /** What the store would not show (see `LiveStatus.hidden`). */
  readonly hidden?: string;
}

export interface QueuePosition {
  /** The member we queue (and will hold) with: our key, or field. */
  readonly key: Buffer;
  /** Members ahead in the queue, the holder included; 0: held. */
  readonly ahead: number;
  /** The fencing token this waiter will hold the lock with, where the store has one. */
  readonly fencingToken: number | null;
  /**
   * With `ahead` 0, where the store has revisions: the revision the lock became ours at, told before the hold is set
   * up, so that a caller waiting to run something under the lock (the CLI's gated command) can start it at once.
   */
  readonly revision?: number;
}

export interface AcquireOptions {
  /** Seconds the lock outlives us if we die: a lease TTL, a PX. LockLens renews it while it holds. */
  readonly ttlSeconds: number;
  /** Abort to stop waiting: whatever was queued is removed. */
  readonly signal?: AbortSignal;
  /** Do not wait: throw LOCKED naming the holder if the lock is held. */
  readonly tryOnly?: boolean;
  /** Told the queue position at once and as it moves (stores without a queue: ahead 1 while held by another). */
  readonly onQueue?: (position: QueuePosition) => void;
  /**
   * Take a read/write lock for reading or writing (a free name becomes one). Only where `capabilities.readWriteLocks`;
   * elsewhere, or on a name that holds another kind of lock, the acquire is refused with INVALID_ARGUMENT.
   */
  readonly mode?: LockMode;
  /**
   * Take the lock as this owner (from this backend's `openOwner`) rather than one of its own: the hold's `release`
   * then gives back this lock alone, and the owner, with anything else it holds, lives on until it is closed.
   */
  readonly owner?: LockOwner;
  /**
   * The layout to take a free name in, by the id a store's descriptor lists for it (see issue 20's layouts of a free
   * name); ignored when the name holds a lock already, whose own layout is then taken. An id the store does not list
   * is INVALID_ARGUMENT. Absent: the layout the store took before layouts could be chosen (Redis: a token, ZooKeeper:
   * kazoo's, etcd: Go's Mutex); the CLI and VS Code always pass one, the descriptor's default where nothing else
   * decides (freeNameLayout.ts).
   */
  readonly layout?: string;
  /**
   * How many permits a semaphore has, for the layouts that do not record it (a redis-semaphore's or a Curator
   * InterProcessSemaphoreV2's limit is an argument of every client's call): a permit is taken only while fewer are
   * held. Where the store records the limit (kazoo), a different figure is refused, as the clients refuse it.
   */
  readonly permitLimit?: number;
}

/**
 * One owner for several acquires, as Go's `concurrency.NewSession` under several Mutexes or Redisson's MultiLock: an
 * etcd lease, a ZooKeeper session, a Redisson field. Holding one lock while waiting for another is then one owner doing
 * both, which is what others see in the store (and what a deadlock is made of). A lock whose layout has no owner to
 * share (a Redis token lock) is still taken with one of its own.
 */
export interface LockOwner {
  /** The owner in the store's terms, as the holds taken with it show it (`LockHold.owner`) where their layout has one. */
  readonly id: string;
  /** Ends the owner and, with it, whatever it still holds (etcd: revokes the lease). */
  close(): Promise<void>;
}

/** A lock held from LockLens. It says the moment it is lost: a holder is never silently assumed. */
export interface LockHold extends Disposable {
  readonly name: Buffer;
  /** The member that holds: the key (or field) as the lock's members show it. */
  readonly key: Buffer;
  /** Our owner in the store's terms (lease hex, token, Redisson field). */
  readonly owner: string;
  readonly fencingToken: number | null;
  /** The store revision at which we became the holder, where the store has revisions. */
  readonly revision: number | null;
  readonly lost: LockLensError | undefined;
  readonly onDidLose: Event<LockLensError>;
  /** Owner-only release, and the end of whatever kept it alive. Resolves false when it had already been lost. */
  release(): Promise<boolean>;
  /**
   * Stops keeping it alive without waiting for the store: what is left expires with its TTL (etcd leaves its key to
   * the lease; Redis also sends its owner-only release, in the background). For shutdown paths; prefer `release`.
   */
  dispose(): void;
}

export interface ForceReleaseResult {
  /** What was deleted or changed, for the audit log and the user. */
  readonly keys: readonly Buffer[];
  /** What the store did, in a few words ("deleted the key", "deleted the hash and woke its waiters"). */
  readonly action: string;
}

/** Leases (etcd's): owners that hold several keys and can be revoked as a whole. */
export interface LeaseOperations {
  /** Remaining and granted TTL and the keys attached; ttl < 0 when the lease does not exist. */
  describe(id: string): Promise<{ readonly ttl: number; readonly grantedTtl: number; readonly keys: readonly Buffer[] }>;
  /**
   * Whether the lease still exists, without its keys: how a deleted key's hold ended (released, or gone with its lease)
   * is asked at every release, and a session's lease may carry thousands of keys.
   */
  lives(id: string): Promise<boolean>;
  revoke(id: string): Promise<{ readonly keys: readonly Buffer[]; readonly revision: number }>;
}

export interface LockBackend extends Disposable {
  /** Its store's `StoreKind` (stores.ts), for logs and messages: views read `capabilities`, never this. */
  readonly kind: string;
  readonly capabilities: Capabilities;
  /**
   * Present where owners are leases that can be revoked as a whole (an etcd lease deletes every key attached to it):
   * the presence is the capability.
   */
  readonly leases?: LeaseOperations;
  /** Present where the store keeps its past and can replay a lock's holds from it (etcd's MVCC revisions). */
  readonly history?: HistoryOperations;
  /**
   * Present where this connection takes fewer layouts than its store's descriptor lists (several independent Redis
   * instances take token locks only); `layoutsOf` in stores.ts reads one or the other.
   */
  readonly freeNameLayouts?: FreeNameLayouts;
  /** Follows the locks under `prefixes` (bytes, as the store's keys are). */
  watch(prefixes: readonly Uint8Array[], options?: WatchOptions): LockWatch;
  list(prefixes: readonly Uint8Array[]): Promise<Listing>;
  /** Whether `acquire(lock.name)` joins this lock (etcd: queues, not single keys or elections). */
  acquirable(lock: LockState): boolean;
  /** Takes the lock `name` interoperably with the clients that use that name (the layout the lock already has). */
  acquire(name: Uint8Array, options: AcquireOptions): Promise<LockHold>;
  /**
   * Present where several acquires can share one owner (`AcquireOptions.owner`): the presence is the capability.
   * `ttlSeconds` is the owner's, as an acquire's own would be (a lease TTL, a session timeout).
   */
  openOwner?(ttlSeconds: number): Promise<LockOwner>;
  /**
   * Releases someone else's hold, the store's safe way, and only if it is still what the user was shown (the same
   * owner and token): never a lock that changed hands meanwhile (then it throws LOCK_CHANGED).
   */
  forceRelease(lock: LockState, member: LockMember): Promise<ForceReleaseResult>;
  /** What `forceRelease` will do to this member, in one or two sentences, for the confirmation. */
  describeForceRelease(lock: LockState, member: LockMember): string;
  /** Closes the connection; holds taken through it are lost. */
  close(): void;
}

export interface WatchOptions {
  /** How often TTLs are sampled (stores never push them). */
  readonly leaseSampleIntervalMs?: number;
  /** How often a store without change notifications is read again. */
  readonly pollIntervalMs?: number;
  /** Views are told at most once per this interval (a quiet store's change at once); 0 turns coalescing off. */
  readonly minNotifyIntervalMs?: number;
  /**
   * Whether TTL samples that only count down what was known are taken and told (default true): VS Code's tree redraws
   * its TTL rows from them. False (serve, which reads a countdown when scraped): a TTL is sampled and told only when it
   * could say something new (a refresh, a stall, an expiry: see `leaseInfo.ts`'s `sampleDue` and `tellsNews`).
   */
  readonly countdowns?: boolean;
  /**
   * How long the changes a store pushes (Redis' keyspace notifications, ZooKeeper's watch events) are gathered before
   * the locks they name are read (default 2 ms: one script's or one socket read's notifications are one read). Longer
   * reads a handoff (a release, then the next holder's take) once instead of twice, at that much more delay.
   */
  readonly readDelayMs?: number;
  readonly log?: (message: string) => void;
}

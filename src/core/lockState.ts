/**
 * Locks as every view shows them, whatever store holds them: a lock has a holder (or, for read locks, several), and
 * waiters in queue order where the store keeps a queue. Each store's backend fills in what it has (an etcd member has
 * a lease and a create revision; a Redisson holder has a hold count; a redis-py token lock has neither waiters nor a
 * fencing token) and leaves the rest null, so a view shows what a store has and never invents the rest.
 */
import { compareText } from '../shared/compareText';

/**
 * How a lock behaves: one queue (holder, then waiters), one key (held while it exists), an election, a read/write
 * lock, or a semaphore (N permits, each held by one member: `holder` and `sharedWith` are the permit holders).
 */
export type LockKind = 'queue' | 'single' | 'election' | 'readwrite' | 'semaphore';

/**
 * What ends a member whose owner is gone: an etcd `lease` (revocable, shared by the owner's keys), a `ttl` of its own
 * (a Redis PX, a lock-table row's expiry column), its owner's ZooKeeper `session`, the database `connection` that
 * holds it (a PostgreSQL advisory lock, a GET_LOCK: no TTL, and never held forever), or `nothing`: it stays held until
 * someone deletes it.
 */
export type Expiry = 'lease' | 'ttl' | 'session' | 'connection' | 'nothing';

/** It ends with its owner's session or connection, whose id is its `lease` (and its `owner`). */
export function endsWithOwner(m: Pick<LockMember, 'expiresWith'>): boolean {
  return m.expiresWith === 'session' || m.expiresWith === 'connection';
}

export interface LockMember {
  /** The member's identity, unique within its lock: an etcd key, a Redis key, a Redisson `<uuid>:<thread>` field. */
  readonly key: Buffer;
  /** Which library's layout it follows (`go-mutex`, `redisson-lock`, `redis-token`, …): see each store's conventions. */
  readonly convention: string;
  /** Who owns it, in the store's own terms (see `Capabilities.owner`): a lease in hex, a Redisson field, a token. */
  readonly owner: string;
  /** What ends the member if its owner goes away without releasing it. */
  readonly expiresWith: Expiry;
  /**
   * The id it expires under: in its watch's table of sampled TTLs (`LockWatch.lease`) where the store samples them (an
   * etcd lease in hex, a Redis key, a lock-table row), else its session or connection. '' exactly when `expiresWith`
   * is 'nothing'.
   */
  readonly lease: string;
  /** The fencing token it holds (or will hold) the lock with, where the store has one (etcd: the create revision). */
  readonly token: number | null;
  /** How many times its owner holds it (re-entrant locks: Redisson), else null. */
  readonly holds: number | null;
  /** For read/write locks: which side it is on. */
  readonly mode?: 'read' | 'write';
  /** When a waiter gives up waiting (epoch ms), where the store says (Redisson fair locks). */
  readonly deadline?: number;
  /** The store revision of its last change, where the store has revisions (etcd's mod revision). */
  readonly revision?: number;
  /**
   * Several independent instances (redlock): on how many of the configured instances this member holds the lock
   * (`agree`, out of `of`; an unreachable instance counts as not agreeing), and which (their host:port labels). It
   * holds the lock in redlock's sense only when `agree > of / 2` (see `hasMajority`). Absent for a single instance or
   * a cluster, where a key lives in one place.
   */
  readonly quorum?: { readonly agree: number; readonly of: number; readonly instances?: readonly string[] };
  /** The database session behind the member (SQL stores): who, from where, since when, doing what. */
  readonly session?: SessionInfo;
  /**
   * Its owner's client connection as the server shows it, where a store can ask (ZooKeeper's `cons`): what tells a
   * live owner from a paused or gone one (see liveness.ts). Absent when the store was not asked or would not say.
   */
  readonly connection?: ClientConnection;
  /**
   * The stored value says who the owner is (a ZooKeeper contender's data: kazoo's identifier, Curator's client IP):
   * views name the member by it, where it is short text, rather than by its key.
   */
  readonly valueNamesOwner?: boolean;
  /** The start of the stored value (an election's proposal, a ShedLock's `ADDED:…@host`), at most a few KB. */
  readonly valuePreview: Buffer;
  readonly valueSize: number;
}

/** The valuePreview of a member that stores no value (a database session's hold): one empty buffer, shared. */
export const NO_VALUE: Buffer = Buffer.alloc(0);

/**
 * A database session as the server describes it (PostgreSQL `pg_stat_activity`, MySQL's processlist), for the people
 * deciding whether to terminate it. Fields the reader may not see (another user's session) are absent.
 */
export interface SessionInfo {
  readonly user?: string;
  readonly application?: string;
  /** host:port the client connected from. */
  readonly client?: string;
  /** When the session connected (epoch ms). */
  readonly connectedAt?: number;
  /** What it is doing ("idle", "active", "idle in transaction", "User lock"). */
  readonly state?: string;
  /** Its current or last statement, at most a few KB. */
  readonly query?: string;
  /** When it began waiting for this lock (epoch ms), where the server says (PostgreSQL 14+ `waitstart`). */
  readonly waitingSince?: number;
}

/** An owner's client connection as a server shows it (ZooKeeper's `cons`), for liveness. */
export interface ClientConnection {
  /** host:port its client connects from; absent when no server shows a connection for the owner. */
  readonly client?: string;
  /** When the server last heard from it (epoch ms, the server's clock). */
  readonly lastHeardAt?: number;
  /** A running client speaks at least this often (its pings): silence beyond it means it stopped. */
  readonly quietLimitMs: number;
  /** Where this was read, for the evidence ("ZooKeeper's cons on host:port"). */
  readonly source: string;
}

export interface LockState {
  /** Lossless identity of the lock within its connection (see keys.keyId). */
  readonly id: string;
  readonly name: Buffer;
  /**
   * The same lock's name in another form people use for it (a PostgreSQL bigint advisory key as the int pair of its
   * halves, `(classid, objid)` as pg_locks shows it), for display only.
   */
  readonly altName?: string;
  readonly kind: LockKind;
  readonly holder: LockMember | null;
  /** Others holding at the same time as `holder`: the other readers of a read lock. Absent for exclusive locks. */
  readonly sharedWith?: readonly LockMember[];
  /** In queue order: the order in which they will hold it. */
  readonly waiters: readonly LockMember[];
  /** A semaphore's permits (kind 'semaphore' only). */
  readonly permits?: Permits;
}

/**
 * A semaphore's permits as far as its store records them. Each figure is null where only the clients know it: the
 * limit of a redis-semaphore or a Curator InterProcessSemaphoreV2 is an argument of every call, not stored; a Redisson
 * RSemaphore is a bare counter of free permits whose holders are nowhere in Redis.
 */
export interface Permits {
  /** How many permits the semaphore has in all (kazoo stores it in the semaphore's node), else null. */
  readonly limit: number | null;
  /** How many are free now, where the store counts them (RSemaphore's value) or `limit` minus the holders. */
  readonly free: number | null;
  /**
   * Whether the store records who holds each permit. False for RSemaphore: `holder` and `sharedWith` are then empty
   * and views say that the holders are not recorded, rather than that nobody holds it.
   */
  readonly holdersRecorded: boolean;
}

// What each kind of lock is, for views: tables over every kind, so that a new kind has to say where it stands.

/** A single-key lock is its one key, held while it exists (a token lock, a lock-table row): no queue of members. */
export function isSingleKey(lock: LockState): boolean {
  return SINGLE_KEY[lock.kind];
}

/** An election's holder is its leader and its waiters are candidates. */
export function isElection(lock: LockState): boolean {
  return ELECTION[lock.kind];
}

/** A read/write lock is taken for reading or for writing. */
export function isReadWrite(lock: LockState): boolean {
  return READ_WRITE[lock.kind];
}

const SINGLE_KEY: Readonly<Record<LockKind, boolean>> = {
  single: true, queue: false, election: false, readwrite: false, semaphore: false,
};
const ELECTION: Readonly<Record<LockKind, boolean>> = {
  election: true, queue: false, single: false, readwrite: false, semaphore: false,
};
const READ_WRITE: Readonly<Record<LockKind, boolean>> = {
  readwrite: true, queue: false, single: false, election: false, semaphore: false,
};
const SEMAPHORE: Readonly<Record<LockKind, boolean>> = {
  semaphore: true, queue: false, single: false, election: false, readwrite: false,
};

/** A semaphore: several members hold its permits at once, up to its limit. */
export function isSemaphore(lock: LockState): boolean {
  return SEMAPHORE[lock.kind];
}

/** Whether a member shown per instance (`quorum`) holds on a majority of them; true when there is no quorum to check. */
export function hasMajority(member: LockMember): boolean {
  return !member.quorum || member.quorum.agree > member.quorum.of / 2;
}

/** The holders, then the waiters: the queue in the order the store serves it. */
export function members(lock: LockState): LockMember[] {
  const holders = lock.holder ? [lock.holder, ...(lock.sharedWith ?? [])] : [];
  return [...holders, ...lock.waiters];
}

/**
 * Locks in the order of their names' bytes: the order of a listing and of a change set. A function made once, not a
 * comparator written where it sorts: V8 holds a function's optimized code only while the function lives, so a
 * comparator made per sort was optimized again after every full collection, by every poll and every scrape
 * (docs/BENCHMARKS.md, serve, the sixth round).
 */
export function byName(a: LockState, b: LockState): number {
  return Buffer.compare(a.name, b.name);
}

/** By id, as strings compare (a Redis lock's id sorts as its name's bytes do: one char per byte). */
export function byId(a: { readonly id: string }, b: { readonly id: string }): number {
  return compareText(a.id, b.id);
}

/** How many members hold the lock now (they come first in `members`). */
export function holderCount(lock: LockState): number {
  return lock.holder ? 1 + (lock.sharedWith?.length ?? 0) : 0;
}

/** What changed since the last change set: the current state of each touched lock, and the locks now gone. */
export interface ChangeSet {
  /** The store's revision where it has one (etcd), else a counter of reads. */
  readonly revision: number;
  readonly changed: readonly LockState[];
  readonly removed: readonly string[];
  /** True when the change came from a full reload (resync), not from watch events alone. */
  readonly resynced: boolean;
}

/**
 * A lock's past: the holds it had, in the order it had them. Two sources fill it: a store that keeps its own history
 * replays it (etcd's MVCC revisions, back to the last compaction: `HistoryOperations`), and every store's live watch
 * is recorded while LockLens looks (`lockStats.ts`). The types are store-neutral, as `lockState.ts` is.
 */

/** How a hold ended, as far as can be told (the vocabulary and its meanings: src/shared/holdEnds.ts). */
export { HOLD_ENDS, type HoldEnd } from '../shared/holdEnds';
import type { HoldEnd } from '../shared/holdEnds';

/** The ends a lease's state after its key went can tell (see holdEnd). */
export type LeaseEnd = Extract<HoldEnd, 'released' | 'revokedOrExpired'>;

/** How many waiters' keys a replayed hold keeps: a thundering herd of thousands would hold millions of keys. */
export const REPLAY_WAITERS_KEPT = 100;

/**
 * A replay reading more revisions than this must be asked for (`ReplayOptions.fromRevision` or `maxRevisions`): etcd
 * serves a watch from a past revision by scanning every revision since, of every key, while it holds the store's lock
 * that writes need, so reading millions of revisions stalls the store's writes for that long.
 */
export const MAX_REPLAY_REVISIONS = 1_000_000;

/** One hold rebuilt from a store's history. */
export interface ReplayedHold {
  /** The member that held: its key (etcd), as the lock's members show it. */
  readonly key: Buffer;
  /** What it expires with, in the store's terms (an etcd lease in hex); '' without one. */
  readonly lease: string;
  readonly owner: string;
  /** The fencing token it held the lock with (etcd: its key's create revision), or null. */
  readonly token: number | null;
  /**
   * The revision it became the holder at: its key's create revision on a free lock, or the revision its predecessor's
   * key went. For a hold already in place at `LockHistory.fromRevision`, that revision (`beforeHistory` is then true).
   */
  readonly acquiredRevision: number;
  /**
   * True when it already held at the oldest revision read: it began earlier, at a revision history no longer has
   * (`LockHistory.compactedAt`) or that the replay chose not to read (`LockHistory.skippedBefore`).
   */
  readonly beforeHistory: boolean;
  /** The revision its key went at; null while it still holds. */
  readonly endedRevision: number | null;
  readonly end: HoldEnd | null;
  /** The first REPLAY_WAITERS_KEPT keys waiting when it became the holder, in queue order. */
  readonly waiters: readonly Buffer[];
  /** How many keys were waiting when it became the holder (`waiters` keeps the first REPLAY_WAITERS_KEPT). */
  readonly waiterCount: number;
}

export interface LockHistory {
  readonly name: Buffer;
  /** The lock's identity in the live model (`LockState.id`): replayed holds and live ones of one lock share it. */
  readonly lockId: string;
  /** The oldest revision read: 1, the compaction revision, or the revision the replay was asked to start at. */
  readonly fromRevision: number;
  /** The store's revision the replay read up to (now, when it ran). */
  readonly toRevision: number;
  /** The revision etcd compacted at, when that cut this history short; null when history goes back to revision 1. */
  readonly compactedAt: number | null;
  /**
   * The revision the replay was asked to start at (`ReplayOptions.fromRevision`), when etcd still had older history
   * that was therefore not read; null otherwise. Holds in place there are `beforeHistory`, as after compaction.
   */
  readonly skippedBefore: number | null;
  /**
   * True when etcd sent no event of the lock's range and could not confirm it had sent all its history (etcd before
   * 3.4.31 and 3.5.13 cannot; a proxy that ignores progress requests neither): the read ended after a quiet time
   * scaled to the revisions etcd had to scan, so this history is empty (or holds only what was in place at
   * `fromRevision`) on the strength of silence, not proof. On a store whose scan took longer, holds may be missing.
   */
  readonly endedOnSilence: boolean;
  /** Events read from the store (every key of the lock's range, this lock's or not). */
  readonly events: number;
  /** Oldest first. */
  readonly holds: readonly ReplayedHold[];
}

/** The revisions a store keeps, to tell what a replay would read before it starts one (`HistoryOperations.span`). */
export interface HistorySpan {
  /** The oldest revision still kept: 1, or the revision the store was compacted at. */
  readonly oldest: number;
  /** The store's revision now: what a replay started now reads up to. */
  readonly current: number;
}

export interface ReplayOptions {
  /** Abort to stop, while reading or while asking leases: the replay rejects with CANCELLED. */
  readonly signal?: AbortSignal;
  /** Told as events arrive: the revision reached, out of `toRevision`. */
  readonly onProgress?: (revision: number, toRevision: number) => void;
  /** Told once the events are replayed, then as each ended hold's lease is asked how it is: `asked` of `leases`. */
  readonly onLeaseProgress?: (asked: number, leases: number) => void;
  /**
   * Start at this revision instead of the oldest one kept: the keys present then are read as they were, their holder
   * held before history (`beforeHistory`), and `LockHistory.skippedBefore` says so. At or before the oldest revision
   * kept, the replay reads from there as without it. Never refused for its span.
   */
  readonly fromRevision?: number;
  /**
   * Without `fromRevision`, a span (now minus the oldest revision kept) above this is refused with INVALID_ARGUMENT
   * before anything is read. Default MAX_REPLAY_REVISIONS; Infinity reads every revision kept.
   */
  readonly maxRevisions?: number;
}

/** A store that keeps its past (etcd: MVCC revisions until compaction): `LockBackend.history`. */
export interface HistoryOperations {
  /**
   * Rebuilds the holds of the lock `name`: its queue (keys `name/…`), or, when `single` is set, the single key `name`
   * (a single-key lock and a queue of the same name are two locks, as in the live model).
   */
  replay(name: Uint8Array, options?: ReplayOptions & { readonly single?: boolean }): Promise<LockHistory>;
  /**
   * The revisions a replay of `name` would read, at the cost of a read or two (nothing is scanned): ask before
   * replaying `current - oldest` revisions above MAX_REPLAY_REVISIONS. Read through the lock's own keys, which the
   * user may read where access is limited.
   */
  span(name: Uint8Array, options?: { readonly single?: boolean }): Promise<HistorySpan>;
}

/**
 * How an ended hold's key went, judged from its lease now: etcd's history records the delete, never why. A lease
 * still alive means the key was deleted on its own (its owner's unlock, or someone's delete). A lease gone means the
 * key went with it (a revoke or an expiry), or was unlocked and its lease ended afterwards: `etcdctl lock` unlocks and
 * exits, leaving its lease to run out 10 s later, so its holds read as released at first and as revoked or expired
 * after; history cannot tell these apart. A key without a lease could only have been deleted. `leaseAlive`
 * undefined: the lease could not be asked, so nothing is said.
 */
export function holdEnd(lease: string, leaseAlive: boolean | undefined): LeaseEnd | null {
  if (lease === '') return 'released';
  if (leaseAlive === undefined) return null;
  return leaseAlive ? 'released' : 'revokedOrExpired';
}

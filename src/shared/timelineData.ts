/**
 * What the timeline draws, as plain data: one row per bar, the diffs between two pictures, a lock's replayed past, and
 * the order bars are shown in. Core's reducer (src/core/timeline.ts) makes them and the protocol (src/protocol/) carries
 * them to the webview: a module of its own, importing nothing from either, so that neither imports the other and the
 * browser bundle gets no Node code.
 */

import type { HoldEnd } from './holdEnds';
import { compareText } from './compareText';

export type TimelineRole = 'holder' | 'waiter' | 'leader' | 'candidate' | 'single';
export type TimelineLockKind = 'queue' | 'single' | 'election' | 'readwrite' | 'semaphore';

/** How a bar ended (see HoldEnd); `unknown` where nothing tells, or until the host has asked etcd about its lease. */
export type TimelineEnd = HoldEnd | 'unknown';

/** One bar: one lock member (key) with its lease, as long as the key exists, and for a while after it is gone. */
export interface TimelineRow {
  /** Opaque, unique per connection, lock, key and lease. */
  readonly id: string;
  readonly connection: string;
  /** The lock's identity; rows of one lock share it, and it sorts locks in etcd's byte order. Never shown. */
  readonly lock: string;
  /** The lock's name for people (text from etcd: draw it, never parse it as HTML). */
  readonly lockName: string;
  /** The member's key for people (text from etcd). */
  readonly key: string;
  readonly kind: TimelineLockKind;
  readonly role: TimelineRole;
  /** 0 for the holder, n for the n-th waiter (at the last update; unchanged once ended). */
  readonly position: number;
  /** The revocable lease it is attached to (etcd), in lowercase hex; '' without one (every Redis member). */
  readonly lease: string;
  /** Who holds or waits, in the store's terms, when that is not the lease (a Redis token or Redisson field); ''. */
  readonly owner: string;
  /** It ends with its owner's session or connection (a ZooKeeper node, a SQL session's lock): `owner` names it. */
  readonly endsWithOwner?: true;
  /** The fencing token it holds or will hold the lock with (etcd: the create revision); null where the store has none. */
  readonly token: number | null;
  /** When LockLens first saw the key (ms since the epoch); `firstSeenExact` false: it was already there. */
  readonly firstSeenAt: number;
  readonly firstSeenExact: boolean;
  /** When it became the holder (position 0 only). */
  readonly heldSince?: number;
  /** The lease's state at the last sample; absent before the first sample or without a lease. */
  readonly leaseState?: 'alive' | 'expired';
  readonly grantedTtl?: number;
  /** Seconds left at `observedAt`; the webview counts down from there. */
  readonly ttl?: number;
  readonly observedAt?: number;
  /** When keepalives were detected (the TTL jumped back up), oldest first. */
  readonly refreshes: readonly number[];
  readonly stalled: boolean;
  /** Held longer than the long-hold threshold at the last update (the webview also checks it as time passes). */
  readonly longHold: boolean;
  /** Its lock is in a deadlock a synced read confirmed (issue 22), at the last update; unchanged once ended. */
  readonly deadlock: boolean;
  readonly endedAt?: number;
  readonly end?: TimelineEnd;
}

/** A bar that ended (its key is gone), or a better answer on how it ended. */
export interface TimelineRowEnd {
  readonly id: string;
  readonly endedAt: number;
  readonly end: TimelineEnd;
}

export interface TimelineDiff {
  /** New rows, and rows that changed (whole rows: a row is small). */
  readonly upserts: readonly TimelineRow[];
  readonly ended: readonly TimelineRowEnd[];
  /** Rows to forget: past the kept time, or their connection went away. */
  readonly removed: readonly string[];
}

/** One hold replayed from the store's history (src/core/history.ts), as text and numbers. */
export interface PastHold {
  readonly key: string;
  readonly lease: string;
  readonly token: number | null;
  readonly acquiredRevision: number;
  readonly beforeHistory: boolean;
  readonly endedRevision: number | null;
  readonly end: PastEnd | null;
  readonly waiters: number;
}

export type PastEnd = HoldEnd;

/** A lock's past, replayed from its store's history: drawn on a revision axis (the store keeps no wall-clock time). */
export interface PastMessage {
  readonly type: 'past';
  readonly connection: string;
  readonly lockName: string;
  readonly fromRevision: number;
  readonly toRevision: number;
  readonly compactedAt: number | null;
  /** The revision the read started at by the user's choice (older holds were not read), or null. */
  readonly skippedBefore: number | null;
  /** The read ended after a quiet time, not on proof that it had caught up (LockHistory.endedOnSilence). */
  readonly endedOnSilence: boolean;
  /** Holds older than those sent, not drawn. */
  readonly older: number;
  /** Oldest first. */
  readonly holds: readonly PastHold[];
}

/**
 * The order bars are shown in: by connection, then lock (etcd's byte order), then queue order: the fencing token where
 * the store has one (it stays put after a bar ends), else the position.
 */
export function compareRows(a: TimelineRow, b: TimelineRow): number {
  return compareText(a.connection, b.connection) || compareText(a.lock, b.lock) || queueOrder(a) - queueOrder(b) || compareText(a.id, b.id);
}

function queueOrder(row: TimelineRow): number {
  return row.token ?? row.position;
}

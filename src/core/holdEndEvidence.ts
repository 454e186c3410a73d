/**
 * How a hold whose key just went ended, from the evidence LockLens has at that moment (see src/shared/holdEnds.ts for
 * what each end means). Stores rarely say why a key went, so the evidence is what LockLens sampled and was told:
 *
 * - etcd: a key deleted while its lease lived, or whose lease was revoked before its time (a TTL sample shows time
 *   left: etcd only ever extends a lease, never shortens it), was released; one whose lease's countdown had run out
 *   expired. Without a sample, a lease found gone may have been revoked or have expired (`revokedOrExpired`), and a
 *   lease not yet asked about leaves the end to the store (null: see `unsettled`). A revoke by some other client reads
 *   as released: etcd records no author; LockLens's own are told by its audit (`forceReleased`, not decided here).
 * - Redis: where the server sends `expired` events (notify-keyspace-events with E or K, and x), they decide: told, it
 *   expired; not told, the key was deleted. Otherwise a key whose PTTL countdown had run out expired, and one that went
 *   with time left was deleted (released); one found gone whose countdown is not known may have done either (null).
 * - A member with nothing to expire with can only have been deleted.
 * - A TTL that a sample found below the last one's countdown was moved earlier by its owner (ShedLock's unlock, which
 *   leaves its row locked until lockAtLeastFor): its running out is the end its owner set, a release.
 * - A member that ends with its owner's ZooKeeper session or SQL connection (a kazoo node, a PostgreSQL advisory
 *   lock, a GET_LOCK), whose time left cannot be read: the watch's read right after it went decides. Its session or
 *   connection still there (PostgreSQL's pg_stat_activity, MySQL's processlist; in ZooKeeper a server's `cons`
 *   listing the session) means its owner let go: released. Gone
 *   (every ZooKeeper server answered `cons` without it; the SQL server no longer lists the connection) means the
 *   owner was lost with it: ownerLost. A release followed by its owner's close before that read looks the same and
 *   reads ownerLost: what LockLens saw is a lock whose owner was gone. Where nothing can be read (`cons` refused, a
 *   MySQL user without PROCESS who sees only its own connections) it is not told (null).
 * Pure: no store, no timers.
 */
import type { HoldEnd } from '../shared/holdEnds';
import type { LeaseInfo } from './leaseInfo';
import { endsWithOwner, members, type LockMember, type LockState } from './lockState';

/**
 * A key that goes this close to its countdown's end ran out: a Redis key's expiry is reported when the server evicts
 * it, a few milliseconds either side of the PTTL sample's countdown.
 */
export const EXPIRY_SLACK_S = 0.25;

export interface EndEvidence {
  /** What the member expired with ('' for nothing). */
  readonly lease: string;
  /** Seconds its countdown had left when the key went, by the last sample that found it alive; undefined: none. */
  readonly secondsLeft: number | undefined;
  /** A sample found what it expired with gone. */
  readonly leaseGone: boolean;
  /** The store sends an event when what it expires with expires (Redis `expired` events)... */
  readonly expiryEvents: boolean;
  /** ...and sent one for it. */
  readonly expiryTold: boolean;
  /** It ends with its owner's session or connection (`expiresWith` 'session' or 'connection')... */
  readonly endsWithOwner?: boolean;
  /** ...which was still there at the read that found it gone (see `LockWatch.ownerLives`); undefined: nothing told. */
  readonly ownerLives?: boolean;
  /** While it held, a sample found its TTL below the last one's countdown (see `fellBelow`). */
  readonly shortened?: boolean;
}

export interface StoreEvidence {
  /** Leases outlive their keys and can be revoked (etcd). */
  readonly hasLeases: boolean;
  /** What members expire with has a TTL that is sampled (etcd leases, Redis keys). */
  readonly sampledTtls: boolean;
}

export function endOfGone(e: EndEvidence, store: StoreEvidence): HoldEnd | null {
  if (e.expiryTold) return 'expired';
  if (e.endsWithOwner) return e.ownerLives === undefined ? null : e.ownerLives ? 'released' : 'ownerLost';
  if (e.shortened) return 'released';
  if (!e.lease || e.expiryEvents) return 'released';
  if (e.secondsLeft === undefined) {
    if (store.hasLeases) return e.leaseGone ? 'revokedOrExpired' : null;
    // A key never sampled went: deleted. One found gone whose countdown was not kept may have expired.
    return store.sampledTtls && !e.leaseGone ? 'released' : null;
  }
  return e.secondsLeft <= EXPIRY_SLACK_S ? 'expired' : 'released';
}

/**
 * Whether a TTL sampled at `ttl` seconds `at` is below what the last sample counts down to by then: its owner moved
 * its expiry earlier. A second of slack, as for a refresh (leaseInfo.ts): etcd reports whole seconds.
 */
export function fellBelow(last: { readonly ttl: number; readonly observedAt: number }, ttl: number, at: number): boolean {
  return ttl < last.ttl - (at - last.observedAt) / 1000 - 1;
}

/** The evidence of the last sample of what a member expired with (undefined: none was taken). */
export function evidenceOf(lease: string, info: LeaseInfo | undefined, now: number): EndEvidence {
  const alive = info?.state === 'alive';
  return {
    lease,
    secondsLeft: alive ? info.ttl - (now - info.observedAt) / 1000 : undefined,
    leaseGone: info !== undefined && !alive,
    expiryEvents: info?.expiryEvents ?? false,
    expiryTold: info?.expiryTold ?? false,
  };
}

/**
 * The sessions or connections to ask about after a read: those of the members of `before` that end with their owner
 * and are not in `after` (the same locks, read again; a lock missing from `after` went whole).
 */
export function goneOwners(before: readonly LockState[], after: readonly LockState[]): string[] {
  // Each lock's members looked up in its own read again: building a text per member of every lock was nearly half of a
  // quiet SQL poll's cost.
  const now = new Map<string, LockState>();
  for (const l of after) now.set(l.id, l);
  const gone = new Set<string>();
  for (const l of before) {
    const again = now.get(l.id);
    const still = again ? members(again) : [];
    for (const m of members(l)) if (endsWithOwner(m) && !hasMemberKey(still, m.key)) gone.add(m.lease);
  }
  return [...gone];
}

// Loops, not callbacks made per member of every poll: see byName (lockState.ts) on why.
function hasMemberKey(members: readonly LockMember[], key: Buffer): boolean {
  for (const m of members) if (m.key.equals(key)) return true;
  return false;
}

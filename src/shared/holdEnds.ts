/**
 * How a hold ended: one vocabulary for the live views, the timeline, the recorded history, `locklens history`, the
 * statistics, the report and serve's metrics. Outside the core, with no Node types, because the timeline's protocol
 * and so its browser bundle need the list too. What evidence decides each, per store, is src/core/holdEndEvidence.ts's.
 *
 * - `released`: its owner let go while it lived: its key deleted (an unlock), its etcd lease revoked before its
 *   time (a session closed), or its expiry moved earlier by its owner and reached (ShedLock's unlock leaving its row
 *   locked until lockAtLeastFor). A store cannot say who deleted a key, so someone else's plain delete reads so too.
 * - `expired`: what it expired with ran out: the store said so (a Redis `expired` event), or LockLens watched its TTL
 *   count down to nothing (a lease or key nobody renewed).
 * - `forceReleased`: LockLens ended it (Force Release, Revoke, `locklens unlock --force`), as its audit says, with by
 *   whom where the recorded history has it.
 * - `ownerLost`: its owner's session or connection ended with it (a ZooKeeper session gone, a SQL connection closed).
 * - `revokedOrExpired`: its key went with its etcd lease, and nothing tells a revoke from an expiry (etcd's history,
 *   or no TTL sample was taken of the lease).
 * A hold whose end cannot be told has none (null, "unknown"). Values are stored as they are in the recorded history:
 * one is never renamed, so that old files still read.
 */
export const HOLD_ENDS = ['released', 'expired', 'forceReleased', 'ownerLost', 'revokedOrExpired'] as const;
export type HoldEnd = (typeof HOLD_ENDS)[number];

/** Each end in words, for the command line and the report (the extension and the timeline translate their own). */
export const HOLD_END_TEXT: Record<HoldEnd, string> = {
  released: 'released',
  expired: 'expired',
  forceReleased: 'force-released',
  ownerLost: 'owner lost (session or connection ended)',
  revokedOrExpired: 'revoked or expired',
};

/**
 * What happened to a lock, as a watcher saw it: holds and waits beginning and ending. `locklens serve` counts them
 * (metrics) and records them (the recorded history); lockEvents.ts derives them from a watch's change sets.
 * Plain data (JSON as it is): the recorder stores them as they are.
 */
import type { HoldEnd } from '../shared/holdEnds';
import type { LockKind } from './lockState';

/** Who a member is, as the store shows it: never more than `list --json` shows (a token lock's token is its owner). */
export interface EventMember {
  /** The member's key (etcd key, Redis key or field, znode path), as display text. */
  readonly key: string;
  readonly owner: string;
  readonly token: number | null;
}

interface LockEventBase {
  readonly connection: string;
  /** The lock's id in its connection (keys.keyId), and its name as display text. */
  readonly lockId: string;
  readonly lock: string;
  readonly kind: LockKind;
  readonly member: EventMember;
  /** Epoch ms it happened; with `exact` false, when it was found (a first read, a reload after a break). */
  readonly at: number;
  readonly exact: boolean;
}

export interface HoldStarted extends LockEventBase {
  readonly type: 'holdStarted';
  /** How long it had waited in the queue, when the watcher saw it queue; null otherwise. */
  readonly waitedMs: number | null;
  /** Another hold of this lock ended in the same change with waiters queued: the lock was handed off. */
  readonly handoff: boolean;
}

export interface HoldEnded extends LockEventBase {
  readonly type: 'holdEnded';
  /** How it ended, where the store can tell (see HoldEnd); null when it cannot. */
  readonly how: HoldEnd | null;
  /** From its start to `at`; null when the start was not seen. */
  readonly heldMs: number | null;
}

export interface WaitStarted extends LockEventBase {
  readonly type: 'waitStarted';
}

export interface WaitEnded extends LockEventBase {
  readonly type: 'waitEnded';
  /** It became the holder; false: it left the queue without holding (gave up, cancelled, its owner gone). */
  readonly granted: boolean;
  /** From its start to `at`; null when the start was not seen. */
  readonly waitedMs: number | null;
}

export type LockEvent = HoldStarted | HoldEnded | WaitStarted | WaitEnded;

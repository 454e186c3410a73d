/**
 * What the recorded history holds, as its readers (`locklens history --data`, the Lock History view) get it.
 */
import type { HoldEnd } from '../../shared/holdEnds';
import type { LockKind } from '../lockState';

export interface RecordedHold {
  readonly connection: string;
  /** The store's kind (stores.ts). */
  readonly store: string;
  /** The lock's name as display text (keys.displayKey), and its id in its connection (keys.keyId). */
  readonly lock: string;
  readonly lockId: string;
  /** The member that held: its key as display text. */
  readonly key: string;
  readonly owner: string;
  readonly token: number | null;
  /** Epoch ms. Not exact: it already held when LockLens first saw it (a first read, a reconnect). */
  readonly acquiredAt: number;
  readonly acquiredExact: boolean;
  /** Null while it holds (as far as the recording knows: a recorder that stopped leaves it open until it runs again). */
  readonly endedAt: number | null;
  /** Not exact: found gone when LockLens looked again (a poll, a reconnect, a restart of the recorder). */
  readonly endedExact: boolean | null;
  /**
   * Null while it holds, or where the store cannot tell. `forceReleased` comes from a LockLens force release
   * (`locklens unlock --force --data DIR`) matched with the hold it ended: the store never tells it from a release.
   */
  readonly end: HoldEnd | null;
  /** Who force-released it (the OS user that ran `locklens unlock --force`), when `end` is forceReleased. */
  readonly forceReleasedBy: string | null;
  /** How long it had waited in the queue before it held, when the watcher saw it queue. */
  readonly waitedMs: number | null;
  /** It took the lock as another hold ended with waiters queued. */
  readonly handoff: boolean;
}

/** Which holds a reader asks for. */
export interface HoldQuery {
  /** The lock's name as display text. */
  readonly lock: string;
  /** Only this connection's (serve's connection name); all of them when absent. */
  readonly connection?: string;
  /** Only holds that had not ended by then (epoch ms). */
  readonly since?: number;
  /** At most this many, the newest. */
  readonly limit?: number;
}

/** A force release done by LockLens, as `locklens unlock --force --data DIR` records it. */
export interface ForceReleaseNote {
  /** The connection's name as `locklens serve` knows it (its config's `name`). */
  readonly connection: string;
  /** The lock's name and the released member's key, as display text, and its owner (as `locklens list` shows them). */
  readonly lock: string;
  readonly member: string;
  readonly owner: string;
  /** Who: the OS user. */
  readonly by: string;
  /** Epoch ms, taken just before the release was sent. */
  readonly at: number;
}

/** A force release matched with the hold it ended: what serve's metrics count it under. */
export interface MatchedForceRelease {
  /** Its note's id in the file. */
  readonly id: number;
  readonly connection: string;
  readonly lockId: string;
  readonly lock: string;
  readonly kind: LockKind;
}

import type { MemberHealth } from '../../core/lockHealth';
import type { LockState } from '../../core/lockState';
import type { StoreConnection } from '../connections';

/** What a row's drawing needs of its node (nodes.ts), so that the rows and the nodes do not import each other. */
export interface Row {
  readonly id: string;
  readonly connection: StoreConnection;
}

/** A row under a watched prefix, whose names are shown without it. */
export interface PrefixedRow extends Row {
  readonly prefix: string;
}

/** What a member row shows now: the lock and the member's health, read from the live model when asked. */
export interface MemberView {
  readonly lock: LockState;
  readonly health: MemberHealth;
}

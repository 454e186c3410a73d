/** Rows' contextValues, which decide their menu items. No vscode import. */
import type { Capabilities } from '../../core/backend';
import type { LockKind, LockMember } from '../../core/lockState';
import type { ConnectionState } from '../connections';

/** A store whose package is not installed offers to install it instead of connecting. */
export function connectionContext(state: ConnectionState, storeMissing: boolean): string {
  return storeMissing ? 'connection.notInstalled' : `connection.${state}`;
}

export const PREFIX_CONTEXT = 'prefix';

/** `.acquirable`: Acquire Lock on the row joins it (the backend says which layouts it can take interoperably). */
export function lockContext(kind: LockKind, acquirable: boolean): string {
  return `lock.${kind}${acquirable ? '.acquirable' : ''}`;
}

/**
 * A member row's contextValue: `member.<leased|unleased>.<own|other>`, then `.holder` for a member that holds the lock
 * (Force Release frees holds, not places in a queue), `.token` when it has a fencing token to copy, and `.owner` when
 * its owner is something other than a lease (a Redis token, a Redisson field) to copy. `leased` is a lease that can be
 * revoked (etcd), so Revoke Lease and Copy Lease ID never show for other stores.
 */
export function memberContext(member: LockMember, holds: boolean, own: boolean, caps: Capabilities): string {
  return [
    'member',
    caps.revokeOwner && member.lease ? 'leased' : 'unleased',
    own ? 'own' : 'other',
    ...(holds ? ['holder'] : []),
    ...(member.token !== null ? ['token'] : []),
    ...(caps.owner !== 'lease' && member.owner ? ['owner'] : []),
  ].join('.');
}

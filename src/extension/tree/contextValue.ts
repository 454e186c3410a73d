/**
 * Rows' contextValues, which decide their menu items: a base (`connection`, `prefix`, `folder`, `lock`, `member`) then `+flag`s.
 * package.json's `when` clauses test the base and each flag on its own (`viewItem =~ /^member\b/ && viewItem =~
 * /\+own\b/`), never a position, so a flag added later leaves every menu as it was. No vscode import: the unit tests
 * check these against package.json.
 */
import type { Capabilities } from '../../core/backend';
import type { LockKind, LockMember } from '../../core/lockState';
import type { ConnectionState } from '../connections';

function flagged(base: string, flags: readonly (string | false)[]): string {
  return [base, ...flags.filter((f): f is string => !!f)].join('+');
}

/** `+<state>`, or `+notInstalled` alone: a store whose package is missing offers to install it instead of connecting. */
export function connectionContext(state: ConnectionState, storeMissing: boolean): string {
  return flagged('connection', [storeMissing ? 'notInstalled' : state]);
}

export const PREFIX_CONTEXT = 'prefix';

/** A directory of lock names below a prefix: no actions of its own. */
export const FOLDER_CONTEXT = 'folder';

/** `+<kind>`, and `+acquirable` when Acquire Lock on the row joins it (the backend says which layouts it can take interoperably). */
export function lockContext(kind: LockKind, acquirable: boolean): string {
  return flagged('lock', [kind, acquirable && 'acquirable']);
}

/**
 * `+own` or `+other` (held from this window or not), `+leased` for a member that expires with a lease, which can be
 * revoked (etcd: so Revoke Lease and Copy Lease ID never show for other stores), `+holder` for a member that holds the lock (Force Release frees
 * holds, not places in a queue), `+token` when it has a fencing token to copy, and `+owner` when its owner is something
 * other than a lease (a Redis token, a Redisson field) to copy.
 */
export function memberContext(member: LockMember, holds: boolean, own: boolean, caps: Pick<Capabilities, 'owner'>): string {
  return flagged('member', [
    member.expiresWith === 'lease' && 'leased',
    own ? 'own' : 'other',
    holds && 'holder',
    member.token !== null && 'token',
    caps.owner !== 'lease' && !!member.owner && 'owner',
  ]);
}

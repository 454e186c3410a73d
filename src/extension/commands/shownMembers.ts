import * as vscode from 'vscode';
import { LockLensError } from '../../core/errors';
import { displayKey } from '../../core/keys';
import type { LockMember, LockState } from '../../core/lockState';
import type { StoreConnection } from '../connections';
import type { LockTreeProvider } from '../tree/lockTreeProvider';
import type { MemberNode } from '../tree/nodes';

/**
 * The holder a row showed, if the row still stands for it. A Redis token lock's one member is the lock's own key
 * whoever holds it, and an etcd key can be deleted and created again: the owner and the fencing token must match too.
 */
export function shownHolder(tree: LockTreeProvider, node: MemberNode): { connection: StoreConnection; lock: LockState; member: LockMember } {
  const view = tree.memberView(node);
  if (!view) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That member is gone since it was shown.'));
  const now = view.health.member;
  const shown = tree.shownMember(node) ?? now;
  if (shown.owner !== now.owner || shown.token !== now.token) {
    throw new LockLensError('LOCK_CHANGED', vscode.l10n.t('"{0}" changed hands since it was shown (owner {1}, now {2}): look again before force-releasing.', displayKey(view.lock.name), ownerText(shown), ownerText(now)));
  }
  if (view.health.position !== 0) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That member is waiting, not holding: there is no hold to release.'));
  return { connection: node.connection, lock: view.lock, member: shown };
}

/** The lease a row showed, if the row still stands for it: a revoke never acts on something the user did not see. */
export function shownLease(tree: LockTreeProvider, node: MemberNode): string {
  const shown = tree.shownMember(node)?.lease;
  const now = tree.memberView(node)?.health.member.lease;
  if (now === undefined) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That key is gone from etcd since it was shown.'));
  if (!now) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That key has no lease to revoke.'));
  if (shown !== undefined && shown !== now) {
    throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That key moved from lease {0} to lease {1} since it was shown: look again before revoking.', shown, now));
  }
  return now;
}

/** The member behind a row as the model has it now, for commands that only read it. */
export function memberOf(tree: LockTreeProvider, node: MemberNode | undefined): LockMember {
  const view = node && tree.memberView(node);
  if (!view) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('Pick a holder or waiter in the Locks view.'));
  return view.health.member;
}

/** An owner for a sentence: a fencing token with it where the store has one. */
export function ownerText(member: LockMember): string {
  const who = member.owner || vscode.l10n.t('none');
  return member.token === null ? who : vscode.l10n.t('{0}, token {1}', who, member.token);
}

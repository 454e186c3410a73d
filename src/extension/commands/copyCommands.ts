import * as vscode from 'vscode';
import type { RegisterCommand } from '../commandRunner';
import { LockLensError } from '../../core/errors';
import { displayKey } from '../../core/keys';
import type { MemberNode } from '../tree/nodes';
import type { LockCommandContext } from './lockCommandContext';
import { memberOf } from './shownMembers';

/** Copies what a member row shows (its key, lease, owner, fencing token), as the model has the member now. */
export function registerCopyCommands(register: RegisterCommand, { tree }: LockCommandContext): vscode.Disposable[] {
  return [
    register('locklens.copyKey', (node?: MemberNode) => copy(displayKey(memberOf(tree, node).key), vscode.l10n.t('key'))),
    register('locklens.copyLeaseId', (node?: MemberNode) => copy(memberOf(tree, node).lease, vscode.l10n.t('lease ID'))),
    register('locklens.copyOwner', (node?: MemberNode) => copy(memberOf(tree, node).owner, vscode.l10n.t('owner'))),
    register('locklens.copyFencingToken', (node?: MemberNode) => {
      const { token } = memberOf(tree, node);
      if (token === null) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('This store gives locks no fencing token.'));
      return copy(String(token), vscode.l10n.t('fencing token'));
    }),
  ];
}

/** Puts `text` on the clipboard and says so briefly in the status bar; `what` names it there. */
export async function copy(text: string, what: string): Promise<void> {
  await vscode.env.clipboard.writeText(text);
  vscode.window.setStatusBarMessage(vscode.l10n.t('Copied {0}', what), 2000);
}

import * as vscode from 'vscode';
import type { RegisterCommand } from '../commandRunner';
import { LockLensError } from '../../core/errors';
import { displayKey } from '../../core/keys';
import type { HeldLock, HeldLocks } from '../heldLocks';
import { MemberNode } from '../tree/nodes';
import { orCancel } from '../pickers';
import { writable, type LockCommandContext } from './lockCommandContext';

/** Releases a hold of this window's own; someone else's lock is Force Release's. */
export function registerReleaseLock(register: RegisterCommand, { heldLocks, tree }: LockCommandContext): vscode.Disposable {
  /** Our hold behind a member row, as the model has the member now. */
  const memberHeld = (node: MemberNode) => {
    const member = tree.memberView(node)?.health.member;
    return member && heldLocks.holding(node.connection, member);
  };

  return register('locklens.releaseLock', async (arg?: MemberNode | HeldLock) => {
    writable();
    const held =
      arg && 'hold' in arg
        ? arg
        : arg instanceof MemberNode
          ? memberHeld(arg)
          : await pickHeld(heldLocks);
    if (!held) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That lock is not held from this window: to free someone else\'s lock, use Force Release.'));
    await heldLocks.release(held);
    await held.connection.watch?.sweep();
  });
}

async function pickHeld(heldLocks: HeldLocks): Promise<HeldLock> {
  const all = heldLocks.all();
  if (all.length === 0) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('You hold no lock from this window.'));
  if (all.length === 1) return all[0];
  const picked = await vscode.window.showQuickPick(
    all.map((h) => ({ label: displayKey(h.name), description: `${h.connection.name} · ${h.hold.fencingToken === null ? vscode.l10n.t('owner {0}', h.hold.owner) : vscode.l10n.t('token {0}', h.hold.fencingToken)}`, held: h })),
    { title: vscode.l10n.t('Release lock') },
  );
  return orCancel(picked).held;
}

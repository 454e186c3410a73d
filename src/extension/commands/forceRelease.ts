import * as vscode from 'vscode';
import type { RegisterCommand } from '../commandRunner';
import { LockLensError, errorMessage } from '../../core/errors';
import { displayKey } from '../../core/keys';
import type { LockState } from '../../core/lockState';
import { ownerField } from '../audit';
import type { StoreConnection, ConnectionRegistry } from '../connections';
import { MemberNode } from '../tree/nodes';
import { holderName, pickConnection, pickLock } from '../pickers';
import { connectionNamed, writable, type LockCommandContext } from './lockCommandContext';
import { ownerText, shownHolder } from './shownMembers';

/** What `locklens.forceRelease` accepts from scripts and tests instead of a tree node: the lock's holder is released. */
export interface ForceReleaseInput {
  readonly connection: string;
  readonly lock: string;
  /** The owner the script saw holding it: the command refuses if another holds it now. */
  readonly owner?: string;
}

/**
 * Frees a lock from a holder that is not us (a stuck one, usually), the store's safe way, guarded by what the user
 * saw: a row acts on the member it was drawn with, a pick on the lock as it was listed, and the backend refuses if
 * the member changed since (another owner, another token).
 */
export function registerForceRelease(register: RegisterCommand, { registry, heldLocks, tree, audit }: LockCommandContext): vscode.Disposable {
  return register('locklens.forceRelease', async (arg?: MemberNode | ForceReleaseInput) => {
    writable();
    const { connection, lock, member } = arg instanceof MemberNode ? shownHolder(tree, arg) : await holderOf(registry, arg);
    const backend = await connection.open();
    if (heldLocks.owns(connection, member)) {
      throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('You hold this lock from this window: use Release Lock.'));
    }
    const next = lock.waiters[0];
    const detail = [
      backend.describeForceRelease(lock, member),
      '',
      next ? vscode.l10n.t('Next holder: {0}', displayKey(next.key)) : vscode.l10n.t('Nobody is waiting in the store; waiters that poll or retry will take it.'),
    ].join('\n');
    const confirm = vscode.l10n.t('Force Release');
    const who = holderName(lock, member);
    const answer = await vscode.window.showWarningMessage(
      vscode.l10n.t('Force-release "{0}" from {1} on {2}?', displayKey(lock.name), who, connection.name),
      { modal: true, detail },
      confirm,
    );
    const audited = { connection: connection.name, lock: lock.name, ...ownerField(backend.capabilities.owner, member.owner), fencingToken: member.token ?? undefined };
    if (answer !== confirm) {
      audit.record({ action: 'forceRelease', outcome: 'cancelled', ...audited });
      return;
    }
    const mark = audit.ownEnds.begin(connection.name, member.owner);
    try {
      const result = await backend.forceRelease(lock, member);
      audit.record({ action: 'forceRelease', outcome: 'ok', ...audited, keys: result.keys, detail: result.action });
      void vscode.window.showInformationMessage(vscode.l10n.t('Released "{0}": {1}.', displayKey(lock.name), result.action));
      await connection.watch?.sync().catch(() => undefined);
    } catch (e) {
      mark();
      audit.record({ action: 'forceRelease', outcome: 'failed', ...audited, detail: errorMessage(e) });
      throw e;
    }
  });
}

/** The holder a script names, or one the user picks among the connection's held locks. */
async function holderOf(registry: ConnectionRegistry, input?: ForceReleaseInput) {
  const connection = input ? connectionNamed(registry, input.connection) : await pickConnection(registry, vscode.l10n.t('Force release'));
  await connection.open();
  const lock = input ? heldLockNamed(connection, input.lock) : await pickLock(connection, vscode.l10n.t('Force release on {0}', connection.name), (l) => !!l.holder, vscode.l10n.t('Nothing is held on {0}.', connection.name));
  if (input?.owner !== undefined && input.owner !== lock.holder!.owner) {
    throw new LockLensError('LOCK_CHANGED', vscode.l10n.t('"{0}" is held by {1} now, not by {2}: nothing was released.', input.lock, ownerText(lock.holder!), input.owner));
  }
  return { connection, lock, member: lock.holder! };
}

/** The held lock a script names; a queue and a single key of the same name, both held, are refused as the CLI does. */
function heldLockNamed(connection: StoreConnection, name: string): LockState {
  const held = (connection.watch?.locks() ?? []).filter((l) => l.holder && displayKey(l.name) === name);
  if (held.length > 1) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('"{0}" names {1} held locks on {2}: pick one in the Locks view.', name, held.length, connection.name));
  if (!held.length) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('No held lock named "{0}" on {1}.', name, connection.name));
  return held[0];
}

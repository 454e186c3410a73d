import * as vscode from 'vscode';
import { LockLensError } from '../core/errors';
import { displayKey } from '../core/keys';
import { isSingleKey, type LockMember, type LockState } from '../core/lockState';
import type { StoreConnection, ConnectionRegistry } from './connections';
import { stateText } from './format';

/** Thrown when the user closes a picker or input: commands end quietly on it. */
export class Cancelled extends Error {
  constructor() {
    super('cancelled');
  }
}

export function orCancel<T>(value: T | undefined): T {
  if (value === undefined) throw new Cancelled();
  return value;
}

/** The connection a command acts on: the only one, or the user's pick (connected ones first). */
export async function pickConnection(registry: ConnectionRegistry, title: string): Promise<StoreConnection> {
  const all = registry.all();
  if (all.length === 0) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('No connection yet: add one with "LockLens: Add Connection".'));
  if (all.length === 1) return all[0];
  const items = [...all]
    .sort((a, b) => Number(b.state === 'connected') - Number(a.state === 'connected'))
    .map((c) => ({ label: c.name, description: c.settings.endpoints.join(', '), detail: stateText(c), connection: c }));
  return orCancel(await vscode.window.showQuickPick(items, { title, placeHolder: vscode.l10n.t('Pick a connection') })).connection;
}

/** Shows a quick pick the caller has filled, and resolves with what `accepted` reads from it on Enter; closing cancels. */
export async function acceptQuickPick<I extends vscode.QuickPickItem, T>(quickPick: vscode.QuickPick<I>, accepted: () => T | undefined): Promise<T> {
  try {
    const value = await new Promise<T | undefined>((resolve) => {
      quickPick.onDidAccept(() => resolve(accepted()));
      quickPick.onDidHide(() => resolve(undefined));
      quickPick.show();
    });
    return orCancel(value);
  } finally {
    quickPick.dispose();
  }
}

/** A lock of the connection's watch that `wanted` accepts, picked by name (with its holder and queue beside it). */
export async function pickLock(connection: StoreConnection, title: string, wanted: (lock: LockState) => boolean, none: string): Promise<LockState> {
  const locks = (connection.watch?.locks() ?? []).filter(wanted);
  if (locks.length === 0) throw new LockLensError('INVALID_ARGUMENT', none);
  const picked = await vscode.window.showQuickPick(
    locks.map((l) => ({ label: displayKey(l.name), description: l.holder ? holderName(l, l.holder) : '', detail: lockSummary(l), lock: l })),
    { title, matchOnDescription: true },
  );
  return orCancel(picked).lock;
}

/**
 * Who holds, in a few words: a queue's member by its key; a single-key lock by its owner (a token, a lease, a lock-table
 * row's holder column, whose key is only the row's name), or by its key when it names none.
 */
export function holderName(lock: LockState, member: LockMember): string {
  return isSingleKey(lock) && member.owner ? member.owner : displayKey(member.key);
}

export function lockSummary(lock: LockState): string {
  if (!lock.holder) return lock.waiters.length ? vscode.l10n.t('free · {0} waiting', lock.waiters.length) : vscode.l10n.t('free');
  return lock.waiters.length ? vscode.l10n.t('held · {0} waiting', lock.waiters.length) : vscode.l10n.t('held');
}

import * as vscode from 'vscode';
import { LockLensError } from '../../core/errors';
import type { AuditLog } from '../audit';
import type { StoreConnection, ConnectionRegistry } from '../connections';
import type { HeldLocks } from '../heldLocks';
import type { LockRecords } from '../lockRecords';
import type { LockTreeProvider } from '../tree/lockTreeProvider';
import { isReadOnly } from '../settings';

/** What the lock commands act through, shared by the modules that register them. */
export interface LockCommandContext {
  readonly registry: ConnectionRegistry;
  readonly heldLocks: HeldLocks;
  readonly tree: LockTreeProvider;
  readonly audit: AuditLog;
  /** What LockLens saw of each lock: the layout a free name was last held in. */
  readonly records: LockRecords;
}

/** The connection a script names, or a clear error. */
export function connectionNamed(registry: ConnectionRegistry, name: string): StoreConnection {
  const c = registry.get(name);
  if (!c) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('No connection named "{0}"', name));
  return c;
}

/** Mutations refuse in read-only mode even when called directly (menus already hide them). */
export function writable(): void {
  if (isReadOnly()) {
    throw new LockLensError('PERMISSION', vscode.l10n.t('LockLens is in read-only mode (setting locklens.readOnly): acquire, release, revoke and force-release are turned off.'));
  }
}

import type * as vscode from 'vscode';
import type { RegisterCommand } from '../commandRunner';
import type { AuditLog } from '../audit';
import type { ConnectionRegistry } from '../connections';
import type { HeldLocks } from '../heldLocks';
import type { LockRecords } from '../lockRecords';
import type { LockTreeProvider } from '../tree/lockTreeProvider';
import { registerAcquireLock } from './acquireLock';
import { registerCopyCommands } from './copyCommands';
import { registerForceRelease } from './forceRelease';
import { registerLeaseCommands } from './leaseCommands';
import { registerReleaseLock } from './releaseLock';

/** The commands that act on locks: acquiring and releasing our own, freeing others', leases, and copying what a row shows. */
export function registerLockCommands(
  register: RegisterCommand,
  registry: ConnectionRegistry,
  heldLocks: HeldLocks,
  tree: LockTreeProvider,
  audit: AuditLog,
  records: LockRecords,
): vscode.Disposable[] {
  const context = { registry, heldLocks, tree, audit, records };
  return [
    registerAcquireLock(register, context),
    registerReleaseLock(register, context),
    registerForceRelease(register, context),
    ...registerLeaseCommands(register, context),
    ...registerCopyCommands(register, context),
  ];
}

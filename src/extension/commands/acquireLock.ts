import * as vscode from 'vscode';
import type { RegisterCommand } from '../commandRunner';
import type { LockMode } from '../../core/backend';
import { LockLensError } from '../../core/errors';
import { layoutById } from '../../core/freeNameLayout';
import { displayKey } from '../../core/keys';
import { layoutsOf } from '../../core/stores';
import { ownerLabel } from '../format';
import { LockNode, type LockTreeNode } from '../tree/nodes';
import { pickConnection } from '../pickers';
import { defaultAcquireTtl } from '../settings';
import { askLockName, askMode, askPermitLimit, askTtl, chooseFreeLayout, confirmJoin, joinsQueue, lockNamed } from './acquirePrompts';
import { connectionNamed, writable, type LockCommandContext } from './lockCommandContext';

/** What `locklens.acquireLock` accepts from scripts and tests instead of asking. */
export interface AcquireInput {
  readonly connection: string;
  readonly name: string;
  readonly ttl?: number;
  /** A read/write lock (where the store has them): take it for reading or writing. */
  readonly mode?: LockMode;
  /** A semaphore whose store does not keep its limit: how many permits it has. */
  readonly permits?: number;
  /** The layout a free name is taken in (a store descriptor's layout id); absent: the backend's (AcquireOptions.layout). */
  readonly layout?: string;
}

export function registerAcquireLock(register: RegisterCommand, { registry, heldLocks, tree, records }: LockCommandContext): vscode.Disposable {
  return register('locklens.acquireLock', async (arg?: LockTreeNode | AcquireInput) => {
    writable();
    const input = arg && isInput(arg) ? arg : undefined;
    const node = arg && !isInput(arg) ? arg : undefined;
    const connection = input ? connectionNamed(registry, input.connection) : (node?.connection ?? (await pickConnection(registry, vscode.l10n.t('Acquire lock'))));
    const lockOfNode = node instanceof LockNode ? tree.lock(node) : undefined;
    const backend = await connection.open();
    const name = input ? Buffer.from(input.name) : (lockOfNode?.name ?? (await askLockName(connection, backend)));
    // A script names its layout or leaves it to the backend (see AcquireOptions.layout); a user is asked.
    const layout = input
      ? input.layout === undefined
        ? undefined
        : layoutById(layoutsOf(backend), input.layout)
      : await chooseFreeLayout(connection, backend, name, records.stats.holdsNamed(connection.name, name));
    const mode = input ? input.mode : await askMode(connection, backend, name, lockOfNode, layout);
    const permitLimit = input ? input.permits : await askPermitLimit(connection, name, lockOfNode);
    // A read hold's lease is the store's own (Redisson's watchdog): there is no TTL to ask.
    const ttl = input?.ttl ?? (mode === 'read' ? defaultAcquireTtl() : await askTtl(backend.capabilities.owner));
    if (!input && !(await confirmJoin(connection, backend, name, mode, permitLimit))) return;
    const queued = joinsQueue(backend, lockNamed(connection, name));
    const controller = new AbortController();
    const label = displayKey(name);
    const held = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Acquiring "{0}"', label), cancellable: true },
      (progress, token) => {
        token.onCancellationRequested(() => controller.abort(new LockLensError('CANCELLED', vscode.l10n.t('cancelled'))));
        return heldLocks.acquire({
          connection,
          name,
          ttl,
          mode,
          permitLimit,
          layout: layout?.id,
          signal: controller.signal,
          onQueue: ({ ahead, fencingToken }) => progress.report({ message: queueMessage(ahead, fencingToken, queued) }),
        });
      },
    );
    await connection.watch?.sweep();
    const release = vscode.l10n.t('Release');
    const { fencingToken, owner } = held.hold;
    const heldText =
      fencingToken === null
        ? vscode.l10n.t('You hold "{0}" ({1}; this store gives no fencing tokens).', label, ownerLabel(backend.capabilities.owner, owner))
        : vscode.l10n.t('You hold "{0}" (fencing token {1}, {2}).', label, fencingToken, ownerLabel(backend.capabilities.owner, owner));
    void vscode.window
      .showInformationMessage(heldText, release)
      .then((answer) => (answer === release ? vscode.commands.executeCommand('locklens.releaseLock', held) : undefined));
    return held;
  });
}

function queueMessage(ahead: number, fencingToken: number | null, queued: boolean): string {
  if (ahead === 0) return fencingToken === null ? vscode.l10n.t('held') : vscode.l10n.t('held (fencing token {0})', fencingToken);
  if (!queued) return vscode.l10n.t('held by someone else: trying again until it is free');
  return fencingToken === null
    ? vscode.l10n.t('{0} ahead in the queue', ahead)
    : vscode.l10n.t('{0} ahead in the queue; you will hold it with fencing token {1}', ahead, fencingToken);
}

/** Scripts and tests name the connection; a tree row hands its node, which has the connection itself. */
function isInput(arg: LockTreeNode | AcquireInput): arg is AcquireInput {
  return typeof arg.connection === 'string';
}

import * as vscode from 'vscode';
import type { LeaseOperations, LockBackend } from '../../core/backend';
import { LockLensError } from '../../core/errors';
import { displayKey, parseLeaseHex } from '../../core/keys';
import type { StoreConnection } from '../connections';
import { formatTtl, roleLabel, troubleLabel } from '../format';
import type { LockTreeProvider } from '../tree/lockTreeProvider';
import { MemberNode } from '../tree/nodes';
import { acceptQuickPick, pickConnection } from '../pickers';
import { connectionNamed, type LockCommandContext } from './lockCommandContext';

/** What `locklens.revokeLease` (and `locklens.showLeaseDetails`) accepts from scripts and tests instead of a tree node. */
export interface RevokeInput {
  readonly connection: string;
  readonly lease: string;
}

/**
 * The connection and lease a lease command acts on: a row's (read by `ofRow`), a script's, or picked. A store without
 * leases says so before anything is picked.
 */
export async function leaseTarget(
  { registry, tree }: LockCommandContext,
  arg: MemberNode | RevokeInput | undefined,
  title: string,
  ofRow: (node: MemberNode) => string,
): Promise<{ connection: StoreConnection; leases: LeaseOperations; lease: string }> {
  const connection = arg instanceof MemberNode ? arg.connection : arg ? connectionNamed(registry, arg.connection) : await pickConnection(registry, title);
  const leases = leaseOperations(await connection.open());
  const lease = arg instanceof MemberNode ? ofRow(arg) : arg ? leaseArgument(arg.lease) : await pickLease(connection, tree);
  return { connection, leases, lease };
}

/** The lease operations of a store that has them (etcd), or a clear error. */
function leaseOperations(backend: LockBackend): LeaseOperations {
  if (!backend.leases) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('This store has no leases: free a stuck lock with Force Release.'));
  return backend.leases;
}

/** The leases of the connection's locks, holders first, or a lease ID typed in (hex, as in lock keys). */
async function pickLease(connection: StoreConnection, tree: LockTreeProvider): Promise<string> {
  const items: (vscode.QuickPickItem & { lease: string; position: number })[] = [];
  for (const lock of connection.watch?.locks() ?? []) {
    for (const h of tree.health(connection, lock)) {
      if (!h.member.lease) continue;
      items.push({
        label: h.member.lease,
        description: `${roleLabel(h.role)} · ${displayKey(lock.name)}`,
        detail: [formatTtl(h, 'lease'), ...h.troubles.map((t) => troubleLabel(t, 'lease'))].join(' · '),
        lease: h.member.lease,
        position: h.position,
      });
    }
  }
  items.sort((a, b) => Number(a.position > 0) - Number(b.position > 0));
  const quickPick = vscode.window.createQuickPick<(typeof items)[number]>();
  quickPick.title = vscode.l10n.t('Lease on {0}', connection.name);
  quickPick.placeholder = vscode.l10n.t('Pick a lease, or type a lease ID in hex');
  quickPick.items = items;
  quickPick.matchOnDescription = true;
  // A typed lease ID is offered first as itself, so Enter never picks another lease that merely matches the text.
  quickPick.onDidChangeValue((value) => {
    const typed = parseLeaseHex(value);
    const exact = typed !== undefined && items.some((i) => i.lease === typed);
    quickPick.items = typed && !exact ? [{ label: typed, description: vscode.l10n.t('lease ID as typed'), lease: typed, position: -1 }, ...items] : items;
  });
  return acceptQuickPick(quickPick, () => quickPick.selectedItems[0]?.lease ?? parseLeaseHex(quickPick.value));
}

/** A lease ID from a script or a typed value: hex as in lock keys (`0x` allowed), or a clear error. */
function leaseArgument(text: string): string {
  const lease = parseLeaseHex(text);
  if (!lease) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('"{0}" is not a lease ID: write it in hex, as in lock keys (e.g. 694d7a2b3c01a2f5).', text));
  return lease;
}

import * as vscode from 'vscode';
import type { RegisterCommand } from '../commandRunner';
import { LockLensError, errorMessage } from '../../core/errors';
import { revokeEffects } from '../../core/revokeEffects';
import { displayKey, keyId } from '../../core/keys';
import { members, type LockState } from '../../core/lockState';
import type { StoreConnection } from '../connections';
import type { MemberNode } from '../tree/nodes';
import { isReadOnly } from '../settings';
import { copy } from './copyCommands';
import { writable, type LockCommandContext } from './lockCommandContext';
import { leaseTarget, type RevokeInput } from './leaseTarget';
import { memberOf, shownLease } from './shownMembers';

/** Most keys a confirmation lists; the rest are counted. */
const MAX_LISTED_KEYS = 15;

export function registerLeaseCommands(register: RegisterCommand, context: LockCommandContext): vscode.Disposable[] {
  const { heldLocks, tree, audit } = context;

  const revoke = async (arg?: MemberNode | RevokeInput) => {
    writable();
    const { connection, leases, lease } = await leaseTarget(context, arg, vscode.l10n.t('Revoke lease'), (node) => shownLease(tree, node));
    const sample = await leases.describe(lease);
    if (sample.ttl < 0) throw new LockLensError('LEASE_NOT_FOUND', vscode.l10n.t('Lease {0} does not exist: it expired or was revoked already.', lease));
    const effects = revokeEffects(sample.keys, lockOfKey(connection));
    const confirm = vscode.l10n.t('Revoke Lease');
    const ownHold = heldLocks.all().find((h) => h.connection === connection && h.hold.owner === lease);
    const detail = revokeDetail(sample.keys, effects, sample.ttl);
    const answer = await vscode.window.showWarningMessage(
      vscode.l10n.t('Revoke lease {0} on {1}?', lease, connection.name),
      {
        modal: true,
        detail: ownHold ? `${vscode.l10n.t('This lease is one of your own: it holds "{0}" from this window (Release Lock does the same, quietly).', displayKey(ownHold.name))}\n\n${detail}` : detail,
      },
      confirm,
    );
    if (answer !== confirm) {
      audit.record({ action: 'revoke', outcome: 'cancelled', connection: connection.name, lease, keys: sample.keys });
      return;
    }
    const mark = audit.ownEnds.begin(connection.name, lease);
    try {
      const result = await leases.revoke(lease);
      audit.record({ action: 'revoke', outcome: 'ok', connection: connection.name, lease, keys: result.keys, detail: `revision ${result.revision}` });
      void vscode.window.showInformationMessage(
        result.keys.length === 1
          ? vscode.l10n.t('Revoked lease {0}: 1 key deleted.', lease)
          : vscode.l10n.t('Revoked lease {0}: {1} keys deleted.', lease, result.keys.length),
      );
    } catch (e) {
      mark();
      audit.record({ action: 'revoke', outcome: 'failed', connection: connection.name, lease, detail: errorMessage(e) });
      throw e;
    }
  };

  return [
    register('locklens.revokeLease', revoke),
    register('locklens.showLeaseDetails', async (arg?: MemberNode | RevokeInput) => {
      const { connection, leases, lease } = await leaseTarget(context, arg, vscode.l10n.t('Show lease details'), (node) => memberOf(tree, node).lease);
      const sample = await leases.describe(lease);
      const detail =
        sample.ttl < 0
          ? vscode.l10n.t('This lease does not exist any more: it expired or was revoked.')
          : [
              vscode.l10n.t('Remaining TTL: {0}s of {1}s granted', sample.ttl, sample.grantedTtl),
              vscode.l10n.t('Attached keys ({0}):', sample.keys.length),
              ...listKeys(sample.keys),
            ].join('\n');
      const revokeItem = vscode.l10n.t('Revoke Lease…');
      const copyItem = vscode.l10n.t('Copy Lease ID');
      const actions = sample.ttl < 0 ? [copyItem] : isReadOnly() ? [copyItem] : [copyItem, revokeItem];
      const answer = await vscode.window.showInformationMessage(vscode.l10n.t('Lease {0} on {1}', lease, connection.name), { modal: true, detail }, ...actions);
      if (answer === copyItem) await copy(lease, vscode.l10n.t('lease ID'));
      if (answer === revokeItem) await revoke({ connection: connection.name, lease });
      return sample;
    }),
  ];
}

/** Finds the lock a key belongs to among the connection's live locks. */
function lockOfKey(connection: StoreConnection): (key: Uint8Array) => LockState | undefined {
  const byKey = new Map<string, LockState>();
  for (const lock of connection.watch?.locks() ?? []) for (const m of members(lock)) byKey.set(keyId(m.key), lock);
  return (key) => byKey.get(keyId(key));
}

function listKeys(keys: readonly Uint8Array[]): string[] {
  const listed = keys.slice(0, MAX_LISTED_KEYS).map((k) => `  ${displayKey(k)}`);
  if (keys.length > MAX_LISTED_KEYS) listed.push(vscode.l10n.t('  … and {0} more', keys.length - MAX_LISTED_KEYS));
  return listed;
}

function revokeDetail(keys: readonly Uint8Array[], effects: ReturnType<typeof revokeEffects>, ttl: number): string {
  const lines = [vscode.l10n.t('etcd deletes every key attached to the lease, at once ({0}s of TTL were left). Its owner loses every lock it held with it.', ttl), ''];
  lines.push(vscode.l10n.t('Keys deleted ({0}):', keys.length), ...listKeys(keys));
  const freed = effects.filter((e) => e.frees);
  if (freed.length) {
    lines.push('', vscode.l10n.t('Locks freed:'));
    for (const e of freed) {
      lines.push(
        e.nextHolder
          ? vscode.l10n.t('  {0} → next holder {1}', displayKey(e.lock.name), displayKey(e.nextHolder.key))
          : vscode.l10n.t('  {0} → free, nobody waiting', displayKey(e.lock.name)),
      );
    }
  }
  const queued = effects.filter((e) => !e.frees);
  if (queued.length) lines.push('', vscode.l10n.t('Also leaves the queue of: {0}', queued.map((e) => displayKey(e.lock.name)).join(', ')));
  return lines.join('\n');
}

import * as vscode from 'vscode';
import type { Capabilities } from '../core/backend';
import { displayKey } from '../core/keys';
import { OwnEnds } from '../core/ownEnds';

export type AuditAction = 'acquire' | 'release' | 'revoke' | 'forceRelease' | 'lost';
export type AuditOutcome = 'ok' | 'cancelled' | 'refused' | 'failed';

export interface AuditEntry {
  readonly action: AuditAction;
  readonly outcome: AuditOutcome;
  readonly connection: string;
  readonly lock?: Uint8Array;
  /** etcd's owner: a lease in hex. */
  readonly lease?: string;
  /** Another store's owner: a token, a Redisson field, a ZooKeeper session, a database connection. */
  readonly owner?: string;
  readonly keys?: readonly Uint8Array[];
  readonly fencingToken?: number;
  readonly detail?: string;
}

/**
 * The audit's field for an owner: `lease=` where the store's owners are leases (etcd), else `owner=` (a token, a
 * session, a database connection).
 */
export function ownerField(ownerKind: Capabilities['owner'] | undefined, owner: string | undefined): Pick<AuditEntry, 'lease' | 'owner'> {
  return ownerKind === 'lease' || ownerKind === undefined ? { lease: owner } : { owner };
}

/**
 * Every mutation LockLens makes to a store (and every lock it loses), one line each in the "LockLens Audit" log channel,
 * which stamps the time. Keys are quoted, so a key with a newline or spaces cannot forge a second entry. Never holds
 * a secret: nothing here takes one.
 */
export class AuditLog implements vscode.Disposable {
  readonly channel = vscode.window.createOutputChannel(vscode.l10n.t('LockLens Audit'), { log: true });
  /** The force releases and revokes under way or just done, whose ends the views mark as LockLens's own. */
  readonly ownEnds = new OwnEnds();

  record(entry: AuditEntry): void {
    const fields = [
      `${entry.action} ${entry.outcome}`,
      `connection=${JSON.stringify(entry.connection)}`,
      entry.lock && `lock=${JSON.stringify(displayKey(entry.lock))}`,
      entry.lease && `lease=${entry.lease}`,
      entry.owner && `owner=${JSON.stringify(entry.owner)}`,
      entry.fencingToken !== undefined && `token=${entry.fencingToken}`,
      entry.keys && `keys=${JSON.stringify(entry.keys.map((k) => displayKey(k)))}`,
      entry.detail && `detail=${JSON.stringify(entry.detail)}`,
    ].filter(Boolean);
    const line = fields.join(' ');
    if (entry.outcome === 'failed' || entry.action === 'lost') this.channel.warn(line);
    else this.channel.info(line);
  }

  dispose(): void {
    this.channel.dispose();
  }
}

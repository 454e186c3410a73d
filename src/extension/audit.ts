import * as vscode from 'vscode';
import { displayKey } from '../core/keys';

export type AuditAction = 'acquire' | 'release' | 'revoke' | 'lost';
export type AuditOutcome = 'ok' | 'cancelled' | 'refused' | 'failed';

export interface AuditEntry {
  readonly action: AuditAction;
  readonly outcome: AuditOutcome;
  readonly connection: string;
  readonly lock?: Uint8Array;
  readonly lease?: string;
  readonly keys?: readonly Uint8Array[];
  readonly fencingToken?: number;
  readonly detail?: string;
}

/**
 * Every mutation LockLens makes to etcd (and every lock it loses), one line each in the "LockLens Audit" log channel,
 * which stamps the time. Keys are quoted, so a key with a newline or spaces cannot forge a second entry. Never holds
 * a secret: nothing here takes one.
 */
export class AuditLog implements vscode.Disposable {
  readonly channel = vscode.window.createOutputChannel(vscode.l10n.t('LockLens Audit'), { log: true });

  record(entry: AuditEntry): void {
    const fields = [
      `${entry.action} ${entry.outcome}`,
      `connection=${JSON.stringify(entry.connection)}`,
      entry.lock && `lock=${JSON.stringify(displayKey(entry.lock))}`,
      entry.lease && `lease=${entry.lease}`,
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

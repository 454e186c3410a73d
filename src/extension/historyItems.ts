import * as vscode from 'vscode';
import type { RecordedEnd } from '../core/recording/recordedHold';

// What the Lock History view's rows share, whatever their source: holds seen live, replayed from etcd, or recorded
// by locklens serve.

export function textItem(label: string, description?: string, icon?: string): vscode.TreeItem {
  const item = new vscode.TreeItem(label);
  item.description = description;
  if (icon) item.iconPath = new vscode.ThemeIcon(icon);
  return item;
}

/** How a hold ended, in words. */
export function endText(end: RecordedEnd | null): string {
  switch (end) {
    case 'released':
      return vscode.l10n.t('released');
    case 'revokedOrExpired':
      return vscode.l10n.t('revoked or expired');
    case 'expired':
      return vscode.l10n.t('expired');
    case 'forceReleased':
      return vscode.l10n.t('force-released');
    default:
      return vscode.l10n.t('ended');
  }
}

export const END_ICONS: Record<RecordedEnd, string> = { released: 'unlock', revokedOrExpired: 'close', expired: 'flame', forceReleased: 'debug-disconnect' };

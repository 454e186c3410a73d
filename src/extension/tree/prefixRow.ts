import * as vscode from 'vscode';
import { formatDuration } from '../format';
import { PREFIX_CONTEXT } from './contextValue';
import type { PrefixedRow } from './row';

/** `count`: how many locks are under the prefix, unknown while not watching. */
export function prefixItem(node: PrefixedRow, count: number | undefined): vscode.TreeItem {
  const item = new vscode.TreeItem(node.prefix || vscode.l10n.t('(every key)'), vscode.TreeItemCollapsibleState.Expanded);
  item.id = node.id;
  item.contextValue = PREFIX_CONTEXT;
  item.iconPath = new vscode.ThemeIcon('symbol-namespace');
  const parts = count === undefined ? [] : [count === 1 ? vscode.l10n.t('1 lock') : vscode.l10n.t('{0} locks', count)];
  const staleSince = node.connection.staleSince;
  if (staleSince) parts.push(vscode.l10n.t('stale for {0}', formatDuration(Date.now() - staleSince)));
  item.description = parts.join(' · ');
  return item;
}

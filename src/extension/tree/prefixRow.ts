import * as vscode from 'vscode';
import { formatDuration } from '../format';
import { FOLDER_CONTEXT, PREFIX_CONTEXT } from './contextValue';
import { shortName } from './labels';
import type { PrefixedRow } from './row';

/**
 * `shown`: the name its rows are shown below (the prefix, or the one folder all its locks are in, said in the
 * description: `3 locks in locks/`); `count`: how many locks are under the prefix. Both unknown while not watching.
 */
export function prefixItem(node: PrefixedRow, shown: string | undefined, count: number | undefined): vscode.TreeItem {
  // Its label stays the prefix whatever it shows below (VS Code folds a row whose label changes as it redraws).
  const item = new vscode.TreeItem(node.prefix || vscode.l10n.t('(every key)'), vscode.TreeItemCollapsibleState.Expanded);
  item.id = node.id;
  item.contextValue = PREFIX_CONTEXT;
  item.iconPath = new vscode.ThemeIcon('symbol-namespace');
  const folder = shown !== undefined && shown !== node.prefix ? shortName(Buffer.from(shown), node.prefix) : undefined;
  const parts = count === undefined ? [] : [folder ? vscode.l10n.t('{0} in {1}', locksText(count), folder) : locksText(count)];
  const staleSince = node.connection.staleSince;
  if (staleSince) parts.push(vscode.l10n.t('stale for {0}', formatDuration(Date.now() - staleSince)));
  item.description = parts.join(' · ');
  return item;
}

/** A directory of lock names below a prefix (`locks/`), named without the row it is under. */
export function folderItem(node: PrefixedRow & { readonly parent: string }, count: number): vscode.TreeItem {
  const item = new vscode.TreeItem(shortName(Buffer.from(node.prefix), node.parent), vscode.TreeItemCollapsibleState.Expanded);
  item.id = node.id;
  item.contextValue = FOLDER_CONTEXT;
  item.iconPath = new vscode.ThemeIcon('folder');
  item.description = locksText(count);
  item.tooltip = node.prefix;
  return item;
}

function locksText(count: number): string {
  return count === 1 ? vscode.l10n.t('1 lock') : vscode.l10n.t('{0} locks', count);
}

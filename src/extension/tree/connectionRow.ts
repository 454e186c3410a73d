import * as vscode from 'vscode';
import type { StoreConnection } from '../connections';
import { appendUntrusted, stateText, tooltip } from '../format';
import { connectionContext } from './contextValue';
import type { Row } from './row';

const CONNECTION_ICONS: Record<StoreConnection['state'], vscode.ThemeIcon> = {
  connected: new vscode.ThemeIcon('database', new vscode.ThemeColor('testing.iconPassed')),
  connecting: new vscode.ThemeIcon('loading~spin'),
  reconnecting: new vscode.ThemeIcon('sync~spin', new vscode.ThemeColor('list.warningForeground')),
  error: new vscode.ThemeIcon('error', new vscode.ThemeColor('list.errorForeground')),
  disconnected: new vscode.ThemeIcon('debug-disconnect'),
};

const NOT_INSTALLED_ICON = new vscode.ThemeIcon('extensions', new vscode.ThemeColor('list.warningForeground'));
/** Connected, but some of the store's nodes cannot be read: what is shown may be missing locks. */
const PARTIAL_ICON = new vscode.ThemeIcon('database', new vscode.ThemeColor('list.warningForeground'));

export function connectionItem(node: Row): vscode.TreeItem {
  const c = node.connection;
  const item = new vscode.TreeItem(c.name, vscode.TreeItemCollapsibleState.Expanded);
  item.id = node.id;
  item.contextValue = connectionContext(c.state, c.storeMissing);
  item.iconPath = c.storeMissing ? NOT_INSTALLED_ICON : c.partial ? PARTIAL_ICON : CONNECTION_ICONS[c.state];
  item.description = stateText(c);
  const md = tooltip().appendMarkdown(`**`);
  appendUntrusted(md, c.name).appendMarkdown(`**\n\n${vscode.l10n.t('Store')}: ${c.descriptor.displayName}\n\n${vscode.l10n.t('Endpoints')}: `);
  appendUntrusted(md, c.settings.endpoints.join(', '));
  if (c.settings.username) appendUntrusted(md.appendMarkdown(`\n\n${vscode.l10n.t('User')}: `), c.settings.username);
  if (c.settings.namespace) appendUntrusted(md.appendMarkdown(`\n\n${vscode.l10n.t('Namespace')}: `), c.settings.namespace);
  if (c.settings.tls) md.appendMarkdown(`\n\n$(shield) ${vscode.l10n.t('TLS')}${c.settings.tls.insecureSkipVerify ? ` (${vscode.l10n.t('certificate not verified')})` : ''}`);
  if (c.error) appendUntrusted(md.appendMarkdown(`\n\n$(warning) `), c.error.message);
  if (c.partial) appendUntrusted(md.appendMarkdown(`\n\n$(warning) `), c.partial.detail);
  if (c.hidden) appendUntrusted(md.appendMarkdown(`\n\n$(eye-closed) `), c.hidden);
  item.tooltip = md;
  return item;
}

export function hintItem(node: Row): vscode.TreeItem {
  const item = new vscode.TreeItem(vscode.l10n.t('Watch a prefix…'));
  item.id = node.id;
  item.iconPath = new vscode.ThemeIcon('add');
  item.command = { command: 'locklens.addPrefix', title: vscode.l10n.t('Watch a prefix…'), arguments: [node] };
  return item;
}

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import type { LockLensApi } from '../../../src/extension/extension';
import { eventually } from '../../harness/etcd';
import { startRedis, type RedisServer } from '../../harness/redis';
import { removeConnectionSetting } from './fixture';

/**
 * A connection whose store is only partly readable (one of three redlock instances down): the Locks view says so on
 * the connection row, with a warning icon and the store's own explanation in the tooltip, and says it no more once the
 * instance is back.
 */
describe('A connection with one of its nodes unreachable', function () {
  const CONNECTION = 'e2e-partial';
  let servers: RedisServer[] = [];
  let api: LockLensApi;

  const connectionRow = () => {
    const node = api.tree.getChildren().find((n) => n.connection.name === CONNECTION)!;
    return api.tree.getTreeItem(node);
  };
  /** The tooltip's text as shown: the store's words are escaped into the markdown (spaces kept, nothing rendered). */
  const tooltip = (item: vscode.TreeItem) =>
    (item.tooltip instanceof vscode.MarkdownString ? item.tooltip.value : String(item.tooltip ?? '')).replace(/&nbsp;/g, ' ').replace(/\\(.)/g, '$1');

  before(async () => {
    servers = [await startRedis(), await startRedis(), await startRedis()];
    api = (await vscode.extensions.getExtension('locklens.locklens')!.activate()) as LockLensApi;
    await vscode.workspace.getConfiguration('locklens').update('pollSeconds', 0.2, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('locklens.addConnection', { name: CONNECTION, store: 'redis', endpoints: servers.map((s) => s.url), prefixes: ['p:'] });
    await eventually(() => api.registry.get(CONNECTION)?.state === 'connected', 20_000, `${CONNECTION} connected`);
  });

  after(async () => {
    await removeConnectionSetting(CONNECTION);
    await vscode.workspace.getConfiguration('locklens').update('pollSeconds', undefined, vscode.ConfigurationTarget.Global);
    for (const s of servers) await s.dispose();
  });

  it('says which instance is unreachable while it is down, and nothing once it is back', async () => {
    const c = api.registry.get(CONNECTION)!;
    assert.equal(connectionRow().description, 'connected');
    const down = servers[2];
    await down.stop();
    const label = `127.0.0.1:${down.port}`;
    await eventually(() => connectionRow().description === `connected; unreachable: ${label}`, 20_000, 'the row names the instance that is down');
    const item = connectionRow();
    assert.equal((item.iconPath as vscode.ThemeIcon).id, 'database');
    // ThemeColor's id is not in the API's types, but it is what the workbench reads.
    assert.equal(((item.iconPath as vscode.ThemeIcon).color as unknown as { id: string }).id, 'list.warningForeground');
    assert.match(tooltip(item), new RegExp(`1 of 3 instances unreachable \\(${label.replace(/\./g, '\\.')}\\): its locks count as not agreeing, the others are shown`));
    assert.equal(c.state, 'connected', 'the other two are read: still connected');
    await down.start();
    await eventually(() => connectionRow().description === 'connected', 30_000, 'the row is plain again once the instance is back');
    assert.doesNotMatch(tooltip(connectionRow()), /unreachable/);
  });
});

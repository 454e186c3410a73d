import * as vscode from 'vscode';
import type { LockLensApi } from '../../../src/extension/extension';
import { eventually } from '../../harness/etcd';

/** Activates LockLens and adds a connection through its command (as a script would), waiting until it is connected. */
export async function activateWithConnection(name: string, endpoint: string, prefixes: string[]): Promise<LockLensApi> {
  const api = (await vscode.extensions.getExtension('locklens.locklens')!.activate()) as LockLensApi;
  await vscode.commands.executeCommand('locklens.addConnection', { name, endpoints: [endpoint], prefixes });
  await eventually(() => api.registry.get(name)?.state === 'connected', 20_000, `${name} connected`);
  return api;
}

/** Removes a connection from user settings directly (no confirmation), leaving the other suites' connections. */
export async function removeConnectionSetting(name: string): Promise<void> {
  const config = vscode.workspace.getConfiguration('locklens');
  const others = (config.get<{ name: string }[]>('connections') ?? []).filter((c) => c.name !== name);
  await config.update('connections', others.length ? others : undefined, vscode.ConfigurationTarget.Global);
}

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
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

/** Where VS Code keeps this window's user data: log channels write under <user data>/logs/<session>/exthost<n>/. */
export function userDataDir(api: LockLensApi): string {
  return dirname(dirname(dirname(dirname(api.logUri.fsPath))));
}

/** The "LockLens Audit" log channel as written to disk so far. */
export function auditText(api: LockLensApi): string {
  return walk(userDataDir(api))
    .filter((f) => f.includes('LockLens Audit'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('');
}

/** Every file below `dir` (skipping the very large). */
export function walk(dir: string): string[] {
  let files: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) files = files.concat(walk(path));
    else if (st.isFile() && st.size < 20_000_000) files.push(path);
  }
  return files;
}

/**
 * The commands a tree row's context menu offers for `contextValue`, evaluating this extension's own `view/item/context`
 * when clauses the way VS Code does for the clauses they use: `view == …`, `viewItem == …`, `viewItem =~ /…/` and
 * `!config.locklens.readOnly` (read-only off unless `readOnly`).
 */
export function menuCommands(contextValue: string, readOnly = false): string[] {
  const manifest = vscode.extensions.getExtension('locklens.locklens')!.packageJSON as { contributes: { menus: Record<string, { command: string; when?: string }[]> } };
  const holds = (clause: string): boolean => {
    const c = clause.trim();
    if (c === 'view == locklens.locks') return true;
    if (c === '!config.locklens.readOnly') return !readOnly;
    const equal = /^viewItem == (\S+)$/.exec(c);
    if (equal) return contextValue === equal[1];
    const match = /^viewItem =~ \/(.*)\/$/.exec(c);
    if (match) return new RegExp(match[1]).test(contextValue);
    throw new Error(`a when clause this helper does not evaluate: ${c}`);
  };
  const commands = manifest.contributes.menus['view/item/context'].filter((m) => (m.when ?? '').split('&&').every(holds)).map((m) => m.command);
  return [...new Set(commands)].sort();
}

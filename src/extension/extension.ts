import * as vscode from 'vscode';

/**
 * The VS Code side of LockLens. The Locks tree, commands, status bar and secrets arrive with their own issue; the
 * host bundle, its activation (on LockLens's views and commands only) and its log channel are in place.
 */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('LockLens', { log: true });
  context.subscriptions.push(log);
  log.info(`LockLens ${context.extension.packageJSON.version} activated`);
}

export function deactivate(): void {}

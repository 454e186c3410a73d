import * as vscode from 'vscode';
import { LockLensError, errorMessage } from '../core/errors';
import { Cancelled } from './pickers';

/**
 * Registers a command whose failures reach the user as one clear message (LockLensError messages say what to fix)
 * instead of VS Code's generic "command failed"; closing a picker or cancelling is quiet.
 */
export type RegisterCommand = (id: string, handler: (...args: never[]) => unknown) => vscode.Disposable;

export const commandRegistrar =
  (log: vscode.LogOutputChannel): RegisterCommand =>
  (id, handler) =>
    vscode.commands.registerCommand(id, async (...args: never[]) => {
    try {
      return await handler(...args);
    } catch (e) {
      if (e instanceof Cancelled || (e instanceof LockLensError && e.code === 'CANCELLED')) return undefined;
      log.error(`${id}: ${errorMessage(e)}`);
      void vscode.window.showErrorMessage(e instanceof LockLensError ? e.message : vscode.l10n.t('LockLens: {0}', errorMessage(e)));
      return undefined;
    }
  });

import * as vscode from 'vscode';
import { displayKey } from '../core/keys';
import type { HeldLocks } from './heldLocks';
import { ownerLabel } from './format';

/** "$(lock) 2 held": the locks this window holds; a click releases (picking one when there are several). */
export class HeldLocksStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('locklens.heldLocks', vscode.StatusBarAlignment.Left, 50);
  private readonly subscription: { dispose(): void };

  constructor(private readonly heldLocks: HeldLocks) {
    this.item.name = vscode.l10n.t('LockLens: held locks');
    this.item.command = 'locklens.releaseLock';
    this.subscription = heldLocks.onDidChange(() => this.render());
    this.render();
  }

  private render(): void {
    const held = this.heldLocks.all();
    if (held.length === 0) return this.item.hide();
    this.item.text = held.length === 1 ? `$(lock) ${displayKey(held[0].name)}` : `$(lock) ${vscode.l10n.t('{0} locks held', held.length)}`;
    const md = new vscode.MarkdownString(`**${vscode.l10n.t('Locks held from this window')}**\n\n`, true);
    md.isTrusted = false;
    for (const h of held) {
      md.appendMarkdown('- ')
        .appendText([displayKey(h.name), h.connection.name, ...(h.hold.fencingToken === null ? [] : [vscode.l10n.t('token {0}', h.hold.fencingToken)]), ownerLabel(h.ownerKind, h.hold.owner)].join(' · '))
        .appendMarkdown('\n');
    }
    md.appendMarkdown(`\n${vscode.l10n.t('Click to release.')}`);
    this.item.tooltip = md;
    this.item.show();
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}

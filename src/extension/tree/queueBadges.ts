import * as vscode from 'vscode';

/**
 * How many wait for a lock, as a badge at the end of its row: a file decoration, as the Source Control view counts
 * changes. At VS Code's default sidebar width a lock row has room for about 25 characters: a name of 16 leaves its
 * description the state and its age, and a longer one cuts even those; the badge is never cut off. The description
 * says it in words too, for wider sidebars and screen readers.
 */
export class QueueBadges implements vscode.FileDecorationProvider, vscode.Disposable {
  private readonly shown = new Map<string, vscode.FileDecoration>();
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri[]>();
  readonly onDidChangeFileDecorations = this.changeEmitter.event;
  private readonly registration = vscode.window.registerFileDecorationProvider(this);

  /** The row's resource, which carries its badge: `waiting` waiters, `words` saying so ("2 waiting"); none for 0. */
  badge(rowId: string, waiting: number, words: string): vscode.Uri {
    const uri = this.uriOf(rowId);
    const key = uri.toString();
    const was = this.shown.get(key);
    // A badge holds two characters at most.
    const badge = waiting > 99 ? '99' : String(waiting);
    if (waiting === 0) this.shown.delete(key);
    else if (was?.badge !== badge || was.tooltip !== words) this.shown.set(key, new vscode.FileDecoration(badge, words));
    if (this.shown.get(key) !== was) this.changeEmitter.fire([uri]);
    return uri;
  }

  /** The row is gone (its lock went while others still waited): its badge is dropped rather than kept for ever. */
  forget(rowId: string): void {
    this.shown.delete(this.uriOf(rowId).toString());
  }

  provideFileDecoration(uri: vscode.Uri): vscode.FileDecoration | undefined {
    return this.shown.get(uri.toString());
  }

  private uriOf(rowId: string): vscode.Uri {
    return vscode.Uri.from({ scheme: 'locklens-lock', path: `/${encodeURIComponent(rowId)}` });
  }

  dispose(): void {
    this.registration.dispose();
    this.changeEmitter.dispose();
  }
}

import * as vscode from 'vscode';

type Window = typeof vscode.window;
type Answers = { [K in keyof Window]?: Window[K] };

/**
 * Replaces window functions (modal confirmations, error messages) for one test and records what they were shown.
 * The test files live inside the extension's folder, so they get the same `vscode` API object as the extension.
 */
export class WindowStubs {
  private readonly saved: Partial<Record<keyof Window, unknown>> = {};
  readonly shown: { kind: string; message: string; detail?: string }[] = [];

  /** Answers modal and non-modal warnings with `answer(message, items)` (at once, or once its promise settles). */
  warnings(answer: (message: string, items: string[]) => string | undefined | Promise<string | undefined>): this {
    return this.replace('showWarningMessage', ((message: string, ...rest: unknown[]) => {
      const options = typeof rest[0] === 'object' && rest[0] !== null && !('title' in rest[0]) ? (rest[0] as vscode.MessageOptions) : undefined;
      const items = rest.filter((r): r is string => typeof r === 'string');
      this.shown.push({ kind: 'warning', message, detail: options?.detail });
      return Promise.resolve(answer(message, items));
    }) as Window['showWarningMessage']);
  }

  /** Answers input boxes with `answer(options)` (the default value, say); records their prompts. */
  inputs(answer: (options: vscode.InputBoxOptions) => string | undefined): this {
    return this.replace('showInputBox', ((options: vscode.InputBoxOptions = {}) => {
      this.shown.push({ kind: 'input', message: options.prompt ?? '' });
      return Promise.resolve(answer(options));
    }) as Window['showInputBox']);
  }

  /** Answers quick picks with `answer(items, options)` (the item marked picked, say); records their titles. */
  picks(answer: (items: readonly vscode.QuickPickItem[], options: vscode.QuickPickOptions) => vscode.QuickPickItem | undefined): this {
    return this.replace('showQuickPick', (async (items: readonly vscode.QuickPickItem[] | Thenable<readonly vscode.QuickPickItem[]>, options: vscode.QuickPickOptions = {}) => {
      const list = await items;
      this.shown.push({ kind: 'pick', message: options.title ?? '', detail: list.map((i) => i.label).join('\n') });
      return answer(list, options);
    }) as unknown as Window['showQuickPick']);
  }

  /** Answers open dialogs (a file or folder to pick) with `answer(options)`; records their titles. */
  openDialogs(answer: (options: vscode.OpenDialogOptions) => vscode.Uri[] | undefined): this {
    return this.replace('showOpenDialog', ((options: vscode.OpenDialogOptions = {}) => {
      this.shown.push({ kind: 'open', message: options.title ?? '' });
      return Promise.resolve(answer(options));
    }) as Window['showOpenDialog']);
  }

  /** Records error and information messages and answers them with nothing. */
  messages(): this {
    const record = (kind: string) =>
      ((message: string, ...rest: unknown[]) => {
        const options = typeof rest[0] === 'object' && rest[0] !== null ? (rest[0] as vscode.MessageOptions) : undefined;
        this.shown.push({ kind, message, detail: options?.detail });
        return Promise.resolve(undefined);
      }) as Window['showErrorMessage'];
    this.replace('showErrorMessage', record('error'));
    return this.replace('showInformationMessage', record('info') as Window['showInformationMessage']);
  }

  restore(): void {
    for (const [name, fn] of Object.entries(this.saved)) (vscode.window as unknown as Record<string, unknown>)[name] = fn;
  }

  private replace<K extends keyof Window>(name: K, fn: Answers[K]): this {
    if (!(name in this.saved)) this.saved[name] = vscode.window[name];
    (vscode.window as unknown as Record<string, unknown>)[name] = fn;
    return this;
  }
}

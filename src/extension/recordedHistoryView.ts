import * as vscode from 'vscode';
import { errorMessage } from '../core/errors';
import { HistoryStore } from '../core/recording/historyStore';
import type { RecordedHold } from '../core/recording/recordedHold';
import type { RegisterCommand } from './commandRunner';
import { appendUntrusted, formatSpan, tooltip } from './format';
import { END_ICONS, endText, textItem } from './historyItems';

/** Where the data directory of a `locklens serve` is remembered: a path of this machine, so never synced elsewhere. */
const SETTING = 'recordedHistoryDir';

/** Recorded holds listed, the newest. */
const MAX_RECORDED_ITEMS = 200;

/**
 * The history a `locklens serve` recorded in its data directory, opened in the Lock History view: the recorded holds
 * of the lock the view shows, beside what this window saw live. Read in the background when the view's lock or its
 * records change; the view draws the last read.
 */
export class RecordedHistory implements vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changeEmitter.event;
  private read: { readonly lock: string; readonly dir: string; readonly result: readonly RecordedHold[] | Error } | undefined;
  private reading: string | undefined;
  /** The lock last asked for: read again from the new directory when the setting changes. */
  private lock: string | undefined;
  private readonly subscription = vscode.workspace.onDidChangeConfiguration((e) => {
    if (!e.affectsConfiguration(`locklens.${SETTING}`)) return;
    if (this.lock !== undefined) this.load(this.lock);
    this.changeEmitter.fire();
  });

  /** The data directory set, if any. */
  get dir(): string | undefined {
    return vscode.workspace.getConfiguration('locklens').get<string>(SETTING) || undefined;
  }

  /** Reads the recorded holds of `lock` (its name as display text) again; the view is told once they differ. */
  load(lock: string): void {
    this.lock = lock;
    const dir = this.dir;
    const key = JSON.stringify([dir, lock]);
    if (!dir || this.reading === key) return;
    this.reading = key;
    void readHolds(dir, lock).then((result) => {
      if (this.reading === key) this.reading = undefined;
      const same = this.read?.lock === lock && this.read.dir === dir && JSON.stringify(this.read.result) === JSON.stringify(result);
      this.read = { lock, dir, result };
      if (!same) this.changeEmitter.fire();
    });
  }

  /** The rows of the view's section for `lock`: what the last read found, newest first. */
  items(lock: string): vscode.TreeItem[] {
    const dir = this.dir;
    const read = this.read;
    if (!dir) return [];
    if (!read || read.lock !== lock || read.dir !== dir) return [textItem(vscode.l10n.t('Reading the recorded history…'), undefined, 'loading~spin')];
    if (read.result instanceof Error) return [textItem(vscode.l10n.t('Could not read the history recorded in {0}: {1}', dir, read.result.message), undefined, 'warning')];
    if (read.result.length === 0) return [textItem(vscode.l10n.t('No hold of this lock recorded in {0}.', dir), undefined, 'info')];
    const connections = new Set(read.result.map((h) => h.connection));
    return [...read.result].reverse().map((h) => recordedItem(h, connections.size > 1));
  }

  dispose(): void {
    this.subscription.dispose();
    this.changeEmitter.dispose();
  }
}

async function readHolds(dir: string, lock: string): Promise<readonly RecordedHold[] | Error> {
  try {
    const store = await HistoryStore.openReader(dir);
    try {
      return await store.holds({ lock, limit: MAX_RECORDED_ITEMS });
    } finally {
      store.close();
    }
  } catch (e) {
    return e instanceof Error ? e : new Error(errorMessage(e));
  }
}

function recordedItem(h: RecordedHold, showConnection: boolean): vscode.TreeItem {
  const bound = h.acquiredExact ? '' : '≥ ';
  const held = formatSpan((h.endedAt ?? Date.now()) - h.acquiredAt);
  const parts = [h.endedAt === null ? vscode.l10n.t('holding for {0}{1}', bound, held) : vscode.l10n.t('held {0}{1}', bound, held)];
  if (h.endedAt !== null) parts.push(h.forceReleasedBy ? vscode.l10n.t('force-released by {0}', h.forceReleasedBy) : endText(h.end));
  if (h.token !== null) parts.push(vscode.l10n.t('token {0}', h.token));
  if (h.waitedMs !== null) parts.push(vscode.l10n.t('waited {0}', formatSpan(h.waitedMs)));
  if (showConnection) parts.push(vscode.l10n.t('on {0}', h.connection));
  const item = textItem(h.owner || h.key, parts.join(' · '), h.endedAt === null ? 'lock' : h.end ? END_ICONS[h.end] : 'circle-outline');
  const md = tooltip();
  appendUntrusted(md.appendMarkdown(`${vscode.l10n.t('Key')}: `), h.key);
  appendUntrusted(md.appendMarkdown(`\n\n${vscode.l10n.t('Owner')}: `), h.owner || vscode.l10n.t('none'));
  appendUntrusted(md.appendMarkdown(`\n\n${vscode.l10n.t('Connection')}: `), `${h.connection} (${h.store})`);
  md.appendMarkdown(`\n\n${vscode.l10n.t('Acquired')}: ${new Date(h.acquiredAt).toLocaleString()}${h.acquiredExact ? '' : ` (${vscode.l10n.t('already held when locklens serve looked')})`}`);
  if (h.endedAt !== null) {
    md.appendMarkdown(`\n\n${vscode.l10n.t('Ended')}: ${new Date(h.endedAt).toLocaleString()}${h.endedExact ? '' : ` (${vscode.l10n.t('found gone when locklens serve looked again')})`} · `);
    appendUntrusted(md, h.forceReleasedBy ? vscode.l10n.t('force-released by {0}', h.forceReleasedBy) : endText(h.end));
  }
  item.tooltip = md;
  return item;
}

/** Open Recorded History…: asks for serve's data directory and remembers it (this machine's user settings). */
export function registerRecordedHistory(register: RegisterCommand, recorded: RecordedHistory, focus: () => Thenable<unknown>): vscode.Disposable {
  return register('locklens.openRecordedHistory', async () => {
    const dir = recorded.dir;
    const picked = await vscode.window.showOpenDialog({
      canSelectFiles: false,
      canSelectFolders: true,
      canSelectMany: false,
      defaultUri: dir ? vscode.Uri.file(dir) : undefined,
      openLabel: vscode.l10n.t('Open Recorded History'),
      title: vscode.l10n.t("The data directory of locklens serve (its config's data)"),
    });
    if (!picked?.[0]) return;
    await vscode.workspace.getConfiguration('locklens').update(SETTING, picked[0].fsPath, vscode.ConfigurationTarget.Global);
    await focus();
  });
}

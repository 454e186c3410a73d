import * as vscode from 'vscode';
import { LockLensError } from '../core/errors';
import { MAX_REPLAY_REVISIONS, type HistorySpan, type LockHistory, type ReplayOptions, type ReplayedHold } from '../core/history';
import { incidentReport } from '../core/incidentReport';
import { displayKey } from '../core/keys';
import type { ObservedHold } from '../core/holdObservation';
import { holdBound, type LockFigures, type Spread } from '../core/lockFigures';
import { isSingleKey, type LockState } from '../core/lockState';
import type { RegisterCommand } from './commandRunner';
import type { StoreConnection, ConnectionRegistry } from './connections';
import { appendUntrusted, formatSpan, tooltip } from './format';
import { END_ICONS, endText, textItem } from './historyItems';
import type { LockRecords } from './lockRecords';
import type { LockTreeProvider } from './tree/lockTreeProvider';
import { LockNode, MemberNode, type LockTreeNode } from './tree/nodes';
import { Cancelled, pickConnection, pickLock } from './pickers';
import { RecordedHistory, registerRecordedHistory } from './recordedHistoryView';

export const HISTORY_VIEW = 'locklens.history';

/** The lock the view shows: chosen in the Locks view (selection or Show History), or picked. */
interface Target {
  readonly connection: StoreConnection;
  readonly lockId: string;
  readonly name: Buffer;
  readonly single: boolean;
}

type HistoryNode =
  | { readonly kind: 'section'; readonly section: 'figures' | 'live' | 'past' | 'recorded' }
  | { readonly kind: 'item'; readonly item: vscode.TreeItem };

/**
 * The Lock History view: for the lock selected in the Locks view, what LockLens recorded of it (figures, recent holds
 * seen live) and, where the store keeps its past (etcd), the holds replayed from it. Redrawn when the records of that
 * lock change, at most once a second.
 */
export class LockHistoryProvider implements vscode.TreeDataProvider<HistoryNode>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<HistoryNode | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  target: Target | undefined;
  /** Replays by connection and lock: the view and the timeline show the same one until replayed again. */
  private readonly replays = new Map<string, LockHistory>();
  private redrawTimer?: NodeJS.Timeout;
  private readonly subscription: vscode.Disposable;

  constructor(
    private readonly records: LockRecords,
    private readonly recorded: RecordedHistory,
  ) {
    this.subscription = vscode.Disposable.from(
      records.onDidChange(({ connection, lockIds }) => {
        const t = this.target;
        if (t && t.connection.name === connection && lockIds.includes(t.lockId)) this.redrawSoon();
      }),
      recorded.onDidChange(() => this.changeEmitter.fire(undefined)),
    );
  }

  show(target: Target): void {
    this.target = target;
    this.redraw();
  }

  /** Shows nothing, and forgets the replays of the connection it showed. */
  clear(): void {
    const t = this.target;
    if (!t) return;
    for (const key of [...this.replays.keys()]) if ((JSON.parse(key) as string[])[0] === t.connection.name) this.replays.delete(key);
    this.target = undefined;
    this.redraw();
  }

  replay(target: Target): LockHistory | undefined {
    return this.replays.get(replayKey(target));
  }

  setReplay(target: Target, history: LockHistory): void {
    this.replays.set(replayKey(target), history);
    this.show(target);
  }

  getChildren(node?: HistoryNode): HistoryNode[] {
    const t = this.target;
    if (!t) return [];
    if (!node) {
      const sections: HistoryNode[] = [{ kind: 'section', section: 'figures' }, { kind: 'section', section: 'live' }];
      if (t.connection.backend?.history) sections.push({ kind: 'section', section: 'past' });
      if (this.recorded.dir) sections.push({ kind: 'section', section: 'recorded' });
      return sections;
    }
    switch (node.kind) {
      case 'item':
        return [];
      case 'section': {
        const items =
          node.section === 'figures'
            ? figureItems(this.records.stats.figures(t.connection.name, t.lockId))
            : node.section === 'live'
              ? liveItems(this.records.stats.holds(t.connection.name, t.lockId))
              : node.section === 'recorded'
                ? this.recorded.items(displayKey(t.name))
                : pastItems(this.replay(t), t, (revision) => this.records.stats.timeOfRevision(t.connection.name, revision));
        return items.map((item) => ({ kind: 'item', item }));
      }
    }
  }

  getTreeItem(node: HistoryNode): vscode.TreeItem {
    switch (node.kind) {
      case 'item':
        return node.item;
      case 'section':
        return sectionItem(node.section);
    }
  }

  private redrawSoon(): void {
    this.redrawTimer ??= setTimeout(() => {
      this.redrawTimer = undefined;
      this.redraw();
    }, 1000);
  }

  redraw(): void {
    const t = this.target;
    if (t) this.recorded.load(displayKey(t.name));
    void vscode.commands.executeCommand('setContext', 'locklens.historyReplayed', !!t && this.replays.has(replayKey(t)));
    void vscode.commands.executeCommand('setContext', 'locklens.historyCanReplay', t?.connection.backend?.history !== undefined);
    this.changeEmitter.fire(undefined);
  }

  dispose(): void {
    clearTimeout(this.redrawTimer);
    this.subscription.dispose();
    this.changeEmitter.dispose();
  }
}

const SECTION_LABELS = {
  figures: () => vscode.l10n.t('Figures'),
  live: () => vscode.l10n.t('Recent holds (seen live)'),
  past: () => vscode.l10n.t("Replayed from the store's history"),
  recorded: () => vscode.l10n.t('Recorded by locklens serve'),
};
const SECTION_ICONS = { figures: 'graph', live: 'pulse', past: 'history', recorded: 'database' };

function sectionItem(section: keyof typeof SECTION_LABELS): vscode.TreeItem {
  const item = new vscode.TreeItem(SECTION_LABELS[section](), vscode.TreeItemCollapsibleState.Expanded);
  item.id = section;
  item.iconPath = new vscode.ThemeIcon(SECTION_ICONS[section]);
  item.contextValue = `history.${section}`;
  return item;
}

/** Replayed holds listed, the newest: a long history would make every redraw build thousands of rows. */
const MAX_PAST_ITEMS = 200;

function replayKey(t: Target): string {
  return JSON.stringify([t.connection.name, t.lockId]);
}

function spreadText(s: Spread): string {
  return vscode.l10n.t('p50 {0} · p95 {1} · max {2} ({3} seen)', formatSpan(s.p50), formatSpan(s.p95), formatSpan(s.max), s.count);
}

function figureItems(f: LockFigures | undefined): vscode.TreeItem[] {
  if (!f) return [textItem(vscode.l10n.t('Nothing recorded yet: LockLens records holds and waits while it watches.'), undefined, 'info')];
  const items = [
    textItem(vscode.l10n.t('Holds seen'), vscode.l10n.t('{0} since {1}', f.holds, new Date(f.since).toLocaleString())),
    textItem(vscode.l10n.t('Hold time'), f.hold ? spreadText(f.hold) : vscode.l10n.t('no hold seen from start to end yet')),
    textItem(vscode.l10n.t('Wait time'), f.wait ? spreadText(f.wait) : vscode.l10n.t('no wait seen from start to end yet')),
    textItem(vscode.l10n.t('Handoffs'), vscode.l10n.t('{0} per minute · {1} holder changes', f.handoffsPerMinute.toFixed(1), f.transitions)),
  ];
  if (f.longestHold) items.push(textItem(vscode.l10n.t('Longest hold'), vscode.l10n.t('{0} by {1}', formatSpan(f.longestHold.ms), f.longestHold.who)));
  if (f.longestWait) items.push(textItem(vscode.l10n.t('Longest wait'), vscode.l10n.t('{0} by {1}', formatSpan(f.longestWait.ms), f.longestWait.who)));
  items.push(textItem(vscode.l10n.t('Stalls'), vscode.l10n.t('{0} (TTL not renewed)', f.stalls), f.stalls ? 'warning' : undefined));
  return items;
}

function liveItems(holds: readonly ObservedHold[]): vscode.TreeItem[] {
  if (holds.length === 0) return [textItem(vscode.l10n.t('No hold seen yet.'), undefined, 'info')];
  const now = Date.now();
  return [...holds].reverse().map((h) => {
    const bound = holdBound(h);
    const held = bound === null ? '?' : formatSpan((h.endedAt ?? now) - h.acquiredAt);
    const parts = [h.endedAt === null ? vscode.l10n.t('holding for {0}{1}', bound ?? '', held) : vscode.l10n.t('held {0}{1}', bound ?? '', held)];
    if (h.endedAt !== null) parts.push(endText(h.end));
    if (h.token !== null) parts.push(vscode.l10n.t('token {0}', h.token));
    if (h.waitedMs !== null) parts.push(vscode.l10n.t('waited {0}', formatSpan(h.waitedMs)));
    const item = textItem(h.owner || h.key, parts.join(' · '), h.endedAt === null ? 'lock' : h.end ? END_ICONS[h.end] : 'circle-outline');
    const md = tooltip();
    appendUntrusted(md.appendMarkdown(`${vscode.l10n.t('Key')}: `), h.key);
    appendUntrusted(md.appendMarkdown(`\n\n${vscode.l10n.t('Owner')}: `), h.owner || vscode.l10n.t('none'));
    md.appendMarkdown(`\n\n${vscode.l10n.t('Acquired')}: ${new Date(h.acquiredAt).toLocaleString()}${h.acquiredExact ? '' : ` (${vscode.l10n.t('already held when LockLens looked')})`}`);
    if (h.acquiredRevision !== null) md.appendMarkdown(` · ${vscode.l10n.t('revision {0}', h.acquiredRevision)}`);
    if (h.endedAt !== null) md.appendMarkdown(`\n\n${vscode.l10n.t('Ended')}: ${new Date(h.endedAt).toLocaleString()}${h.endedExact ? '' : ` (${vscode.l10n.t('found gone when LockLens looked again')})`} · ${endText(h.end)}`);
    if (h.endedRevision !== null) md.appendMarkdown(` · ${vscode.l10n.t('revision {0}', h.endedRevision)}`);
    item.tooltip = md;
    return item;
  });
}

function pastItems(history: LockHistory | undefined, t: Target, timeOf: (revision: number) => number | undefined): vscode.TreeItem[] {
  if (!history) {
    const item = textItem(vscode.l10n.t("Replay the store's history…"), vscode.l10n.t('every hold back to the last compaction'), 'play');
    item.command = { command: 'locklens.replayHistory', title: vscode.l10n.t('Replay History'), arguments: [{ connection: t.connection.name, lockId: t.lockId }] };
    return [item];
  }
  const items = [
    textItem(
      vscode.l10n.t('Revisions {0} to {1}', history.fromRevision, history.toRevision),
      vscode.l10n.t('{0} holds · {1} events read', history.holds.length, history.events),
      'info',
    ),
  ];
  if (history.compactedAt !== null) {
    items.push(textItem(vscode.l10n.t('History before revision {0} was compacted: older holds are not shown.', history.compactedAt), undefined, 'warning'));
  }
  if (history.skippedBefore !== null) {
    items.push(textItem(vscode.l10n.t('Read from revision {0} on, as chosen: older holds are not shown.', history.skippedBefore), undefined, 'info'));
  }
  if (history.endedOnSilence) {
    items.push(textItem(vscode.l10n.t('etcd stayed silent where events could have come: this etcd cannot say when a watch has caught up, so the read ended after a quiet time.'), undefined, 'warning'));
  }
  const at = (revision: number) => {
    const time = timeOf(revision);
    return time === undefined ? vscode.l10n.t('revision {0}', revision) : vscode.l10n.t('revision {0} ({1})', revision, new Date(time).toLocaleTimeString());
  };
  const shown = history.holds.slice(-MAX_PAST_ITEMS).reverse();
  for (const h of shown) items.push(replayedItem(h, at));
  const older = history.holds.length - shown.length;
  if (older > 0) items.push(textItem(vscode.l10n.t('{0} older holds not listed here (locklens history NAME lists every one)', older), undefined, 'ellipsis'));
  return items;
}

function replayedItem(h: ReplayedHold, at: (revision: number) => string): vscode.TreeItem {
  const from = h.beforeHistory ? vscode.l10n.t('before {0}', at(h.acquiredRevision)) : at(h.acquiredRevision);
  const parts = [h.endedRevision === null ? vscode.l10n.t('holding since {0}', from) : vscode.l10n.t('{0} → {1}', from, at(h.endedRevision))];
  if (h.endedRevision !== null) parts.push(endText(h.end));
  if (h.token !== null) parts.push(vscode.l10n.t('token {0}', h.token));
  if (h.waiterCount) parts.push(vscode.l10n.t('{0} waiting', h.waiterCount));
  const item = textItem(displayKey(h.key), parts.join(' · '), h.endedRevision === null ? 'lock' : h.end ? END_ICONS[h.end] : 'circle-outline');
  const md = tooltip();
  appendUntrusted(md.appendMarkdown(`${vscode.l10n.t('Key')}: `), h.key);
  md.appendMarkdown(`\n\n${vscode.l10n.t('Lease')}: ${h.lease || vscode.l10n.t('none')}`);
  for (const w of h.waiters) appendUntrusted(md.appendMarkdown(`\n\n- ${vscode.l10n.t('waiting')}: `), w);
  item.tooltip = md;
  return item;
}

/** What a history command acts on: a Locks view row, a script's `{connection, lockId}`, the view's lock, or a pick. */
/** A lock named by scripts and tests: its connection's name and the lock's id. */
type NamedLock = { readonly connection: string; readonly lockId: string };
type HistoryArg = LockTreeNode | NamedLock | undefined;

function isNamedLock(arg: LockTreeNode | NamedLock): arg is NamedLock {
  return typeof arg.connection === 'string';
}

export function registerHistory(
  register: RegisterCommand,
  registry: ConnectionRegistry,
  tree: LockTreeProvider,
  treeView: vscode.TreeView<LockTreeNode>,
  records: LockRecords,
  showPastInTimeline: (history: LockHistory, connection: string) => void,
): { readonly provider: LockHistoryProvider; readonly disposables: vscode.Disposable[] } {
  const recorded = new RecordedHistory();
  const provider = new LockHistoryProvider(records, recorded);
  const view = vscode.window.createTreeView(HISTORY_VIEW, { treeDataProvider: provider });

  const targetOf = (connection: StoreConnection, lock: LockState): Target => ({ connection, lockId: lock.id, name: lock.name, single: isSingleKey(lock) });
  const describe = (t: Target) => {
    view.description = `${displayKey(t.name)} · ${t.connection.name}`;
  };

  /**
   * The live lock an argument names, or the view's target (unless `pick`: Show Lock History from the palette is asked
   * for another lock), or one the user picks.
   */
  const resolve = async (arg: HistoryArg, title: string, pick = false): Promise<Target> => {
    if (arg instanceof LockNode || arg instanceof MemberNode) {
      const lock = tree.lock(arg);
      if (!lock) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That lock is gone since it was shown.'));
      return targetOf(arg.connection, lock);
    }
    if (arg && isNamedLock(arg)) {
      const connection = registry.get(arg.connection);
      const lock = connection?.watch?.lock(arg.lockId);
      if (connection && lock) return targetOf(connection, lock);
      if (connection && provider.target?.connection === connection && provider.target.lockId === arg.lockId) return provider.target;
      throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('No lock {0} on {1}.', arg.lockId, arg.connection));
    }
    if (provider.target && !pick) return provider.target;
    const connection = await pickConnection(registry, title);
    await connection.open();
    return targetOf(connection, await pickLock(connection, title, () => true, vscode.l10n.t('No lock under the watched prefixes of {0}.', connection.name)));
  };

  const showHistory = async (arg?: HistoryArg) => {
    const t = await resolve(arg, vscode.l10n.t('Show lock history'), true);
    provider.show(t);
    describe(t);
    await vscode.commands.executeCommand(`${HISTORY_VIEW}.focus`);
  };

  const replayHistory = async (arg?: HistoryArg) => {
    const t = await resolve(arg, vscode.l10n.t('Replay lock history'));
    const history = (await t.connection.open()).history;
    if (!history) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('{0} keeps no history of its locks: the Lock History view shows what LockLens recorded while it watched.', t.connection.descriptor.displayName));
    const range = await askRange(await history.span(t.name, { single: t.single }));
    const replayed = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Replaying the history of "{0}"', displayKey(t.name)), cancellable: true },
      async (progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        let done = 0;
        return history.replay(t.name, {
          ...range,
          single: t.single,
          signal: abort.signal,
          onProgress: (revision, toRevision) => {
            const now = Math.floor((100 * revision) / Math.max(1, toRevision));
            if (now > done) progress.report({ increment: now - done, message: vscode.l10n.t('revision {0} of {1}', revision, toRevision) });
            done = Math.max(done, now);
          },
          onLeaseProgress: (asked, leases) => progress.report({ message: vscode.l10n.t('asking {0} of {1} leases how their keys went', asked, leases) }),
        });
      },
    );
    provider.setReplay(t, replayed);
    describe(t);
    await vscode.commands.executeCommand(`${HISTORY_VIEW}.focus`);
  };

  /**
   * A span too long to read without asking: etcd scans every revision of it while holding its store's lock (writes
   * wait), so the user chooses the most recent revisions, or all of them knowingly.
   */
  const askRange = async (span: HistorySpan): Promise<Pick<ReplayOptions, 'fromRevision' | 'maxRevisions'>> => {
    const revisions = span.current - span.oldest;
    if (revisions <= MAX_REPLAY_REVISIONS) return {};
    const recent = vscode.l10n.t('The last {0} revisions', MAX_REPLAY_REVISIONS.toLocaleString());
    const all = vscode.l10n.t('All {0} revisions', revisions.toLocaleString());
    const answer = await vscode.window.showWarningMessage(
      vscode.l10n.t('Replay {0} revisions of history?', revisions.toLocaleString()),
      {
        modal: true,
        detail: vscode.l10n.t(
          'etcd scans every revision from the oldest it keeps ({0}) to now ({1}) to send a watch its history, and holds its store lock while it does: writes to the whole cluster wait meanwhile. Read the most recent part, or all of it on purpose.',
          span.oldest,
          span.current,
        ),
      },
      recent,
      all,
    );
    if (answer === recent) return { fromRevision: span.current - MAX_REPLAY_REVISIONS };
    if (answer === all) return { maxRevisions: Infinity };
    throw new Cancelled();
  };

  const copyIncidentReport = async (arg?: HistoryArg) => {
    const t = await resolve(arg, vscode.l10n.t('Copy incident report'));
    // A lock whose holder has just gone is no longer in the store: what was recorded of it is reported all the same.
    const lock = t.connection.watch?.lock(t.lockId);
    const owner = t.connection.backend?.capabilities.owner;
    const { stats } = records;
    const report = incidentReport({
      connection: t.connection.name,
      store: t.connection.descriptor.displayName,
      name: t.name,
      live: lock && owner ? { lock, health: tree.health(t.connection, lock), owner } : undefined,
      figures: stats.figures(t.connection.name, t.lockId),
      holds: stats.holds(t.connection.name, t.lockId),
      history: provider.replay(t),
      now: Date.now(),
    });
    await vscode.env.clipboard.writeText(report);
    // Not awaited: the command is done once the report is on the clipboard, whether or not the message is answered.
    const open = vscode.l10n.t('Open as Markdown');
    void vscode.window.showInformationMessage(vscode.l10n.t('Copied an incident report on "{0}" (Markdown).', displayKey(t.name)), open).then(async (choice) => {
      if (choice === open) await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ language: 'markdown', content: report }));
    });
  };

  const showPast = async () => {
    const t = provider.target;
    const history = t && provider.replay(t);
    if (!t || !history) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('Replay a lock\'s history first (Lock History view).'));
    showPastInTimeline(history, t.connection.name);
  };

  const disposables = [
    provider,
    view,
    recorded,
    registerRecordedHistory(register, recorded, () => vscode.commands.executeCommand(`${HISTORY_VIEW}.focus`)),
    // Selecting a lock or member in the Locks view shows its history here.
    treeView.onDidChangeSelection(({ selection }) => {
      const node = selection[0];
      if (!(node instanceof LockNode || node instanceof MemberNode)) return;
      const lock = tree.lock(node);
      if (!lock) return;
      const t = targetOf(node.connection, lock);
      provider.show(t);
      describe(t);
    }),
    // A connection removed (or replaced by an edit) is no target: its object is disposed, and reopening it would leak.
    registry.onDidChange(() => {
      const t = provider.target;
      if (t && registry.get(t.connection.name) !== t.connection) provider.clear();
    }),
    // Whether the view's lock can be replayed follows its connection (a store's capabilities come with its backend).
    registry.onDidChangeState((c) => {
      if (provider.target?.connection === c) provider.redraw();
    }),
    register('locklens.showHistory', showHistory),
    register('locklens.replayHistory', replayHistory),
    register('locklens.copyIncidentReport', copyIncidentReport),
    register('locklens.showPastInTimeline', showPast),
  ];
  return { provider, disposables };
}

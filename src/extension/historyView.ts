import * as vscode from 'vscode';
import { LockLensError } from '../core/errors';
import { MAX_REPLAY_REVISIONS, type HistorySpan, type LockHistory, type ReplayOptions } from '../core/history';
import { incidentReport } from '../core/incidentReport';
import { displayKey } from '../core/keys';
import { isSingleKey, type LockState } from '../core/lockState';
import type { RegisterCommand } from './commandRunner';
import type { StoreConnection, ConnectionRegistry } from './connections';
import type { Inversion } from '../core/diagnosis/inversions';
import { NO_FINDINGS, type Diagnoses, type LockFindings } from './diagnosis';
import { diagnosisItems, figureItems, liveItems, pastItems } from './historyItems';
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
  | { readonly kind: 'section'; readonly section: 'diagnosis' | 'figures' | 'live' | 'past' | 'recorded' }
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
    private readonly diagnoses: Diagnoses<StoreConnection>,
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
      const sections: HistoryNode[] = this.diagnosisItems(t).length ? [SECTIONS.diagnosis, SECTIONS.figures, SECTIONS.live] : [SECTIONS.figures, SECTIONS.live];
      if (t.connection.backend?.history) sections.push(SECTIONS.past);
      if (this.recorded.dir) sections.push(SECTIONS.recorded);
      return sections;
    }
    switch (node.kind) {
      case 'item':
        return [];
      case 'section': {
        const items =
          node.section === 'diagnosis'
            ? this.diagnosisItems(t)
            : node.section === 'figures'
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

  /** What the connection's diagnosis says of the target: deadlocks, inversions, TTL fit. */
  findings(t: Target): { readonly findings: LockFindings; readonly inversions: Inversion[] } {
    const lock = t.connection.watch?.lock(t.lockId);
    const findings = lock ? this.diagnoses.findings(t.connection, lock, this.records.stats.holds(t.connection.name, t.lockId)) : NO_FINDINGS;
    return { findings, inversions: this.diagnoses.inversionsOf(t.connection, t.lockId) };
  }

  private diagnosisItems(t: Target): vscode.TreeItem[] {
    const { findings, inversions } = this.findings(t);
    return diagnosisItems(findings, inversions, t.connection.backend?.capabilities.owner ?? 'token');
  }

  /** Sections are the top level; an item's section is not asked for (reveal is only given sections). */
  getParent(): HistoryNode | undefined {
    return undefined;
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

/** One object per section, so that the view can reveal one (VS Code finds revealed elements by identity). */
const SECTIONS = {
  diagnosis: { kind: 'section', section: 'diagnosis' },
  figures: { kind: 'section', section: 'figures' },
  live: { kind: 'section', section: 'live' },
  past: { kind: 'section', section: 'past' },
  recorded: { kind: 'section', section: 'recorded' },
} as const satisfies Record<string, HistoryNode>;

const SECTION_LABELS = {
  diagnosis: () => vscode.l10n.t('Diagnosis'),
  figures: () => vscode.l10n.t('Figures'),
  live: () => vscode.l10n.t('Recent holds (seen live)'),
  past: () => vscode.l10n.t("Replayed from the store's history"),
  recorded: () => vscode.l10n.t('Recorded by locklens serve'),
};
const SECTION_ICONS = { diagnosis: 'warning', figures: 'graph', live: 'pulse', past: 'history', recorded: 'database' };

function sectionItem(section: keyof typeof SECTION_LABELS): vscode.TreeItem {
  const item = new vscode.TreeItem(SECTION_LABELS[section](), vscode.TreeItemCollapsibleState.Expanded);
  item.id = section;
  item.iconPath = new vscode.ThemeIcon(SECTION_ICONS[section]);
  item.contextValue = `history.${section}`;
  return item;
}

function replayKey(t: Target): string {
  return JSON.stringify([t.connection.name, t.lockId]);
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
  diagnoses: Diagnoses<StoreConnection>,
  showPastInTimeline: (history: LockHistory, connection: string) => void,
): { readonly provider: LockHistoryProvider; readonly disposables: vscode.Disposable[] } {
  const recorded = new RecordedHistory();
  const provider = new LockHistoryProvider(records, diagnoses, recorded);
  const view = vscode.window.createTreeView(HISTORY_VIEW, { treeDataProvider: provider });

  const targetOf = (connection: StoreConnection, lock: LockState): Target => ({ connection, lockId: lock.id, name: lock.name, single: isSingleKey(lock) });
  let opened = false;
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
    // The replay is what was asked for: scrolled to and opened, however short the view is.
    await view.reveal(SECTIONS.past, { select: false, focus: true, expand: true });
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
    const { findings, inversions } = provider.findings(t);
    const report = incidentReport({
      connection: t.connection.name,
      store: t.connection.descriptor.displayName,
      name: t.name,
      live: lock && owner ? { lock, health: tree.health(t.connection, lock), owner } : undefined,
      figures: stats.figures(t.connection.name, t.lockId),
      holds: stats.holds(t.connection.name, t.lockId),
      history: provider.replay(t),
      diagnosis: { deadlocks: findings.deadlocks, inversions, ttlFit: findings.ttlFit },
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
      // The view starts collapsed (package.json), so that the Locks view is whole at first sight; the first lock
      // selected opens it, without taking the keyboard from the Locks view. Collapsed again, it stays so.
      if (!opened) {
        opened = true;
        view.reveal(SECTIONS.figures, { select: false, focus: false, expand: false }).then(undefined, () => undefined);
      }
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
    // A deadlock confirmed or cleared changes the view's diagnosis section.
    diagnoses.onDidChange(({ connection }) => {
      if (provider.target?.connection === connection) provider.redraw();
    }),
    register('locklens.showHistory', showHistory),
    register('locklens.replayHistory', replayHistory),
    register('locklens.copyIncidentReport', copyIncidentReport),
    register('locklens.showPastInTimeline', showPast),
  ];
  return { provider, disposables };
}

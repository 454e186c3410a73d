import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { errorMessage } from '../core/errors';
import { displayKey } from '../core/keys';
import type { LockHistory } from '../core/history';
import { parseRowId, pastMessage, TimelineReducer, type TimelineSource } from '../core/timeline';
import { isEmptyDiff, isWebviewMessage, type HostMessage, type TimelineConfig, type TimelineStrings } from '../protocol/timeline';
import type { PastMessage, TimelineRow } from '../shared/timelineData';
import type { ConnectionRegistry, StoreConnection } from './connections';
import type { Diagnoses } from './diagnosis';
import type { LeaseEndListener, LeaseEndProbe } from './leaseEndProbe';
import type { OwnEnds } from '../core/ownEnds';
import type { LockTreeProvider } from './tree/lockTreeProvider';
import { LockNode, MemberNode, type LockTreeNode } from './tree/nodes';
import { isReadOnly, longHoldMs } from './settings';

/**
 * The lock timeline: a webview panel that draws every hold and wait of the watched locks on a shared time axis
 * (webview/timeline/). The host reduces the connections' change sets and lease sweeps to rows (src/core/timeline.ts)
 * and sends the webview the whole picture once, then diffs at most every FLUSH_MS, over the protocol in
 * src/protocol/timeline.ts. Actions come back as row ids and go through the same commands as the tree.
 */

export const TIMELINE_VIEW_TYPE = 'locklens.timeline';
const OPEN_COMMAND = 'locklens.openTimeline';
/** Diffs are coalesced: at most one message per this many ms, however many events arrive. */
const FLUSH_MS = 250;
/** The time windows offered; ended bars are kept for the longest. */
const WINDOWS_MS = [60_000, 5 * 60_000, 15 * 60_000, 60 * 60_000];

/** Shows a row's lock or member in the Locks tree. */
export type RevealRow = (row: TimelineRow) => Thenable<void> | void;

interface PanelDeps {
  readonly extensionUri: vscode.Uri;
  readonly registry: ConnectionRegistry;
  readonly reveal: RevealRow;
  readonly probe: LeaseEndProbe;
  readonly ownEnds: OwnEnds;
  readonly diagnoses: Diagnoses<StoreConnection>;
}

/**
 * Registers `locklens.openTimeline` (from the palette, the Locks view's title, or a lock or member in the tree, which
 * pre-filters by that lock) and the serializer that brings the panel back after a reload.
 */
export function registerTimeline(
  context: vscode.ExtensionContext,
  registry: ConnectionRegistry,
  tree: LockTreeProvider,
  probe: LeaseEndProbe,
  ownEnds: OwnEnds,
  diagnoses: Diagnoses<StoreConnection>,
  treeView?: vscode.TreeView<LockTreeNode>,
): { readonly disposables: vscode.Disposable[]; readonly showPast: (history: LockHistory, connection: string) => void } {
  const deps: PanelDeps = { extensionUri: context.extensionUri, registry, probe, ownEnds, diagnoses, reveal: (row) => revealInTree(tree, treeView, row) };
  const disposables = [
    vscode.commands.registerCommand(OPEN_COMMAND, (node?: LockTreeNode) => {
      const lock = node instanceof LockNode || node instanceof MemberNode ? tree.lock(node) : undefined;
      TimelinePanel.show(deps, lock ? displayKey(lock.name) : undefined);
    }),
    vscode.window.registerWebviewPanelSerializer(TIMELINE_VIEW_TYPE, {
      // The webview restores its own view state (getState); the data comes fresh with its `ready`.
      deserializeWebviewPanel: async (panel) => {
        TimelinePanel.adopt(panel, deps);
      },
    }),
    new vscode.Disposable(() => TimelinePanel.current?.dispose()),
  ];
  return {
    disposables,
    // The past of one lock, filtered to it: what is live of it stays in view above.
    showPast: (history, connection) => TimelinePanel.show(deps, displayKey(history.name)).showPast(pastMessage(history, connection)),
  };
}

export class TimelinePanel implements vscode.Disposable {
  static current: TimelinePanel | undefined;

  private readonly reducer = new TimelineReducer(reducerOptions());
  private readonly subscriptions: { dispose(): void }[] = [];
  /** The webview has said `ready` since it was last (re)loaded: messages reach it. */
  private ready = false;
  private timer?: NodeJS.Timeout;
  private lastFlush = 0;
  private disposed = false;
  /** The replayed past shown under the live bars, sent again whenever the webview (re)loads. */
  private past: PastMessage | undefined;

  /** Reveals the panel if open (pre-filtering it when asked), else opens it. */
  static show(deps: PanelDeps, filter?: string): TimelinePanel {
    const open = TimelinePanel.current;
    if (open) {
      open.panel.reveal();
      if (filter !== undefined) open.post({ type: 'filter', filter });
      return open;
    }
    const panel = vscode.window.createWebviewPanel(TIMELINE_VIEW_TYPE, vscode.l10n.t('Lock Timeline'), vscode.ViewColumn.Active, webviewOptions(deps.extensionUri));
    return TimelinePanel.adopt(panel, deps, filter);
  }

  static adopt(panel: vscode.WebviewPanel, deps: PanelDeps, filter?: string): TimelinePanel {
    TimelinePanel.current?.dispose();
    TimelinePanel.current = new TimelinePanel(panel, deps, filter);
    return TimelinePanel.current;
  }

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    private readonly deps: PanelDeps,
    /** Sent with the first `init` only. */
    private pendingFilter: string | undefined,
  ) {
    const { webview } = panel;
    // No retainContextWhenHidden: a hidden timeline costs nothing. The webview keeps its view state with setState,
    // and on show it says `ready` and gets the current picture, ended bars included (the host keeps reducing while
    // hidden, so no end is missed).
    webview.options = webviewOptions(deps.extensionUri);
    panel.iconPath = vscode.Uri.joinPath(deps.extensionUri, 'media', 'locklens.svg');
    webview.html = this.html(webview);
    const { registry } = deps;
    this.subscriptions.push(
      webview.onDidReceiveMessage((m: unknown) => void this.onMessage(m)),
      panel.onDidChangeViewState(() => {
        // A hidden webview is unloaded; it says `ready` again when shown.
        if (!panel.visible) this.ready = false;
      }),
      panel.onDidDispose(() => this.dispose()),
      registry.onDidChange(() => this.schedule()),
      registry.onDidChangeState(() => this.schedule()),
      registry.onDidChangeLocks(() => this.schedule()),
      registry.onDidChangeLeases(() => this.schedule()),
      deps.diagnoses.onDidChange(() => this.schedule()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!e.affectsConfiguration('locklens.longHoldSeconds') && !e.affectsConfiguration('locklens.readOnly')) return;
        this.reducer.setOptions(reducerOptions());
        this.post({ type: 'config', config: config() });
        this.schedule();
      }),
    );
    this.flush();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (TimelinePanel.current === this) TimelinePanel.current = undefined;
    clearTimeout(this.timer);
    this.subscriptions.forEach((s) => s.dispose());
    this.panel.dispose();
  }

  showPast(past: PastMessage): void {
    this.past = past;
    this.post(past);
  }

  private post(message: HostMessage): void {
    if (this.ready) void this.panel.webview.postMessage(message);
  }

  private async onMessage(message: unknown): Promise<void> {
    if (!isWebviewMessage(message)) return;
    if (message.type === 'ready') {
      this.ready = true;
      this.flush(false);
      const filter = this.pendingFilter;
      this.pendingFilter = undefined;
      this.post({ type: 'init', sentAt: Date.now(), rows: this.reducer.snapshot(), config: config(), strings: strings(), ...(filter !== undefined ? { filter } : {}) });
      if (this.past) this.post(this.past);
      return;
    }
    if (message.type === 'closePast') {
      this.past = undefined;
      return;
    }
    const row = this.reducer.row(message.row);
    if (!row) return;
    try {
      switch (message.type) {
        case 'reveal':
          await this.deps.reveal(row);
          break;
        case 'copyLeaseId':
          if (!row.lease) return;
          await vscode.env.clipboard.writeText(row.lease);
          vscode.window.setStatusBarMessage(vscode.l10n.t('Copied {0}', vscode.l10n.t('lease ID')), 2000);
          break;
        case 'revoke':
          // The command asks for confirmation (listing what the revoke frees) and writes the audit log, as from the tree.
          if (row.lease && row.endedAt === undefined) await vscode.commands.executeCommand('locklens.revokeLease', { connection: row.connection, lease: row.lease });
          break;
        case 'forceRelease':
          // A holder without a lease, as the tree's Force Release… does it: confirmed, audited, and refused if another
          // owner holds the lock now than the one this bar shows.
          if (!row.lease && row.endedAt === undefined && row.position === 0) {
            await vscode.commands.executeCommand('locklens.forceRelease', { connection: row.connection, lock: row.lockName, ...(row.owner ? { owner: row.owner } : {}) });
          }
          break;
      }
    } catch (e) {
      void vscode.window.showErrorMessage(vscode.l10n.t('LockLens: {0}', errorMessage(e)));
    }
  }

  /** At most one flush per FLUSH_MS: the first change after a quiet spell goes out at once, a burst is coalesced. */
  private schedule(): void {
    if (this.timer || this.disposed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, Math.max(0, this.lastFlush + FLUSH_MS - Date.now()));
  }

  /** Reduces the current picture; sends the diff unless `send` is false (an `init` follows). */
  private flush(send = true): void {
    if (this.disposed) return;
    const now = Date.now();
    this.lastFlush = now;
    const diff = this.reducer.update(this.sources(), now);
    if (send && !isEmptyDiff(diff)) this.post({ type: 'diff', sentAt: now, ...diff });
    this.settleEnds();
  }

  private sources(): TimelineSource[] {
    const sources: TimelineSource[] = [];
    for (const c of this.deps.registry.all()) {
      const watch = c.watch;
      if (!watch) continue;
      const diagnosis = this.deps.diagnoses.of(c);
      const deadlocked = diagnosis && ((lockId: string) => diagnosis.cyclesOf(lockId).length > 0);
      const ownEnd = (lease: string, owner: string) => this.deps.ownEnds.ended(c.name, lease, owner);
      sources.push({ connection: c.name, hasLeases: c.backend?.leases !== undefined, locks: watch.locks(), lease: (id) => watch.lease(id), ownerLives: (id) => watch.ownerLives?.(id), clock: c.clock, deadlocked, ownEnd });
    }
    return sources;
  }

  /** Rows that ended with their lease's time left wait for the probe's answer: released, or gone with the lease. */
  private settleEnds(): void {
    for (const row of this.reducer.unsettled()) {
      this.deps.probe.ask(row.connection, row.lease, this.settleLease);
    }
  }

  private readonly settleLease: LeaseEndListener = (end, connection, lease) => {
    for (const r of this.reducer.unsettled()) if (r.connection === connection && r.lease === lease) this.reducer.settle(r.id, end);
    this.schedule();
  };

  private html(webview: vscode.Webview): string {
    const nonce = randomBytes(18).toString('base64');
    const root = vscode.Uri.joinPath(this.deps.extensionUri, 'dist', 'webview');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(root, 'timeline.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(root, 'timeline.css'));
    const csp = [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      `style-src ${webview.cspSource} 'nonce-${nonce}'`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
    ].join('; ');
    const lang = vscode.env.language.replace(/[^A-Za-z0-9-]/g, '');
    const title = escapeHtml(vscode.l10n.t('Lock Timeline'));
    return `<!DOCTYPE html>
<html lang="${lang}">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>${title}</title>
</head>
<body>
<div id="app"></div>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
  }
}

/** Scripts on; local files only from the webview bundle (dist/webview), nothing else of the extension or workspace. */
function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webview')] };
}

function reducerOptions() {
  return { longHoldMs: longHoldMs(), keepEndedMs: WINDOWS_MS[WINDOWS_MS.length - 1] };
}

function config(): TimelineConfig {
  return { longHoldMs: longHoldMs(), readOnly: isReadOnly(), windowsMs: WINDOWS_MS };
}

/** Shows the row's member in the Locks tree, or its lock when the key is gone. */
async function revealInTree(tree: LockTreeProvider, view: vscode.TreeView<LockTreeNode> | undefined, row: TimelineRow): Promise<void> {
  const id = parseRowId(row.id);
  if (!view || !id) {
    await vscode.commands.executeCommand('locklens.locks.focus');
    return;
  }
  const connection = tree.getChildren().find((n) => n.connection.name === row.connection);
  for (const prefix of connection ? tree.getChildren(connection) : []) {
    // A lock's row with its members below, or (a single-key lock) the member's row itself.
    const node = tree.getChildren(prefix).find((n): n is LockNode | MemberNode => (n instanceof LockNode || n instanceof MemberNode) && n.lockId === id.lockId);
    if (!node) continue;
    const member = node instanceof LockNode ? tree.getChildren(node).find((n) => n instanceof MemberNode && n.keyId === id.keyId) : undefined;
    await view.reveal(member ?? node, { select: true, focus: true, expand: true });
    return;
  }
  void vscode.window.showInformationMessage(vscode.l10n.t('"{0}" is no longer in the Locks view.', row.lockName));
}

function strings(): TimelineStrings {
  return {
    filterPlaceholder: vscode.l10n.t('Filter by lock name'),
    window: vscode.l10n.t('Time window'),
    pause: vscode.l10n.t('Pause'),
    resume: vscode.l10n.t('Resume'),
    paused: vscode.l10n.t('Paused: the picture is frozen at {0}'),
    summary: vscode.l10n.t('Live: {0} · locks: {1}'),
    empty: vscode.l10n.t('No locks yet. Watch a prefix in the Locks view: every holder and waiter of its locks shows here.'),
    noMatch: vscode.l10n.t('No lock matches the filter.'),
    rowsLabel: vscode.l10n.t('Holders and waiters, by lock and queue order'),
    holder: vscode.l10n.t('holder'),
    waiter: vscode.l10n.t('waiter'),
    leader: vscode.l10n.t('leader'),
    candidate: vscode.l10n.t('candidate'),
    single: vscode.l10n.t('held (single key)'),
    lease: vscode.l10n.t('lease {0}'),
    noLease: vscode.l10n.t('no lease'),
    owner: vscode.l10n.t('owner {0}'),
    token: vscode.l10n.t('token {0}'),
    ttl: vscode.l10n.t('TTL {0}s'),
    ttlOf: vscode.l10n.t('TTL {0}s of {1}s'),
    ttlUnknown: vscode.l10n.t('TTL …'),
    stalled: vscode.l10n.t('stalled: not renewed'),
    longHold: vscode.l10n.t('long hold'),
    expired: vscode.l10n.t('lease expired'),
    endedReleased: vscode.l10n.t('released'),
    endedRevoked: vscode.l10n.t('revoked or expired'),
    endedExpired: vscode.l10n.t('expired'),
    endedForceReleased: vscode.l10n.t('force-released'),
    endedOwnerLost: vscode.l10n.t('owner lost (session or connection ended)'),
    endedUnknown: vscode.l10n.t('ended'),
    refreshes: vscode.l10n.t('{0} renewals seen'),
    firstSeen: vscode.l10n.t('first seen {0} ago'),
    firstSeenInexact: vscode.l10n.t('already there when LockLens looked, ≥ {0} ago'),
    waiting: vscode.l10n.t('waiting #{0}'),
    reveal: vscode.l10n.t('Reveal in Locks View'),
    copyLeaseId: vscode.l10n.t('Copy Lease ID'),
    revoke: vscode.l10n.t('Revoke Lease…'),
    forceRelease: vscode.l10n.t('Force Release…'),
    selectHint: vscode.l10n.t('Select a bar to see its holder or waiter and act on it (arrow keys move the selection).'),
    now: vscode.l10n.t('now'),
    legend: vscode.l10n.t('Thick: holding · thin: waiting · ticks: renewals · faded: TTL left · ✕: revoked or expired · |: released'),
    deadlock: vscode.l10n.t('deadlock'),
    deadlockLegend: vscode.l10n.t('the lock is in a confirmed deadlock'),
    lockQueue: vscode.l10n.t('queue'),
    lockElection: vscode.l10n.t('election'),
    lockSingle: vscode.l10n.t('single key'),
    lockReadWrite: vscode.l10n.t('read/write lock'),
    lockSemaphore: vscode.l10n.t('semaphore'),
    liveCount: vscode.l10n.t('{0} live'),
    seconds: vscode.l10n.t('{0}s'),
    minutes: vscode.l10n.t('{0}m'),
    minutesSeconds: vscode.l10n.t('{0}m {1}s'),
    hours: vscode.l10n.t('{0}h'),
    actions: vscode.l10n.t('Actions on the selected bar'),
    pastTitle: vscode.l10n.t('Past of {0} on {1}: revisions {2} to {3}'),
    pastCompacted: vscode.l10n.t('History before revision {0} was compacted: older holds are not shown.'),
    pastEmpty: vscode.l10n.t('No hold in the history read.'),
    pastClose: vscode.l10n.t('Close'),
    pastHolding: vscode.l10n.t('holding since revision {0}'),
    pastSpan: vscode.l10n.t('revision {0} → {1}'),
    pastBefore: vscode.l10n.t('before {0}'),
    pastWaiting: vscode.l10n.t('{0} waiting'),
    pastLabel: vscode.l10n.t('Holds replayed from history, oldest first'),
    pastOlder: vscode.l10n.t('{0} older holds not drawn'),
    pastSkipped: vscode.l10n.t('Read from revision {0} on, as chosen: older holds are not shown.'),
    pastSilence: vscode.l10n.t('etcd stayed silent where events could have come: this etcd cannot say when a watch has caught up, so the read ended after a quiet time.'),
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

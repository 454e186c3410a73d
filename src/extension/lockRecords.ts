import * as vscode from 'vscode';
import { errorMessage } from '../core/errors';
import { LockStats } from '../core/lockStats';
import type { ConnectionRegistry } from './connections';
import type { LeaseEndListener, LeaseEndProbe } from './leaseEndProbe';

/** How long a change waits before the records are written: a busy store changes them many times a second. */
const SAVE_DELAY_MS = 15_000;
const FILE = 'lock-records.json';

/**
 * What LockLens has seen of every lock since it first looked (src/core/lockStats.ts), kept across restarts in the
 * extension's global storage, bounded in size by the core. Fed by every connection's change sets and TTL samples, for
 * every store; the Lock History view, the tooltips and the incident report read it.
 */
export class LockRecords implements vscode.Disposable {
  stats = new LockStats();
  private readonly changeEmitter = new vscode.EventEmitter<{ readonly connection: string; readonly lockIds: readonly string[] }>();
  /** The records of these locks changed (whichever LockStats holds them: the first is replaced by what was saved). */
  readonly onDidChange = this.changeEmitter.event;
  private saveTimer?: NodeJS.Timeout;
  private readonly subscriptions: { dispose(): void }[] = [this.changeEmitter];
  /** Where the records are kept (the extension's global storage). */
  readonly file: vscode.Uri;

  constructor(
    private readonly registry: ConnectionRegistry,
    private readonly probe: LeaseEndProbe,
    storage: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.file = vscode.Uri.joinPath(storage, FILE);
  }

  /** Reads what earlier sessions recorded, then starts recording. Unreadable records are logged and started afresh. */
  async start(): Promise<void> {
    try {
      this.stats = LockStats.fromJSON(JSON.parse(new TextDecoder().decode(await vscode.workspace.fs.readFile(this.file))));
    } catch (e) {
      if (!(e instanceof vscode.FileSystemError && e.code === 'FileNotFound')) this.log.warn(`lock records not read (${errorMessage(e)}): starting afresh`);
    }
    const { registry } = this;
    this.subscriptions.push(
      this.stats.onDidChange((e) => this.changeEmitter.fire(e)),
      registry.onDidChangeLocks(({ connection, changes }) => {
        const caps = connection.backend?.capabilities;
        const watch = connection.watch;
        if (!caps || !watch) return;
        this.stats.observe(connection.name, changes, { revocableLeases: caps.revokeOwner, hasRevisions: caps.history, lease: (id) => watch.lease(id) });
        for (const lease of this.stats.unsettled(connection.name)) this.probe.ask(connection.name, lease, this.settle);
        this.scheduleSave();
      }),
      registry.onDidChangeLeases(({ connection, infos }) => {
        this.stats.observeLeases(connection.name, infos);
        this.scheduleSave();
      }),
      // A connection removed takes its records with it; one renamed starts new ones.
      registry.onDidChange(() => {
        const names = new Set(registry.all().map((c) => c.name));
        for (const name of this.stats.connections()) if (!names.has(name)) this.stats.forget(name);
      }),
    );
  }

  private readonly settle: LeaseEndListener = (end, connection, lease) => {
    this.stats.settle(connection, lease, end);
    this.scheduleSave();
  };

  private scheduleSave(): void {
    this.saveTimer ??= setTimeout(() => {
      this.saveTimer = undefined;
      void this.save();
    }, SAVE_DELAY_MS);
  }

  /** Writes the records now (also on shutdown). */
  async save(): Promise<void> {
    clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    try {
      await vscode.workspace.fs.writeFile(this.file, new TextEncoder().encode(JSON.stringify(this.stats.toJSON())));
    } catch (e) {
      this.log.warn(`lock records not saved: ${errorMessage(e)}`);
    }
  }

  dispose(): void {
    clearTimeout(this.saveTimer);
    this.subscriptions.forEach((s) => s.dispose());
  }
}

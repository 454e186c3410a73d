import * as vscode from 'vscode';
import type { LockWatch } from '../core/backend';
import { errorMessage } from '../core/errors';
import { LockStats } from '../core/lockStats';
import type { ConnectionRegistry } from './connections';
import type { LeaseEndListener, LeaseEndProbe } from './leaseEndProbe';
import type { OwnEnds } from '../core/ownEnds';

/** How long a change waits before the records are written: a busy store changes them many times a second. */
const SAVE_DELAY_MS = 15_000;
const FILE = 'lock-records.json';

/**
 * What LockLens has seen of every lock since it first looked (src/core/lockStats.ts), kept across restarts in the
 * extension's global storage, bounded in size by the core. Fed by every connection's change sets and TTL samples, for
 * every store; the Lock History view, the tooltips and the incident report read it.
 *
 * Several windows share the file: each writes the connections it watches and keeps, from the file, those it does not
 * (another window's, saved meanwhile). A write goes to a temporary file renamed over the old one, so a crash never
 * leaves half a file; a file that cannot be read is moved aside, not overwritten.
 */
export class LockRecords implements vscode.Disposable {
  stats = new LockStats();
  private readonly changeEmitter = new vscode.EventEmitter<{ readonly connection: string; readonly lockIds: readonly string[] }>();
  /** The records of these locks changed (whichever LockStats holds them: the first is replaced by what was saved). */
  readonly onDidChange = this.changeEmitter.event;
  private saveTimer?: NodeJS.Timeout;
  private readonly subscriptions: { dispose(): void }[] = [this.changeEmitter];
  /** The watch each connection's change sets came from: a new one starts over (see LockStats.restart). */
  private readonly watches = new Map<string, LockWatch>();
  /** Connections whose records went (removed from the settings): not taken back from the file on the next save. */
  private readonly forgotten = new Set<string>();
  /** Where the records are kept (the extension's global storage). */
  readonly file: vscode.Uri;

  constructor(
    private readonly registry: ConnectionRegistry,
    private readonly probe: LeaseEndProbe,
    private readonly ownEnds: OwnEnds,
    private readonly storage: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.file = vscode.Uri.joinPath(storage, FILE);
  }

  /** Reads what earlier sessions recorded, then starts recording: call it before connections start watching. */
  async start(): Promise<void> {
    this.stats = (await this.read()) ?? new LockStats();
    const { registry } = this;
    this.subscriptions.push(
      this.stats.onDidChange((e) => {
        this.changeEmitter.fire(e);
        this.scheduleSave();
      }),
      registry.onDidChangeLocks(({ connection, changes }) => {
        const backend = connection.backend;
        const watch = connection.watch;
        if (!backend || !watch) return;
        if (this.watches.get(connection.name) !== watch) {
          this.watches.set(connection.name, watch);
          this.stats.restart(connection.name);
        }
        this.stats.observe(connection.name, changes, { hasLeases: backend.leases !== undefined, hasRevisions: backend.history !== undefined, sampledTtls: backend.capabilities.ttl, lease: (id) => watch.lease(id), ownerLives: (id) => watch.ownerLives?.(id), ownEnd: (lease, owner) => this.ownEnds.ended(connection.name, lease, owner) });
        for (const lease of this.stats.unsettled(connection.name)) this.probe.ask(connection.name, lease, this.settle);
      }),
      registry.onDidChangeLeases(({ connection, infos }) => this.stats.observeLeases(connection.name, infos)),
      // A connection removed takes its records with it; one renamed starts new ones. Connections live in user
      // settings only, so every window agrees on which exist.
      registry.onDidChange(() => {
        const names = new Set(registry.all().map((c) => c.name));
        for (const name of this.stats.connections()) {
          if (names.has(name)) continue;
          this.stats.forget(name);
          this.forgotten.add(name);
        }
      }),
    );
  }

  private readonly settle: LeaseEndListener = (end, connection, lease) => this.stats.settle(connection, lease, end);

  private scheduleSave(): void {
    this.saveTimer ??= setTimeout(() => {
      this.saveTimer = undefined;
      void this.save();
    }, SAVE_DELAY_MS);
  }

  /** The saved records, or undefined when there are none; a file that cannot be read is moved aside. */
  private async read(): Promise<LockStats | undefined> {
    let text: Uint8Array;
    try {
      text = await vscode.workspace.fs.readFile(this.file);
    } catch (e) {
      if (!(e instanceof vscode.FileSystemError && e.code === 'FileNotFound')) this.log.warn(`lock records not read: ${errorMessage(e)}`);
      return undefined;
    }
    try {
      return LockStats.fromJSON(JSON.parse(new TextDecoder().decode(text)));
    } catch (e) {
      const aside = vscode.Uri.joinPath(this.storage, `${FILE}.unreadable`);
      this.log.warn(`lock records unreadable (${errorMessage(e)}): moved to ${aside.fsPath}, starting afresh`);
      await vscode.workspace.fs.rename(this.file, aside, { overwrite: true }).then(undefined, () => undefined);
      return undefined;
    }
  }

  /** Writes the records now (also on shutdown), keeping other windows' connections from the file. */
  async save(): Promise<void> {
    clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    try {
      const saved = await this.read();
      if (saved) {
        for (const name of this.forgotten) saved.forget(name);
        this.stats.adopt(saved);
      }
      this.forgotten.clear();
      const temp = vscode.Uri.joinPath(this.storage, `${FILE}.${process.pid}.tmp`);
      await vscode.workspace.fs.writeFile(temp, new TextEncoder().encode(JSON.stringify(this.stats.toJSON())));
      await vscode.workspace.fs.rename(temp, this.file, { overwrite: true });
    } catch (e) {
      this.log.warn(`lock records not saved: ${errorMessage(e)}`);
    }
  }

  dispose(): void {
    clearTimeout(this.saveTimer);
    this.subscriptions.forEach((s) => s.dispose());
  }
}

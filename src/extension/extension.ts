import * as l10n from '@vscode/l10n';
import * as vscode from 'vscode';
import { displayKey } from '../core/keys';
import { AuditLog } from './audit';
import { commandRegistrar } from './commandRunner';
import { registerConnectionCommands } from './commands/connectionCommands';
import { registerLockCommands } from './commands/lockCommands';
import { ConnectionRegistry, type StoreConnection } from './connections';
import { registerDeadlockNotices } from './deadlockNotice';
import { Diagnoses } from './diagnosis';
import { HeldLocks } from './heldLocks';
import { registerHistory, type LockHistoryProvider } from './historyView';
import { LeaseEndProbe } from './leaseEndProbe';
import { LockRecords } from './lockRecords';
import { LockTreeProvider } from './tree/lockTreeProvider';
import { ConnectionSecretStore } from './secrets';
import { autoConnect } from './settings';
import { HeldLocksStatus } from './statusBar';
import { StorePackages } from './storePackages';
import { registerTimeline } from './timelinePanel';

/** What activate returns: the live parts, for tests and for extensions that build on LockLens. */
export interface LockLensApi {
  readonly registry: ConnectionRegistry;
  readonly secrets: ConnectionSecretStore;
  readonly tree: LockTreeProvider;
  readonly heldLocks: HeldLocks;
  readonly audit: AuditLog;
  /** What LockLens recorded of every lock while it watched, kept across restarts. */
  readonly records: LockRecords;
  /** The Lock History view's data: the lock it shows, and replays of store history. */
  readonly history: LockHistoryProvider;
  /** Each connection's diagnosis: deadlocks, lock-order inversions, TTL fits. */
  readonly diagnoses: Diagnoses<StoreConnection>;
  readonly log: vscode.LogOutputChannel;
  /** Where this extension's logs are written. */
  readonly logUri: vscode.Uri;
}

let shutdown: (() => Promise<void>) | undefined;

/**
 * Wires the core to VS Code: connections from settings (secrets from SecretStorage), the Locks tree fed by their
 * events, the commands, and the held-locks status bar item. Data flows one way: store → core model → views; every
 * command acts through the core.
 */
export async function activate(context: vscode.ExtensionContext): Promise<LockLensApi> {
  // The stores' descriptors (src/core) are translated through @vscode/l10n: hand it VS Code's bundle for this language.
  if (vscode.l10n.bundle) l10n.config({ contents: vscode.l10n.bundle });
  const log = vscode.window.createOutputChannel('LockLens', { log: true });
  const audit = new AuditLog();
  const secrets = new ConnectionSecretStore(context.secrets);
  const registry = new ConnectionRegistry(secrets, log);
  const heldLocks = new HeldLocks(registry, audit);
  const register = commandRegistrar(log);
  const probe = new LeaseEndProbe(registry);
  const records = new LockRecords(registry, probe, audit.ownEnds, context.globalStorageUri, log);
  const diagnoses = new Diagnoses(registry);
  const tree = new LockTreeProvider(
    registry,
    heldLocks,
    (c, lockId) => records.stats.figures(c.name, lockId),
    (c, lock) => diagnoses.findings(c, lock, records.stats.holds(c.name, lock.id)),
  );
  const view = vscode.window.createTreeView('locklens.locks', { treeDataProvider: tree, showCollapseAll: true });
  tree.setVisible(view.visible);
  context.subscriptions.push(view.onDidChangeVisibility((e) => tree.setVisible(e.visible)));
  const timeline = registerTimeline(context, registry, tree, probe, audit.ownEnds, diagnoses, view);
  const history = registerHistory(register, registry, tree, view, records, diagnoses, timeline.showPast);
  const stores = new StorePackages(context.extension);

  heldLocks.onDidLose(({ lock, reason }) => {
    void vscode.window.showErrorMessage(vscode.l10n.t('You lost the lock "{0}" on {1}: {2}', displayKey(lock.name), lock.connection.name, reason.message));
  });
  const updateContext = () => {
    const all = registry.all();
    void vscode.commands.executeCommand('setContext', 'locklens.hasConnections', all.length > 0);
    void vscode.commands.executeCommand('setContext', 'locklens.hasPrefixes', all.some((c) => c.prefixes.length > 0));
    // Lease commands are offered only while a connected store has leases to revoke (etcd, not Redis).
    void vscode.commands.executeCommand('setContext', 'locklens.hasLeases', all.some((c) => c.backend?.leases !== undefined));
  };
  registry.onDidChange(updateContext);
  registry.onDidChangeState(updateContext);

  context.subscriptions.push(
    log,
    audit,
    view,
    tree,
    stores,
    new HeldLocksStatus(heldLocks),
    ...registerConnectionCommands(register, registry, secrets, stores),
    ...registerLockCommands(register, registry, heldLocks, tree, audit, records),
    ...timeline.disposables,
    records,
    diagnoses,
    registerDeadlockNotices(diagnoses, tree, view),
    ...history.disposables,
    register('locklens.showAuditLog', () => audit.channel.show(true)),
    // A store package installed (or updated) while this window runs: connections that were missing it try again.
    stores.onDidChange(() => {
      for (const c of registry.all()) if (c.storeMissing && stores.has(c.store)) void c.connect();
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('locklens.connections')) void registry.sync();
      if (e.affectsConfiguration('locklens.longHoldSeconds')) tree.redraw();
    }),
  );

  shutdown = async () => {
    await Promise.all([heldLocks.releaseAll(), records.save()]);
    registry.dispose();
    heldLocks.dispose();
  };

  // Reading what earlier sessions recorded never holds up activation, but comes before the first change sets.
  const recordsRead = records.start();
  const connections = await registry.sync();
  updateContext();
  log.info(`LockLens ${context.extension.packageJSON.version} activated with ${connections.length} connection(s)`);
  if (autoConnect()) void recordsRead.then(() => connections.forEach((c) => void c.connect()));
  return { registry, secrets, tree, heldLocks, audit, records, history: history.provider, diagnoses, log, logUri: context.logUri };
}

/** Releases every lock held from this window (revoking its lease) before the extension host goes. */
export async function deactivate(): Promise<void> {
  await shutdown?.();
  shutdown = undefined;
}

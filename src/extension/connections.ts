import * as vscode from 'vscode';
import type { LockBackend, LockWatch } from '../core/backend';
import type { StoreDescriptor } from '../core/storeDescriptor';
import { DEFAULT_STORE, STORES, openBackend, type StoreKind } from '../core/stores';
import { Emitter } from '../core/emitter';
import { LockLensError, errorMessage } from '../core/errors';
import { LockClock } from '../core/lockHealth';
import type { ChangeSet } from '../core/lockState';
import type { LeaseInfo } from '../core/leaseInfo';
import type { ConnectionSecretStore } from './secrets';
import { toProfile, type ConnectionSettings } from '../core/connectionSettings';
import { leaseSampleIntervalMs, lockTables, pollIntervalMs, readConnections } from './settings';

export type ConnectionState = 'disconnected' | 'connecting' | 'connected' | 'reconnecting' | 'error';

/** Runs before a connection closes: held locks are released while the store can still be told. */
export type CloseHook = (connection: StoreConnection) => Promise<void>;

/**
 * One configured store (an etcd cluster, a Redis instance or a redlock set) as the extension sees it: its settings,
 * its connection state (with the reason when it is not connected), and while connected its backend and the live watch
 * of its prefixes. Views listen to its events and read the backend's capabilities; none of them asks which store it is.
 */
export class StoreConnection implements vscode.Disposable {
  private currentState: ConnectionState = 'disconnected';
  private lastError?: LockLensError;
  private opened?: LockBackend;
  private lockWatch?: LockWatch;
  private watchSubscriptions: { dispose(): void }[] = [];
  private connecting?: Promise<void>;
  private disconnecting?: Promise<void>;
  /** When the shown data stopped being current (the watch broke); undefined while live. */
  staleSince?: number;
  /** Live, but some of the store's nodes could not be read: which, and what that means for what is shown. */
  partial?: { readonly unreachable: readonly string[]; readonly detail: string };
  /** Live, but the store would not show everything (another role's sessions, a plugin not installed): what, and the fix. */
  hidden?: string;
  clock = new LockClock();

  private readonly stateEmitter = new Emitter<StoreConnection>();
  private readonly locksEmitter = new Emitter<ChangeSet>();
  private readonly leasesEmitter = new Emitter<readonly LeaseInfo[]>();
  readonly onDidChangeState = this.stateEmitter.event;
  readonly onDidChangeLocks = this.locksEmitter.event;
  readonly onDidChangeLeases = this.leasesEmitter.event;

  constructor(
    public settings: ConnectionSettings,
    private readonly secrets: ConnectionSecretStore,
    private readonly log: vscode.LogOutputChannel,
    private readonly closeHooks: readonly CloseHook[],
  ) {}

  get name(): string {
    return this.settings.name;
  }

  get store(): StoreKind {
    return this.settings.store ?? DEFAULT_STORE;
  }

  /** What its store is and says, for views that differ by store. */
  get descriptor(): StoreDescriptor {
    return STORES[this.store];
  }

  get state(): ConnectionState {
    return this.currentState;
  }

  get error(): LockLensError | undefined {
    return this.lastError;
  }

  /** Failed because its store's package is not installed (or not of this version): installing it is the fix. */
  get storeMissing(): boolean {
    return this.currentState === 'error' && this.lastError?.code === 'NOT_INSTALLED';
  }

  get prefixes(): readonly string[] {
    return this.settings.prefixes ?? [];
  }

  /** The open backend, or undefined while not connected. */
  get backend(): LockBackend | undefined {
    return this.opened;
  }

  get watch(): LockWatch | undefined {
    return this.lockWatch;
  }

  /** The open backend, connecting first if needed; throws the reason it could not. */
  async open(): Promise<LockBackend> {
    await this.disconnecting;
    if (!this.opened) await this.connect();
    if (!this.opened) throw this.lastError ?? new LockLensError('CLOSED', vscode.l10n.t('{0} is not connected', this.name));
    return this.opened;
  }

  connect(): Promise<void> {
    // A connect asked for while closing waits for the close, so it never hands out the client being closed.
    this.connecting ??= (this.disconnecting ?? Promise.resolve()).then(() => this.doConnect()).finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async doConnect(): Promise<void> {
    if (this.opened) return;
    this.setState('connecting');
    try {
      const profile = toProfile(this.settings, await this.secrets.get(this.name), lockTables());
      this.opened = await openBackend(profile);
      this.log.info(`${this.name}: connected to ${this.settings.endpoints.join(', ')}`);
      this.lastError = undefined;
      await this.startWatch();
    } catch (e) {
      this.opened?.close();
      this.opened = undefined;
      this.lastError = e instanceof LockLensError ? e : new LockLensError('STORE', errorMessage(e), { cause: e });
      this.log.error(`${this.name}: ${this.lastError.message}`);
      this.setState('error');
    }
  }

  /** Releases what the close hooks release, then closes. Overlapping calls share one close. */
  disconnect(): Promise<void> {
    this.disconnecting ??= this.doDisconnect().finally(() => (this.disconnecting = undefined));
    return this.disconnecting;
  }

  private async doDisconnect(): Promise<void> {
    await this.connecting;
    const backend = this.opened;
    if (!backend) return this.setState('disconnected');
    for (const hook of this.closeHooks) await hook(this).catch((e) => this.log.error(`${this.name}: ${errorMessage(e)}`));
    this.stopWatch();
    backend.close();
    this.opened = undefined;
    this.log.info(`${this.name}: disconnected`);
    this.setState('disconnected');
  }

  /** Re-reads every prefix from scratch (a new watch), as after a reconnect. */
  async refresh(): Promise<void> {
    if (!this.opened) return this.connect();
    this.stopWatch();
    await this.startWatch();
  }

  /** New settings: a new endpoint, user or TLS means a new connection; new prefixes only a new watch. */
  async update(settings: ConnectionSettings): Promise<void> {
    // A connect in flight was built from the old settings: let it finish, then judge.
    await this.connecting;
    const before = this.settings;
    this.settings = settings;
    if (connectionIdentity(before) !== connectionIdentity(settings)) {
      if (this.opened || this.state === 'error') {
        await this.disconnect();
        await this.connect();
      }
    } else if (JSON.stringify(before.prefixes ?? []) !== JSON.stringify(settings.prefixes ?? [])) {
      if (this.opened) await this.refresh();
      else this.stateEmitter.fire(this);
    }
  }

  dispose(): void {
    this.stopWatch();
    this.opened?.close();
    this.opened = undefined;
    this.stateEmitter.dispose();
    this.locksEmitter.dispose();
    this.leasesEmitter.dispose();
  }

  private async startWatch(): Promise<void> {
    const backend = this.opened!;
    this.clock = new LockClock();
    if (this.prefixes.length === 0) return this.setState('connected');
    const watch = backend.watch(
      this.prefixes.map((p) => Buffer.from(p)),
      { leaseSampleIntervalMs: leaseSampleIntervalMs(), pollIntervalMs: pollIntervalMs(), log: (m) => this.log.warn(`${this.name}: ${m}`) },
    );
    this.lockWatch = watch;
    this.watchSubscriptions = [
      watch.onDidChangeLocks((changes) => {
        this.clock.observe(changes);
        this.locksEmitter.fire(changes);
      }),
      watch.onDidChangeLeases((infos) => this.leasesEmitter.fire(infos)),
      watch.onDidChangeStatus((status) => {
        if (status.detail) this.log.info(`${this.name}: ${status.detail}`);
        const partial = status.state === 'live' && status.unreachable?.length ? { unreachable: status.unreachable, detail: status.detail ?? '' } : undefined;
        const hidden = status.state === 'live' ? status.hidden : this.hidden;
        const partialChanged = JSON.stringify(partial) !== JSON.stringify(this.partial) || hidden !== this.hidden;
        if (hidden && hidden !== this.hidden) this.log.warn(`${this.name}: ${hidden}`);
        this.partial = partial;
        this.hidden = hidden;
        if (status.state === 'live') {
          if (partialChanged && this.currentState === 'connected') this.stateEmitter.fire(this);
          else this.setState('connected');
        }
        else if (status.state === 'reconnecting' || status.state === 'resyncing') {
          this.lastError = status.error;
          this.setState('reconnecting');
        }
      }),
    ];
    try {
      await watch.start();
      this.setState('connected');
    } catch (e) {
      this.stopWatch();
      throw e;
    }
  }

  private stopWatch(): void {
    this.watchSubscriptions.forEach((s) => s.dispose());
    this.watchSubscriptions = [];
    this.lockWatch?.dispose();
    this.lockWatch = undefined;
    this.partial = undefined;
    this.hidden = undefined;
  }

  private setState(state: ConnectionState): void {
    if (state === 'reconnecting') this.staleSince ??= Date.now();
    else this.staleSince = undefined;
    if (state === this.currentState && state !== 'reconnecting') return;
    this.currentState = state;
    this.stateEmitter.fire(this);
  }
}

/** What decides the connection itself (not what it watches, nor its name): a change means reconnecting. */
function connectionIdentity(settings: ConnectionSettings): string {
  const { store, endpoints, username, namespace, tls, dialTimeoutMs } = settings;
  return JSON.stringify({ store, endpoints, username, namespace, tls, dialTimeoutMs });
}

/** The configured connections, kept in step with the `locklens.connections` setting. */
export class ConnectionRegistry implements vscode.Disposable {
  private readonly connections = new Map<string, StoreConnection>();
  private readonly changeEmitter = new Emitter<void>();
  private readonly stateEmitter = new Emitter<StoreConnection>();
  private readonly locksEmitter = new Emitter<{ connection: StoreConnection; changes: ChangeSet }>();
  private readonly leasesEmitter = new Emitter<{ connection: StoreConnection; infos: readonly LeaseInfo[] }>();
  /** Connections were added, removed or renamed. */
  readonly onDidChange = this.changeEmitter.event;
  readonly onDidChangeState = this.stateEmitter.event;
  readonly onDidChangeLocks = this.locksEmitter.event;
  readonly onDidChangeLeases = this.leasesEmitter.event;
  private readonly closeHooks: CloseHook[] = [];
  private syncing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly secrets: ConnectionSecretStore,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  all(): StoreConnection[] {
    return [...this.connections.values()];
  }

  get(name: string): StoreConnection | undefined {
    return this.connections.get(name);
  }

  /** Run before any connection closes (disconnect, removal, shutdown). */
  addCloseHook(hook: CloseHook): void {
    this.closeHooks.push(hook);
  }

  /** Brings the connections in line with settings; returns the ones that are new. Calls run one after another. */
  sync(): Promise<StoreConnection[]> {
    const run = this.syncing.then(() => this.syncNow());
    this.syncing = run.catch(() => undefined);
    return run;
  }

  private async syncNow(): Promise<StoreConnection[]> {
    const wanted = readConnections();
    const added: StoreConnection[] = [];
    for (const [name, c] of this.connections) {
      if (!wanted.some((w) => w.name === name)) {
        this.connections.delete(name);
        await c.disconnect();
        c.dispose();
        // Gone from settings (by the command or by hand): a later connection of the same name must not inherit them.
        await this.secrets.delete(name);
      }
    }
    for (const settings of wanted) {
      const existing = this.connections.get(settings.name);
      if (existing) await existing.update(settings);
      else {
        const c = new StoreConnection(settings, this.secrets, this.log, this.closeHooks);
        c.onDidChangeState((x) => this.stateEmitter.fire(x));
        c.onDidChangeLocks((changes) => this.locksEmitter.fire({ connection: c, changes }));
        c.onDidChangeLeases((infos) => this.leasesEmitter.fire({ connection: c, infos }));
        this.connections.set(settings.name, c);
        added.push(c);
      }
    }
    this.changeEmitter.fire();
    return added;
  }

  /** Disconnects everything (running the close hooks), for deactivate. */
  async closeAll(): Promise<void> {
    await Promise.all(this.all().map((c) => c.disconnect()));
  }

  dispose(): void {
    for (const c of this.connections.values()) c.dispose();
    this.connections.clear();
    this.changeEmitter.dispose();
    this.stateEmitter.dispose();
    this.locksEmitter.dispose();
    this.leasesEmitter.dispose();
  }
}

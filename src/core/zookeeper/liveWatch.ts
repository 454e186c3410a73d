/**
 * Keeps the locks under some ZooKeeper paths current with ZooKeeper's own watches: every read sets a one-shot watch
 * (a parent's children, a contender's data, a missing root's existence), and each event re-reads only what it names,
 * which sets the watch again. The library re-registers watches after a reconnect of the same session, but whatever
 * happened while it was away is read again anyway (a full read); an expired session loses every watch, so the
 * connection opens a new session and everything is read and watched again. Reads go through a SnapshotModel: only
 * locks that really changed are emitted, coalesced.
 */
import type * as zookeeper from 'node-zookeeper-client';
import type { WatchOptions } from '../backend';
import type { Disposable } from '../emitter';
import { LockLensError, errorMessage } from '../errors';
import { keyId } from '../keys';
import type { LeaseInfo } from '../leaseInfo';
import { SnapshotLockWatch, closedError } from '../snapshotWatch';
import type { LockState } from '../lockState';
import type { ConnectionState, ZkConnection } from './connect';
import { goneOwners } from '../holdEndEvidence';
import { SessionEnds } from './sessionEnds';
import type { ZooKeeperServer } from './url';
import { ZnodeTree } from './znodeTree';

/**
 * Events of one burst (a lock handed over: a delete, then the next holder's watch) are read together, unless
 * WatchOptions.readDelayMs says to gather longer.
 */
const EVENT_DELAY_MS = 2;
/** How soon a full read that failed while connected is tried again. */
const RETRY_MS = 1000;

export class ZooKeeperLockWatch extends SnapshotLockWatch {
  private readonly tree: ZnodeTree;
  /** Whether the sessions of nodes that went lived on: how their holds ended. */
  private readonly sessionEnds: SessionEnds;
  private fullPending: Promise<void> | undefined;
  /** The paths events named since the last read. */
  private readonly dirty = new Set<string>();
  private eventTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private subscription: Disposable | undefined;

  constructor(
    private readonly conn: ZkConnection,
    roots: readonly string[],
    servers: readonly ZooKeeperServer[],
    options: WatchOptions = {},
  ) {
    super(options);
    this.sessionEnds = new SessionEnds(servers);
    this.tree = new ZnodeTree(() => conn.client, roots, (event) => this.onEvent(event));
  }

  private get label(): string {
    return this.conn.spec.label;
  }

  async start(): Promise<void> {
    this.setStatus({ state: 'loading' });
    this.subscription = this.conn.onDidChangeState((s) => this.onConnection(s));
    await this.enqueue(() => this.fullRead(true, true));
  }

  private onConnection(state: ConnectionState): void {
    if (this.disposed) return;
    switch (state) {
      case 'disconnected':
        return this.setStatus({ state: 'reconnecting', error: new LockLensError('UNREACHABLE', `lost the connection to ZooKeeper at ${this.label}; reconnecting`) });
      case 'expired':
        return this.setStatus({
          state: 'reconnecting',
          error: new LockLensError('UNREACHABLE', `ZooKeeper at ${this.label} expired LockLens's session (it was away too long); opening a new one`),
        });
      case 'authFailed':
        return this.setStatus({ state: 'reconnecting', error: new LockLensError('AUTH', `ZooKeeper at ${this.label} refused the credentials`) });
      case 'connected':
      case 'renewed':
        // Back with the same session (its watches re-set by the library) or a new one (none): read it all again.
        this.setStatus({ state: 'resyncing' });
        void this.requestFull(true);
    }
  }

  private onEvent(event: zookeeper.Event): void {
    if (this.disposed) return;
    this.dirty.add(event.getPath());
    this.eventTimer ??= setTimeout(() => {
      this.eventTimer = undefined;
      void this.enqueue(() => this.readDirty());
    }, this.options.readDelayMs ?? EVENT_DELAY_MS);
  }

  /** Reads again what the events since the last read named. */
  private async readDirty(): Promise<void> {
    if (this.disposed) return;
    // Told apart now, not when each event came: one that came during a full read names a contender the tree had not
    // read yet (a data change taken for a parent's and never read again: seen under load). An event from a watch on a
    // path forgotten since (its subtree was deleted) is neither, and names nothing to read.
    const dirs: string[] = [];
    const nodes: string[] = [];
    for (const path of this.dirty) {
      if (this.tree.isContender(path)) nodes.push(path);
      else if (this.tree.isDir(path)) dirs.push(path);
    }
    this.dirty.clear();
    // Parents first: a child read after its parent is read only if the parent still has it.
    dirs.sort((a, b) => a.length - b.length);
    const touched = new Set<string>();
    try {
      for (const dir of dirs) await this.tree.readDir(dir, touched);
      for (const node of nodes) await this.tree.readContender(node, touched);
    } catch (e) {
      // Some of it may be read, some not: what the watches missed meanwhile is read in full.
      this.options.log?.(`ZooKeeper read failed: ${errorMessage(e)}`);
      void this.requestFull(false);
    }
    await this.emitTouched(touched);
  }

  private async emitTouched(touched: Set<string>): Promise<void> {
    if (touched.size === 0) return;
    const ids: string[] = [];
    const locks: LockState[] = [];
    const before: LockState[] = [];
    // Loops, not callbacks made per change: see byName (lockState.ts) on what V8 does with those.
    for (const path of this.tree.lockNames(touched)) {
      const id = keyId(Buffer.from(path));
      ids.push(id);
      const now = this.tree.lockAt(path);
      if (now) locks.push(now);
      const was = this.model.lock(id);
      if (was) before.push(was);
    }
    // Asked before the change is told: those who hear of a node gone ask then whether its session lived on.
    await this.sessionEnds.ask(goneOwners(before, locks));
    if (this.disposed) return;
    this.emit(this.model.replaceSome(ids, locks));
  }

  ownerLives(session: string): boolean | undefined {
    return this.sessionEnds.lived(session);
  }

  /** One full read soon; calls made while one is waiting share it. */
  private requestFull(resynced: boolean): Promise<void> {
    if (this.disposed) return Promise.resolve();
    this.fullPending ??= this.enqueue(async () => {
      this.fullPending = undefined;
      await this.fullRead(resynced);
    });
    return this.fullPending;
  }

  /** Reads everything; a failure is thrown (throwOnError) or told in the status and returned (see readWhole). */
  private async fullRead(resynced: boolean, throwOnError = false): Promise<LockLensError | undefined> {
    if (this.disposed) return closedError();
    clearTimeout(this.retryTimer);
    // A full read covers whatever the events named before it.
    this.dirty.clear();
    try {
      await this.tree.readAll();
      this.emit(this.model.replaceAll(this.tree.locks(), resynced));
      this.setStatus({ state: 'live' });
      return undefined;
    } catch (e) {
      const error = e instanceof LockLensError ? e : new LockLensError('STORE', errorMessage(e), { cause: e });
      if (throwOnError) throw error;
      if (error.code === 'CLOSED') return error;
      this.setStatus({ state: 'reconnecting', error });
      // While disconnected, the reconnect says when to read; otherwise (a timeout, a refusal) try again soon.
      this.retryTimer = setTimeout(() => void this.requestFull(true), RETRY_MS);
      return error;
    }
  }

  /** ZooKeeper has no TTL to sample (a session's remaining time cannot be read): onDidChangeLeases never fires. */
  lease(): LeaseInfo | undefined {
    return undefined;
  }

  async sweep(): Promise<void> {
    // Nothing to sample: a session's remaining time is the server's secret.
  }

  protected readWhole(): Promise<LockLensError | undefined> {
    return this.fullRead(false);
  }

  protected stop(): void {
    clearTimeout(this.eventTimer);
    clearTimeout(this.retryTimer);
    this.subscription?.dispose();
  }
}

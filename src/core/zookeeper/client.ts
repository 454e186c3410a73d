/**
 * One ZooKeeper session through node-zookeeper-client, with promises and a deadline on every request. The library
 * queues requests while it is disconnected and reconnects for ever, so without a deadline a read on a dead ensemble
 * would wait until the ensemble came back: here it fails within the dial timeout and says why. Failures are
 * LockLensErrors whose cause is the library's Exception (see `zkCode`).
 */
import * as zookeeper from 'node-zookeeper-client';
import { Emitter } from '../emitter';
import { LockLensError, errorMessage } from '../errors';
import { longOf, sessionHex } from './lockOfChildren';

export type Watcher = (event: zookeeper.Event) => void;

export type SessionState = 'connected' | 'disconnected' | 'expired' | 'authFailed';

export interface SessionSpec {
  /** `host:port,host:port[/chroot]`, as the library takes it. */
  readonly connectionString: string;
  /** For messages: the servers, with the chroot. */
  readonly label: string;
  readonly username?: string;
  readonly password?: string;
  /** Asked of the server, which keeps it within its own bounds (2 to 20 ticks by default). */
  readonly sessionTimeoutMs: number;
  /** The deadline of connecting and of each request. */
  readonly timeoutMs: number;
}

/** The Exception code of a failed request (NO_NODE, NODE_EXISTS, BAD_VERSION…), if the server or library gave one. */
export function zkCode(e: unknown): number | undefined {
  const inner = e instanceof LockLensError ? e.cause : e;
  return inner instanceof zookeeper.Exception ? inner.getCode() : undefined;
}

/** The library's Stat, with the fields LockLens reads as numbers. */
export interface NodeStat {
  readonly czxid: bigint;
  readonly mzxid: bigint;
  readonly version: number;
  readonly ephemeralOwner: bigint;
  readonly dataLength: number;
  readonly numChildren: number;
}

function statOf(stat: zookeeper.Stat): NodeStat {
  return {
    czxid: longOf(stat.czxid),
    mzxid: longOf(stat.mzxid),
    version: stat.version,
    ephemeralOwner: longOf(stat.ephemeralOwner),
    dataLength: stat.dataLength,
    numChildren: stat.numChildren,
  };
}

/**
 * Bytes from a peer that is not ZooKeeper can make the library's frame parser throw inside its socket's data handler,
 * where nothing can catch it (a crash of the CLI, an error in the extension host). Such a frame drops the socket
 * instead; the open's deadline then explains what answered.
 */
function guardFrames(client: zookeeper.Client): void {
  const manager = (client as unknown as { connectionManager: { onSocketData(b: Buffer): void; socket?: { destroy(): void } } }).connectionManager;
  const parse = manager.onSocketData;
  manager.onSocketData = function (this: typeof manager, buffer: Buffer) {
    try {
      parse.call(this, buffer);
    } catch {
      this.socket?.destroy();
    }
  };
}

/** Requests sent and not yet answered at once, per session (see ZkClient.call). */
const MAX_IN_FLIGHT = 1000;

export class ZkClient {
  private readonly raw: zookeeper.Client;
  private readonly stateEmitter = new Emitter<SessionState>();
  readonly onDidChangeState = this.stateEmitter.event;
  private current: SessionState | 'connecting' = 'connecting';
  private closed = false;

  constructor(readonly spec: SessionSpec) {
    // Retries are ours (a request fails at its deadline, the caller decides); spinDelay: how soon the library tries
    // the servers again after all failed.
    this.raw = zookeeper.createClient(spec.connectionString, { sessionTimeout: spec.sessionTimeoutMs, spinDelay: 200, retries: 0 });
    guardFrames(this.raw);
    if (spec.username !== undefined || spec.password !== undefined) {
      // Digest auth never fails at connect time: the server only records the identity; a node whose ACL does not
      // grant it answers NO_AUTH (see zkError).
      this.raw.addAuthInfo('digest', Buffer.from(`${spec.username ?? ''}:${spec.password ?? ''}`));
    }
    const on = (state: SessionState) => () => {
      this.current = state;
      this.stateEmitter.fire(state);
    };
    this.raw.on('connected', on('connected'));
    this.raw.on('connectedReadOnly', on('connected'));
    this.raw.on('disconnected', on('disconnected'));
    this.raw.on('expired', on('expired'));
    this.raw.on('authenticationFailed', on('authFailed'));
  }

  get state(): SessionState | 'connecting' {
    return this.current;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** The session id in hex, as members' owners show it. */
  get sessionId(): string {
    return sessionHex(this.raw.getSessionId().readBigInt64BE(0));
  }

  /** As the server granted it once connected. */
  get sessionTimeoutMs(): number {
    return this.raw.getSessionTimeout();
  }

  /** Resolves once connected, or rejects with what happened instead (see connect.ts for the diagnosis of a timeout). */
  connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const sub = this.onDidChangeState((state) => {
        if (state === 'disconnected') return;
        sub.dispose();
        clearTimeout(timer);
        if (state === 'connected') resolve();
        else if (state === 'expired') reject(new LockLensError('UNREACHABLE', `ZooKeeper at ${this.spec.label} ended the session as it was being set up`));
        else reject(new LockLensError('AUTH', `ZooKeeper at ${this.spec.label} refused the credentials`));
      });
      const timer = setTimeout(() => {
        sub.dispose();
        reject(new LockLensError('TIMEOUT', `no ZooKeeper session with ${this.spec.label} within ${this.spec.timeoutMs} ms`));
      }, this.spec.timeoutMs);
      this.raw.connect();
    });
  }

  /**
   * At most MAX_IN_FLIGHT requests are sent and unanswered at once; the rest wait their turn here, and each one's
   * deadline starts when it is sent. node-zookeeper-client keeps what it has sent in an array it shift()s from, so a
   * listing of 100,000 nodes sent at once spent seconds there, and the last requests timed out while still queued.
   */
  private inFlight = 0;
  private readonly turns: (() => void)[] = [];

  private async call<T>(what: string, path: string, run: (done: (error: unknown, value?: T) => void) => void): Promise<T> {
    if (this.closed) throw new LockLensError('CLOSED', 'the ZooKeeper connection is closed');
    if (this.inFlight >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => this.turns.push(resolve));
    this.inFlight++;
    let answered = false;
    const next = () => {
      if (answered) return;
      answered = true;
      this.inFlight--;
      this.turns.shift()?.();
    };
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        next();
        const why = this.current === 'connected' ? 'no answer' : 'not connected';
        reject(new LockLensError('TIMEOUT', `ZooKeeper at ${this.spec.label}: ${what} ${path}: ${why} within ${this.spec.timeoutMs} ms`));
      }, this.spec.timeoutMs);
      run((error, value) => {
        clearTimeout(timer);
        next();
        if (error) reject(this.error(error, what, path));
        else resolve(value as T);
      });
    });
  }

  /** A library failure as a LockLensError, keeping the Exception as its cause. */
  private error(e: unknown, what: string, path: string): LockLensError {
    const code = zkCode(e);
    const at = `ZooKeeper at ${this.spec.label}: ${what} ${path}`;
    switch (code) {
      case zookeeper.Exception.NO_AUTH:
        return this.spec.username !== undefined
          ? new LockLensError('AUTH', `${at}: not allowed (NoAuth): the node's ACL does not grant digest user '${this.spec.username}' this, or the password is wrong`, { cause: e })
          : new LockLensError('PERMISSION', `${at}: not allowed (NoAuth): the node's ACL requires credentials (set a username and password)`, { cause: e });
      case zookeeper.Exception.AUTH_FAILED:
        return new LockLensError('AUTH', `${at}: the server refused the credentials`, { cause: e });
      case zookeeper.Exception.CONNECTION_LOSS:
        return new LockLensError('UNREACHABLE', `${at}: the connection was lost`, { cause: e });
      case zookeeper.Exception.SESSION_EXPIRED:
        return new LockLensError('UNREACHABLE', `${at}: the session expired`, { cause: e });
      case zookeeper.Exception.OPERATION_TIMEOUT:
        return new LockLensError('TIMEOUT', `${at}: the operation timed out`, { cause: e });
      default:
        return new LockLensError('STORE', `${at}: ${errorMessage(e)}`, { cause: e });
    }
  }

  /** The children's names, or undefined when the node does not exist. `watcher` hears the next change of the list. */
  async children(path: string, watcher?: Watcher): Promise<string[] | undefined> {
    try {
      return await this.call<string[]>('list', path, (done) =>
        watcher ? this.raw.getChildren(path, watcher, (e, children) => done(e, children)) : this.raw.getChildren(path, (e, children) => done(e, children)),
      );
    } catch (e) {
      if (zkCode(e) === zookeeper.Exception.NO_NODE) return undefined;
      throw e;
    }
  }

  /** Data and Stat, or undefined when the node does not exist. `watcher` hears its next data change or its deletion. */
  async data(path: string, watcher?: Watcher): Promise<{ data: Buffer; stat: NodeStat } | undefined> {
    try {
      const [data, stat] = await this.call<[Buffer | null, zookeeper.Stat]>('read', path, (done) =>
        watcher ? this.raw.getData(path, watcher, (e, d, s) => done(e, [d, s])) : this.raw.getData(path, (e, d, s) => done(e, [d, s])),
      );
      return { data: data ?? Buffer.alloc(0), stat: statOf(stat) };
    } catch (e) {
      if (zkCode(e) === zookeeper.Exception.NO_NODE) return undefined;
      throw e;
    }
  }

  /** The Stat, or null when the node does not exist; `watcher` hears its creation, deletion or data change. */
  exists(path: string, watcher?: Watcher): Promise<NodeStat | null> {
    return this.call<zookeeper.Stat | null>('look up', path, (done) =>
      watcher ? this.raw.exists(path, watcher, (e, s) => done(e, s ?? null)) : this.raw.exists(path, (e, s) => done(e, s ?? null)),
    ).then((s) => (s ? statOf(s) : null));
  }

  /** Creates the node (open to anyone unless `acls` say otherwise); the path it got, with its sequence if sequential. */
  create(path: string, data: Buffer, mode: number, acls?: zookeeper.ACL[]): Promise<string> {
    return this.call<string>('create', path, (done) =>
      acls ? this.raw.create(path, data, acls, mode, (e, created) => done(e, created)) : this.raw.create(path, data, mode, (e, created) => done(e, created)),
    );
  }

  /** Creates `path` and its missing ancestors as persistent nodes, as kazoo's ensure_path does. */
  mkdirp(path: string): Promise<void> {
    return this.call<void>('create', path, (done) => this.raw.mkdirp(path, (e) => done(e)));
  }

  /** Deletes the node if its data version is still `version` (-1: any). */
  remove(path: string, version = -1): Promise<void> {
    return this.call<void>('delete', path, (done) => this.raw.remove(path, version, (e) => done(e)));
  }

  setData(path: string, data: Buffer, version = -1): Promise<void> {
    return this.call<void>('write', path, (done) => this.raw.setData(path, data, version, (e) => done(e)));
  }

  setAcl(path: string, acls: zookeeper.ACL[]): Promise<void> {
    return this.call<void>('set the ACL of', path, (done) => this.raw.setACL(path, acls, (e) => done(e)));
  }

  /**
   * Ends the session: the server deletes its ephemeral nodes. Resolves when the server confirmed, or after a short
   * grace when it cannot (disconnected): the socket is dropped then, and the session expires on the server by itself.
   */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    const manager = (this.raw as unknown as { connectionManager: { state: number; socket?: { destroy(): void }; once(e: string, l: () => void): void; on(e: string, l: (s: number) => void): void } }).connectionManager;
    return new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        manager.socket?.destroy();
        this.stateEmitter.dispose();
        resolve();
      };
      const grace = this.current === 'connected' ? Math.min(this.spec.timeoutMs, 2000) : 0;
      const timer = setTimeout(finish, grace);
      // The library's CLOSED state (-2) comes when the server closed the socket after CLOSE_SESSION.
      manager.on('state', (s: number) => s === -2 && finish());
      this.raw.close();
    });
  }
}

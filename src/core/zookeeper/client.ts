/**
 * One ZooKeeper session through node-zookeeper-client, with promises and a deadline on every request. The library
 * queues requests while it is disconnected and reconnects for ever, so without a deadline a read on a dead ensemble
 * would wait until the ensemble came back: here it fails within the dial timeout and says why. Failures are
 * LockLensErrors whose cause is the library's Exception (see `zkCode`).
 */
import type { Socket } from 'node:net';
import * as zookeeper from 'node-zookeeper-client';
import { Emitter } from '../emitter';
import { Fifo } from '../fifo';
import { LockLensError, errorMessage } from '../errors';
import { longOf, sessionHex } from './lockOfChildren';
import { ReadRequest, readReply, type NodeStat, type ReadReply, type ReplyReader } from './readWire';
import { WatcherTable, type Watcher } from './watcherTable';

export type { NodeStat } from './readWire';
export type { Watcher } from './watcherTable';

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

/** node-zookeeper-client's connection manager, whose socket, queues and frame parser LockLens reaches into. */
interface ConnectionManager extends ReplyReader {
  socket?: Socket;
  watcherManager: WatcherTable;
  onSocketData(buffer: Buffer): void;
  queue(request: ReadRequest, callback: (error: unknown, reply?: ReadReply) => void): void;
  registerDataWatcher(path: string, watcher: Watcher): void;
  registerChildWatcher(path: string, watcher: Watcher): void;
}

function managerOf(client: zookeeper.Client): ConnectionManager {
  return (client as unknown as { connectionManager: ConnectionManager }).connectionManager;
}

/**
 * Splits the socket's data into reply frames: a reply to a read of readWire.ts is decoded there, any other frame goes
 * to the library's parser whole. Given a chunk of many replies, the library parses the first and then copies the rest
 * into a new buffer to parse the next (a 64 KB chunk of 100-byte replies copied about 300 times over: 75 MB of copies
 * in a 100,000-node listing). And bytes from a peer that is not ZooKeeper can make the parser throw inside the
 * socket's data handler, where nothing can catch it (a crash of the CLI, an error in the extension host): such a frame
 * drops the socket instead, and the open's deadline then explains what answered.
 */
function parseFrameByFrame(client: zookeeper.Client): void {
  const manager = managerOf(client);
  const parse = manager.onSocketData;
  // The start of a frame whose end has not come yet, and the socket it came on (a reconnect starts afresh).
  let partial: Buffer | undefined;
  let partialFrom: Socket | undefined;
  manager.onSocketData = function (this: ConnectionManager, chunk: Buffer) {
    const buffer = partial && partialFrom === this.socket ? Buffer.concat([partial, chunk]) : chunk;
    partial = undefined;
    let offset = 0;
    try {
      while (buffer.length - offset >= 4) {
        const end = offset + 4 + buffer.readInt32BE(offset);
        if (end < offset + 4) throw new Error('negative frame length');
        if (end > buffer.length) break;
        const frame = buffer.subarray(offset, end);
        if (!readReply(this, frame)) parse.call(this, frame);
        offset = end;
      }
    } catch {
      this.socket?.destroy();
      return;
    }
    if (offset < buffer.length) {
      partial = buffer.subarray(offset);
      partialFrom = this.socket;
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
    parseFrameByFrame(this.raw);
    managerOf(this.raw).watcherManager = new WatcherTable();
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
  private readonly waiting = new Fifo<() => void>();

  private call<T>(what: string, path: string, run: (done: (error: unknown, value?: T) => void) => void): Promise<T> {
    if (this.closed) return Promise.reject(new LockLensError('CLOSED', 'the ZooKeeper connection is closed'));
    return new Promise<T>((resolve, reject) => {
      const send = () => {
        this.inFlight++;
        let answered = false;
        const next = () => {
          if (answered) return;
          answered = true;
          this.inFlight--;
          this.waiting.shift()?.();
        };
        const timer = setTimeout(() => {
          next();
          const why = this.current === 'connected' ? 'no answer' : 'not connected';
          reject(new LockLensError('TIMEOUT', `ZooKeeper at ${this.spec.label}: ${what} ${path}: ${why} within ${this.spec.timeoutMs} ms`));
        }, this.spec.timeoutMs);
        this.corkForThisTick();
        run((error, value) => {
          clearTimeout(timer);
          next();
          if (error) reject(this.error(error, what, path));
          else resolve(value as T);
        });
      };
      if (this.inFlight < MAX_IN_FLIGHT) send();
      else this.waiting.push(send);
    });
  }

  private corked?: Socket;

  /**
   * The library writes every request to the socket on its own; corked, the requests sent in one tick (a listing sends
   * one as each reply comes in, many per chunk of replies) leave in one write.
   */
  private corkForThisTick(): void {
    const socket = managerOf(this.raw).socket;
    if (!socket || this.corked === socket) return;
    this.corked = socket;
    socket.cork();
    process.nextTick(() => {
      this.corked = undefined;
      socket.uncork();
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
      return (await this.read('list', new ReadRequest('children', path, watcher !== undefined), watcher)) as string[];
    } catch (e) {
      if (zkCode(e) === zookeeper.Exception.NO_NODE) return undefined;
      throw e;
    }
  }

  /** Data and Stat, or undefined when the node does not exist. `watcher` hears its next data change or its deletion. */
  async data(path: string, watcher?: Watcher): Promise<{ data: Buffer; stat: NodeStat } | undefined> {
    try {
      return (await this.read('read', new ReadRequest('data', path, watcher !== undefined), watcher)) as { data: Buffer; stat: NodeStat };
    } catch (e) {
      if (zkCode(e) === zookeeper.Exception.NO_NODE) return undefined;
      throw e;
    }
  }

  /** A read encoded and decoded by readWire.ts, queued as the library queues its own; the watcher set as it sets it. */
  private read(what: string, request: ReadRequest, watcher?: Watcher): Promise<ReadReply> {
    const manager = managerOf(this.raw);
    return this.call<ReadReply>(what, request.path, (done) =>
      manager.queue(request, (error: unknown, reply?: ReadReply) => {
        if (!error && watcher) {
          if (request.what === 'data') manager.registerDataWatcher(request.path, watcher);
          else manager.registerChildWatcher(request.path, watcher);
        }
        done(error, reply);
      }),
    );
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

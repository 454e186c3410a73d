import type { IKeyValue } from 'etcd3';
import { call } from './connection';
import { Emitter, type Disposable } from './emitter';
import { LockLensError, abortError, throwIfAborted } from './errors';
import { displayKey, leaseDecimal, prefixRange } from './keys';
import { OwnKeyGuard } from './ownKeyGuard';
import type { Session } from './session';
import { WatchStream } from './watchStream';

export interface AcquireOptions {
  /** Abort to stop waiting: the waiter's key is deleted, as Go's Mutex does when its context ends. */
  readonly signal?: AbortSignal;
  /**
   * Told the queue position at once (ahead = 0: held) and each time the waiter just ahead leaves. (A holder further
   * ahead leaving is not seen until then: seeing it would mean waking every waiter on every handoff.)
   */
  readonly onQueue?: (position: QueuePosition) => void;
}

export interface QueuePosition {
  /** Keys ahead in the queue, the holder included. */
  readonly ahead: number;
  /** The fencing token this waiter will hold the lock with: its key's create revision, fixed when it queued. */
  readonly fencingToken: number;
}

/** A queued waiter: its key's create revision and the keys created before it that still exist. */
interface Ticket {
  readonly createRevision: number;
  /** The keys under the prefix with a lower create revision, oldest (the holder) first. */
  readonly ahead: Buffer[];
  /** The revision the ticket was read at; a watch from here + 1 misses nothing. */
  readonly revision: number;
  /** Whether this call created the key (false: the session already had one, Go's re-entrant case). */
  readonly created: boolean;
}

/**
 * A lock compatible with Go's `concurrency.Mutex`, `etcdctl lock`, and the v3lock service used by jetcd: the key is
 * `<name>/<lease hex>`, the holder is the key with the lowest create revision, and the others queue in create-revision
 * order. It excludes, and queues fairly with, those clients on the same name.
 *
 * Like Go, it takes its place with one transaction (put the key if it does not exist, and list the queue in the same
 * revision), waits for the delete of its predecessor only, and re-reads the queue when woken. Unlike Go, one watch on
 * its own key runs from enqueue to release, so a revoked or expired lease is reported at once while waiting or holding.
 */
export class Mutex {
  readonly prefix: Buffer;
  /** The key this session queues with: `<name>/<lease hex>`. */
  readonly key: Buffer;

  constructor(
    readonly session: Session,
    name: string | Uint8Array,
  ) {
    if (name.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'a lock name cannot be empty');
    this.prefix = Buffer.concat([Buffer.from(name), Buffer.from('/')]);
    this.key = Buffer.concat([this.prefix, Buffer.from(session.leaseId)]);
  }

  /** Takes the lock if it is free now; otherwise leaves no key behind and throws LOCKED naming the holder. */
  async tryAcquire(): Promise<Hold> {
    const ticket = await this.enqueue();
    if (ticket.ahead.length === 0) return this.hold(ticket, ticket.revision);
    if (ticket.created) await this.deleteOwnKey(ticket.createRevision);
    throw new LockLensError('LOCKED', `'${displayKey(this.prefix.subarray(0, -1))}' is held by ${displayKey(ticket.ahead[0])}`);
  }

  /** Waits in the queue until this session holds the lock. */
  async acquire(options: AcquireOptions = {}): Promise<Hold> {
    throwIfAborted(options.signal);
    const ticket = await this.enqueue();
    const position = (ahead: number) => options.onQueue?.({ ahead, fencingToken: ticket.createRevision });
    position(ticket.ahead.length);
    if (ticket.ahead.length === 0) return this.hold(ticket, ticket.revision);
    const guard = this.guard(ticket);
    warmHandoff(this);
    try {
      return new Hold(this, ticket.createRevision, await this.waitForTurn(ticket, guard, options.signal, position), guard);
    } catch (e) {
      guard.dispose();
      await this.deleteOwnKey(ticket.createRevision).catch(() => undefined);
      throw e;
    }
  }

  private async enqueue(): Promise<Ticket> {
    const lost = this.session.lost;
    if (lost) throw lost;
    const conn = this.session.conn;
    const key = conn.toEtcd(this.key);
    const listQueue = { request_range: { ...prefixRange(conn.toEtcd(this.prefix)), keys_only: true } };
    const res = await call(
      conn.client.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key, value: Buffer.alloc(0), lease: leaseDecimal(this.session.leaseId) } }, listQueue],
        failure: [{ request_range: { key } }, listQueue],
      }),
    );
    const revision = Number(res.header.revision);
    const createRevision = res.succeeded ? revision : Number(res.responses[0].response_range.kvs[0].create_revision);
    return { createRevision, revision, created: res.succeeded, ahead: keysAhead(res.responses[1].response_range.kvs, createRevision) };
  }

  /**
   * Go's `waitDeletes`: wait for the DELETE of the key just ahead (the highest create revision below ours), then
   * re-read who is still ahead, until nobody is. A waiter wakes only when its own predecessor leaves, so a handoff
   * wakes one process, not the whole queue (the herd effect). Resolves to the revision at which the lock was ours.
   */
  private async waitForTurn(ticket: Ticket, guard: OwnKeyGuard, signal: AbortSignal | undefined, position: (ahead: number) => void): Promise<number> {
    let ahead = ticket.ahead;
    let revision = ticket.revision;
    for (;;) {
      const woke = await this.waitForDelete(ahead[ahead.length - 1], revision + 1, guard, signal);
      if (woke === 'broken') await new Promise((r) => setTimeout(r, 200));
      throwIfAborted(signal);
      ({ ahead, revision } = await this.readAhead(ticket.createRevision));
      if (ahead.length === 0) return revision;
      position(ahead.length);
    }
  }

  /**
   * The keys queued before `createRevision`, read serializably. A linearizable read would wait for every write in
   * flight, and at a handoff there always is one (the old holder revoking its lease): measured, 8 ms of the handoff.
   * Serializable is safe here: keys ahead of us can only go away (new keys get higher create revisions), so a read at
   * any revision at or after our own key's creation that shows nobody ahead proves nobody ever will be. Only a member
   * that lags behind our own key's creation needs the linearizable read.
   */
  async readAhead(createRevision: number): Promise<{ ahead: Buffer[]; revision: number }> {
    const queue = prefixRange(this.session.conn.toEtcd(this.prefix));
    const read = (serializable: boolean) =>
      call(this.session.conn.client.kv.range({ ...queue, keys_only: true, max_create_revision: createRevision - 1, serializable }));
    let res = await read(true);
    if (Number(res.header.revision) < createRevision) res = await read(false);
    return { ahead: keysAhead(res.kvs, createRevision), revision: Number(res.header.revision) };
  }

  /** Resolves when `key` is deleted (or the watch broke: re-read and decide); rejects if the wait must end. */
  private waitForDelete(key: Buffer, from: number, guard: OwnKeyGuard, signal: AbortSignal | undefined): Promise<'deleted' | 'broken'> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const cleanups: Disposable[] = [];
      const settle = (finish: () => void) => {
        if (settled) return;
        settled = true;
        cleanups.forEach((c) => c.dispose());
        finish();
      };
      const onAbort = () => settle(() => reject(abortError(signal!)));
      signal?.addEventListener('abort', onAbort, { once: true });
      cleanups.push({ dispose: () => signal?.removeEventListener('abort', onAbort) });
      cleanups.push(this.session.onDidLose((e) => settle(() => reject(e))));
      cleanups.push(guard.onDidDelete((e) => settle(() => reject(e))));
      WatchStream.open(this.session.conn, { key, startRevision: from, noPut: true }, { onEvents: () => settle(() => resolve('deleted')) }).then(
        (watch) => {
          if (settled) return watch.close();
          cleanups.push({ dispose: () => watch.close() });
          void watch.ended.then(() => settle(() => resolve('broken')));
        },
        () => settle(() => resolve('broken')),
      );
    });
  }

  private guard(ticket: Ticket): OwnKeyGuard {
    return new OwnKeyGuard(this.session.conn, this.key, ticket.createRevision, ticket.created ? ticket.revision : ticket.revision + 1);
  }

  private hold(ticket: Ticket, revision: number): Hold {
    warmHandoff(this);
    return new Hold(this, ticket.createRevision, revision, this.guard(ticket));
  }

  /** Owner-only delete: only the key this session created at that revision, never a newer one of the same name. */
  async deleteOwnKey(createRevision: number): Promise<boolean> {
    const key = this.session.conn.toEtcd(this.key);
    const res = await call(
      this.session.conn.client.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: createRevision }],
        success: [{ request_delete_range: { key } }],
        failure: [],
      }),
    );
    return res.succeeded;
  }
}

let handoffWarmed = false;

/**
 * Once per process, while the caller waits or works anyway, runs the two calls a handoff depends on: the release
 * (with a token that matches nothing: the key exists, so nothing is deleted) and the re-read of the queue. In a fresh
 * process the first call of each costs 5-13 ms (protobufjs generates its encoders and decoders, V8 runs gRPC's call
 * path cold); a short-lived process such as the CLI would pay that on the next holder's critical path.
 */
function warmHandoff(mutex: Mutex): void {
  if (handoffWarmed) return;
  handoffWarmed = true;
  void mutex.deleteOwnKey(0).catch(() => undefined);
  void mutex.readAhead(Number.MAX_SAFE_INTEGER).catch(() => undefined);
}

/** The keys queued before `createRevision`, oldest first. */
function keysAhead(kvs: IKeyValue[], createRevision: number): Buffer[] {
  return kvs
    .filter((kv) => Number(kv.create_revision) < createRevision)
    .sort((a, b) => Number(a.create_revision) - Number(b.create_revision))
    .map((kv) => kv.key);
}

/**
 * A held lock. It fires `onDidLose` the moment its key is deleted by anyone else (a revoke, an expiry) or the lease
 * can no longer be trusted: a holder is never silently assumed.
 */
export class Hold implements Disposable {
  private readonly lostEmitter = new Emitter<LockLensError>();
  readonly onDidLose = this.lostEmitter.event;
  private lostReason?: LockLensError;
  private released = false;
  private readonly listeners: Disposable[];
  readonly acquiredAt = Date.now();

  constructor(
    readonly mutex: Mutex,
    /** The fencing token: the key's create revision. Resources should reject writes carrying an older one. */
    readonly fencingToken: number,
    /** The revision at which this session became the holder. */
    readonly revision: number,
    private readonly guard: OwnKeyGuard,
  ) {
    this.listeners = [mutex.session.onDidLose((e) => this.lose(e)), guard.onDidDelete((e) => this.lose(e))];
  }

  get key(): Buffer {
    return this.mutex.key;
  }

  get lost(): LockLensError | undefined {
    return this.lostReason;
  }

  /** Deletes the key if it is still this hold's. Resolves false when it was already gone (the lock had been lost). */
  async release(): Promise<boolean> {
    if (this.released) return false;
    this.released = true;
    // Delete first: the next holder waits on this, and closing the guard's stream first would delay the write.
    try {
      return await this.mutex.deleteOwnKey(this.fencingToken);
    } finally {
      this.dispose();
    }
  }

  dispose(): void {
    this.guard.dispose();
    this.listeners.forEach((l) => l.dispose());
  }

  private lose(reason: LockLensError): void {
    if (this.lostReason || this.released) return;
    this.lostReason = reason;
    this.dispose();
    this.lostEmitter.fire(reason);
  }
}

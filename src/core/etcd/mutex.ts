import type { IKeyValue } from 'etcd3';
import type { QueuePosition } from '../backend';
import { call } from './connect';
import { Emitter, type Disposable } from '../emitter';
import { LockLensError, throwIfAborted } from '../errors';
import { displayKey, keyId, leaseDecimal } from '../keys';
import { prefixRange } from './keyRange';
import { OwnKeyGuard } from './ownKeyGuard';
import { QueueWatch } from './queueWatch';
import type { Session } from './session';

export interface AcquireOptions {
  /** Abort to stop waiting: the waiter's key is deleted, as Go's Mutex does when its context ends. */
  readonly signal?: AbortSignal;
  /**
   * Told the queue position at once (ahead = 0: held) and each time one of the two keys just ahead leaves. (A key
   * further ahead leaving is not seen until then: seeing it would mean waking every waiter on every handoff.)
   */
  readonly onQueue?: (position: MutexPosition) => void;
  /**
   * Called the moment the lock is known to be ours, synchronously, before `acquire` resolves and before the hold's
   * guard is set up, with the revision it became ours at (the hold's `revision`): what must happen first at a
   * handoff (the CLI lets its command run) can happen here.
   */
  readonly onHeld?: (position: HeldPosition) => void;
}

/** Where a waiter stands; in etcd the fencing token is known as soon as it queues (its key's create revision). */
export type MutexPosition = QueuePosition & { readonly fencingToken: number };

/** The position of a waiter that now holds: ahead 0, and the revision it became the holder at. */
export type HeldPosition = MutexPosition & { readonly revision: number };

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
 * revision) and waits for the deletes of the keys just ahead, never the whole queue; see `waitForTurn` for how it
 * keeps the queue read off the handoff path. While it holds, an OwnKeyGuard reports the moment its key is gone.
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
    const holder = ticket.ahead[0].subarray(this.session.conn.namespace.length);
    throw new LockLensError('LOCKED', `'${displayKey(this.prefix.subarray(0, -1))}' is held by ${displayKey(holder)}`);
  }

  /** Waits in the queue until this session holds the lock. */
  async acquire(options: AcquireOptions = {}): Promise<Hold> {
    throwIfAborted(options.signal);
    const ticket = await this.enqueue();
    const position = (ahead: number) => options.onQueue?.({ key: this.key, ahead, fencingToken: ticket.createRevision });
    const held = (revision: number) => options.onHeld?.({ key: this.key, ahead: 0, fencingToken: ticket.createRevision, revision });
    try {
      position(ticket.ahead.length);
      if (ticket.ahead.length === 0) {
        this.throwIfLost();
        held(ticket.revision);
        return this.hold(ticket, ticket.revision);
      }
      this.warmHandoff(ticket.createRevision);
      const turn = await this.waitForTurn(ticket, options.signal, position, held);
      return this.hold(ticket, turn.revision, turn.watch);
    } catch (e) {
      await this.leaveQueue(ticket.createRevision);
      throw e;
    }
  }

  private async enqueue(): Promise<Ticket> {
    await leaving.get(this.session)?.get(keyId(this.key));
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
   * Go's `waitDeletes`, looking two ahead. A waiter watches the key just ahead, the one before that, and its own key,
   * in one watch (so etcd orders their events):
   * - its own key deleted: the session expired, the wait fails;
   * - the key two ahead deleted (usually: the holder left, the key just ahead now holds): re-read the queue, off the
   *   critical path, and normally learn it is next;
   * - the key just ahead deleted while it was the only one ahead: the lock is ours at that revision, with no read on
   *   the handoff path. Keys ahead only ever go away, and our own key's delete, had it come first, would have been
   *   delivered first.
   * A handoff wakes the next two waiters, not the whole queue (the herd effect). Resolves to the revision at which the
   * lock was ours (told to `held` at that moment) and the watch, still open, which covers our key and has delivered
   * everything up to that revision: the hold's guard goes on with it.
   */
  private async waitForTurn(
    ticket: Ticket,
    signal: AbortSignal | undefined,
    position: (ahead: number) => void,
    held: (revision: number) => void,
  ): Promise<{ revision: number; watch: QueueWatch | undefined }> {
    const conn = this.session.conn;
    const own = conn.toEtcd(this.key);
    let ahead = ticket.ahead;
    // The first watch starts at our own PUT (and skips it): protobufjs generates a message type's decoder on first
    // use, 9-87 ms in a fresh process, and this way the DELETE that hands the lock over decodes warm.
    let from = ticket.created ? ticket.revision : ticket.revision + 1;
    let watch: QueueWatch | undefined;
    const ours = (revision: number) => {
      this.throwIfLost();
      // Our own key's DELETE can already be here, at a later revision of the same response (a watch catching up
      // delivers many revisions at once) or while the queue was read: the lock was ours and is not any more, and
      // `held` would let a command run while the next waiter holds.
      if (watch?.ownKeyDeleted) throw sessionExpired(this.session.leaseId);
      held(revision);
      const kept = watch;
      watch = undefined; // not disposed below: the hold's guard takes it over
      return { revision, watch: kept };
    };
    try {
      for (;;) {
        this.throwIfLost();
        const watched = ahead.slice(-2);
        if (!watch?.covers(watched)) {
          watch?.dispose();
          watch = new QueueWatch(conn, watched, own, from);
        }
        const woke = await watch.next(watched, signal, this.session.onDidLose, () => sessionExpired(this.session.leaseId));
        if (woke.kind === 'deleted' && ahead.length === 1) return ours(woke.revision);
        if (woke.kind === 'broken') {
          watch.dispose();
          watch = undefined;
          await new Promise((r) => setTimeout(r, 200));
        }
        throwIfAborted(signal);
        // The read must see at least what woke us: a member still behind that delete would show the key ahead again,
        // and its delete has already been consumed from the watch, so we would wait for it forever.
        const read = await this.readQueue(ticket.createRevision, woke.kind === 'deleted' ? woke.revision : 0);
        this.throwIfLost();
        if (!read.queued) throw sessionExpired(this.session.leaseId);
        ahead = read.ahead;
        if (ahead.length === 0) return ours(read.revision);
        position(ahead.length);
        from = read.revision + 1;
      }
    } finally {
      watch?.dispose();
    }
  }

  /**
   * The keys queued before us, and whether our own key is still there, read serializably. A linearizable read waits
   * for every write in flight, and at a handoff there always is one (the old holder's lease revoke): measured, 8 ms.
   * Serializable is safe here: keys ahead of us can only go away (new keys get higher create revisions), so a read at
   * any revision at or after our key's creation that shows nobody ahead proves nobody ever will be. A member that lags
   * behind our key's creation, or behind `atLeast` (the delete that woke us), gets the linearizable read instead.
   */
  private async readQueue(createRevision: number, atLeast = 0): Promise<{ ahead: Buffer[]; queued: boolean; revision: number }> {
    const conn = this.session.conn;
    const read = (serializable: boolean) =>
      call(conn.client.kv.range({ ...prefixRange(conn.toEtcd(this.prefix)), keys_only: true, max_create_revision: createRevision, serializable }));
    let res = await read(true);
    if (Number(res.header.revision) < Math.max(createRevision, atLeast)) res = await read(false);
    const own = conn.toEtcd(this.key);
    return {
      ahead: keysAhead(res.kvs, createRevision),
      queued: res.kvs.some((kv) => Number(kv.create_revision) === createRevision && own.equals(kv.key)),
      revision: Number(res.header.revision),
    };
  }

  private hold(ticket: Ticket, revision: number, queueWatch?: QueueWatch): Hold {
    try {
      this.throwIfLost();
    } catch (e) {
      queueWatch?.dispose();
      throw e;
    }
    this.warmHandoff(ticket.createRevision);
    // From revision + 1: at `revision` our key is known to exist (our own put, the read that found nobody ahead, or
    // the delete that woke us, whose revision was scanned for our own delete), and a watch that starts in the present
    // is delivered at once, where one starting in the past waits for etcd's catch-up loop. A waiter's queue watch
    // has delivered everything up to `revision` and goes on from there.
    const guard = new OwnKeyGuard(this.session.conn, this.key, ticket.createRevision, revision + 1, queueWatch);
    return new Hold(this, ticket.createRevision, revision, guard);
  }

  private throwIfLost(): void {
    if (this.session.lost) throw this.session.lost;
  }

  /**
   * Deletes a waiter's key when it gives up, before the caller hears of it, as Go does. If etcd cannot be reached the
   * key would stay queued for as long as the lease lives (for a long-lived session, a phantom waiter and later a
   * phantom holder), so keep trying in the background until it is gone or the session is closed; a new acquisition of
   * the same key on this session waits for that first (it would share the key, and its create revision).
   */
  private async leaveQueue(createRevision: number): Promise<void> {
    if (await this.deleteOwnKey(createRevision).then(() => true, () => false)) return;
    const id = keyId(this.key);
    const pending = leaving.get(this.session) ?? new Map<string, Promise<void>>();
    leaving.set(this.session, pending);
    const gone = new Promise<void>((resolve) => {
      const retry = (delay: number): void => {
        if (this.session.closed) return resolve();
        setTimeout(() => {
          this.deleteOwnKey(createRevision).then(() => resolve(), () => retry(Math.min(delay * 2, 5000)));
        }, delay).unref();
      };
      retry(200);
    }).finally(() => pending.delete(id));
    pending.set(id, gone);
  }

  /**
   * Once per process, while the caller waits or works anyway, runs the two calls a handoff can depend on: the release
   * (with a token that matches nothing: the key exists, so nothing is deleted) and the queue read. In a fresh process
   * the first call of each costs 5-13 ms (protobufjs generates its encoders and decoders, V8 runs gRPC's call path
   * cold); a short-lived process such as the CLI would pay that on the next holder's critical path.
   */
  private warmHandoff(createRevision: number): void {
    if (handoffWarmed) return;
    handoffWarmed = true;
    void this.deleteOwnKey(0).catch(() => undefined);
    void this.readQueue(createRevision).catch(() => undefined);
  }

  deleteOwnKey(createRevision: number): Promise<boolean> {
    return deleteIfCreatedAt(this.session, this.key, createRevision);
  }
}

/** Owner-only delete: only the key created at that revision, never a newer one of the same name. */
export async function deleteIfCreatedAt(session: Session, userKey: Buffer, createRevision: number): Promise<boolean> {
  const key = session.conn.toEtcd(userKey);
  const res = await call(
    session.conn.client.kv.txn({
      compare: [{ key, target: 'Create', result: 'Equal', create_revision: createRevision }],
      success: [{ request_delete_range: { key } }],
      failure: [],
    }),
  );
  return res.succeeded;
}

/** The key a hold is: a Mutex's queue key, or a single-key lock's key (singleKey.ts). */
export interface HeldKey {
  readonly key: Buffer;
  readonly session: Session;
  /** See deleteIfCreatedAt. */
  deleteOwnKey(createRevision: number): Promise<boolean>;
}

/** Per session, the lock keys (by keyId) it is still trying to delete after a waiter gave up (see Mutex.leaveQueue). */
const leaving = new WeakMap<Session, Map<string, Promise<void>>>();

/** Whether this process has run the handoff's calls once (see Mutex.warmHandoff). */
let handoffWarmed = false;

function sessionExpired(leaseId: string): LockLensError {
  return new LockLensError('LOCK_LOST', `session expired: lease ${leaseId} is gone and its key with it`);
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
    readonly mutex: HeldKey,
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

  /**
   * For a release that does not go through `release` (ending the session's lease deletes the key): from now on
   * nothing is reported as a loss, and nothing is sent to etcd; `dispose` closes the guard's watch afterwards.
   */
  releasing(): void {
    this.released = true;
    this.guard.silence();
    this.listeners.forEach((l) => l.dispose());
  }

  private lose(reason: LockLensError): void {
    if (this.lostReason || this.released) return;
    this.lostReason = reason;
    this.dispose();
    this.lostEmitter.fire(reason);
  }
}

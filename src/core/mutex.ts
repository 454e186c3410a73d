import type { IKeyValue } from 'etcd3';
import { call } from './connection';
import { Emitter, type Disposable } from './emitter';
import { LockLensError, abortError, throwIfAborted } from './errors';
import { displayKey, keyId, leaseDecimal, prefixRange } from './keys';
import type { Session } from './session';
import { WatchStream, type WatchEnd } from './watchStream';

export interface AcquireOptions {
  /** Abort to stop waiting: the waiter's key is deleted, as Go's Mutex does when its context ends. */
  readonly signal?: AbortSignal;
  /** Told how many keys are ahead (the holder included), at once and whenever it changes. */
  readonly onQueue?: (ahead: number) => void;
}

/** A queued waiter: its key's create revision and the keys created before it that still exist. */
interface Ticket {
  readonly createRevision: number;
  /** keyId → key, of every key under the prefix with a lower create revision. */
  readonly ahead: Map<string, Buffer>;
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
 * Like Go, it takes its place with one transaction (put the key if it does not exist, and list the prefix in the
 * same revision). Unlike Go, which waits for the delete of its immediate predecessor and then re-reads, it watches
 * the prefix's deletes from that revision on and counts the keys ahead down to zero: the same order and the same
 * guarantee, one round trip less per handoff, and the queue position comes for free. Its own key's delete in that
 * stream means the session expired.
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
    if (ticket.ahead.size === 0) return this.hold(ticket.createRevision, ticket.revision);
    if (ticket.created) await this.deleteOwnKey(ticket.createRevision);
    const holder = [...ticket.ahead.values()][0];
    throw new LockLensError('LOCKED', `'${displayKey(this.prefix.subarray(0, -1))}' is held by ${displayKey(holder)}`);
  }

  /** Waits in the queue until this session holds the lock. */
  async acquire(options: AcquireOptions = {}): Promise<Hold> {
    throwIfAborted(options.signal);
    const ticket = await this.enqueue();
    options.onQueue?.(ticket.ahead.size);
    if (ticket.ahead.size === 0) return this.hold(ticket.createRevision, ticket.revision);
    try {
      const heldAt = await this.waitForTurn(ticket, options);
      return this.hold(ticket.createRevision, heldAt);
    } catch (e) {
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

  private async waitForTurn(ticket: Ticket, options: AcquireOptions): Promise<number> {
    const conn = this.session.conn;
    const queue = prefixRange(conn.toEtcd(this.prefix));
    const ownId = keyId(conn.toEtcd(this.key));
    let from = ticket.revision + 1;
    for (;;) {
      const outcome = await new Promise<{ kind: 'turn'; revision: number } | { kind: 'stopped'; error: LockLensError } | { kind: 'ended'; end: WatchEnd }>(
        (resolve) => {
          const cleanups: Disposable[] = [];
          const settle = (o: Parameters<typeof resolve>[0]) => {
            cleanups.forEach((c) => c.dispose());
            resolve(o);
          };
          const onAbort = () => settle({ kind: 'stopped', error: abortError(options.signal!) });
          options.signal?.addEventListener('abort', onAbort, { once: true });
          cleanups.push({ dispose: () => options.signal?.removeEventListener('abort', onAbort) });
          cleanups.push(this.session.onDidLose((error) => settle({ kind: 'stopped', error })));
          WatchStream.open(conn, { key: queue.key, rangeEnd: queue.range_end, startRevision: from, noPut: true }, {
            onEvents: (events) => {
              let moved = false;
              for (const ev of events) {
                const id = keyId(ev.kv.key);
                if (id === ownId) return settle({ kind: 'stopped', error: sessionExpired(this.session.leaseId) });
                moved = ticket.ahead.delete(id) || moved;
                from = Number(ev.kv.mod_revision) + 1;
                if (ticket.ahead.size === 0) return settle({ kind: 'turn', revision: Number(ev.kv.mod_revision) });
              }
              if (moved) options.onQueue?.(ticket.ahead.size);
            },
          }).then(
            (watch) => {
              cleanups.push({ dispose: () => watch.close() });
              void watch.ended.then((end) => settle({ kind: 'ended', end }));
            },
            (error: LockLensError) => settle({ kind: 'ended', end: { kind: 'failed', error } }),
          );
        },
      );
      if (outcome.kind === 'turn') return outcome.revision;
      if (outcome.kind === 'stopped') throw outcome.error;
      if (outcome.end.kind === 'closed') continue;
      // The watch broke or fell behind compaction: re-read who is still ahead, then watch again from there.
      if (outcome.end.kind === 'failed') await new Promise((r) => setTimeout(r, 200));
      throwIfAborted(options.signal);
      const res = await call(conn.client.kv.range({ ...queue, keys_only: true }));
      if (!res.kvs.some((kv) => keyId(kv.key) === ownId)) throw sessionExpired(this.session.leaseId);
      const still = keysAhead(res.kvs, ticket.createRevision);
      for (const id of ticket.ahead.keys()) if (!still.has(id)) ticket.ahead.delete(id);
      if (ticket.ahead.size === 0) return Number(res.header.revision);
      options.onQueue?.(ticket.ahead.size);
      from = Number(res.header.revision) + 1;
    }
  }

  private hold(createRevision: number, revision: number): Hold {
    return new Hold(this, createRevision, revision);
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

function keysAhead(kvs: IKeyValue[], createRevision: number): Map<string, Buffer> {
  const ahead = kvs.filter((kv) => Number(kv.create_revision) < createRevision);
  ahead.sort((a, b) => Number(a.create_revision) - Number(b.create_revision));
  return new Map(ahead.map((kv) => [keyId(kv.key), kv.key]));
}

function sessionExpired(leaseId: string): LockLensError {
  return new LockLensError('LOCK_LOST', `session expired: lease ${leaseId} is gone and its key with it`);
}

/**
 * A held lock. It watches its own key and the session, and fires `onDidLose` the moment the key is deleted by anyone
 * else (a revoke, an expiry) or the lease can no longer be trusted: a holder is never silently assumed.
 */
export class Hold implements Disposable {
  private readonly lostEmitter = new Emitter<LockLensError>();
  readonly onDidLose = this.lostEmitter.event;
  private lostReason?: LockLensError;
  private released = false;
  private guard?: WatchStream;
  private readonly sessionListener: Disposable;
  readonly acquiredAt = Date.now();

  constructor(
    readonly mutex: Mutex,
    /** The fencing token: the key's create revision. Resources should reject writes carrying an older one. */
    readonly fencingToken: number,
    /** The revision at which this session became the holder. */
    readonly revision: number,
  ) {
    this.sessionListener = mutex.session.onDidLose((e) => this.lose(e));
    void this.watchOwnKey(revision + 1);
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
    this.dispose();
    return this.mutex.deleteOwnKey(this.fencingToken);
  }

  dispose(): void {
    this.guard?.close();
    this.sessionListener.dispose();
  }

  private async watchOwnKey(from: number): Promise<void> {
    const conn = this.mutex.session.conn;
    const key = conn.toEtcd(this.mutex.key);
    while (!this.released && !this.lostReason) {
      try {
        this.guard = await WatchStream.open(conn, { key, startRevision: from, noPut: true }, {
          onEvents: (events) => this.lose(new LockLensError('LOCK_LOST', `lock key ${displayKey(this.mutex.key)} was deleted at revision ${events[0].kv.mod_revision} (lease revoked or expired)`)),
        });
        if (this.released) return this.guard.close();
        const end = await this.guard.ended;
        if (end.kind === 'closed') return;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
      // Re-check the key before watching again: if it is gone, or is no longer ours, the lock is lost.
      try {
        const res = await call(conn.client.kv.range({ key }));
        if (Number(res.kvs[0]?.create_revision ?? 0) !== this.fencingToken) {
          this.lose(new LockLensError('LOCK_LOST', `lock key ${displayKey(this.mutex.key)} is gone`));
          return;
        }
        from = Number(res.header.revision) + 1;
      } catch {
        // etcd unreachable: the session's keepalive deadline decides when the lock counts as lost.
      }
    }
  }

  private lose(reason: LockLensError): void {
    if (this.lostReason || this.released) return;
    this.lostReason = reason;
    this.dispose();
    this.lostEmitter.fire(reason);
  }
}

/**
 * A lock that is one key held while it exists, as python-etcd3's Lock (`/locks/<name>`) and npm etcd3's Lock write it:
 * put the key with our lease only if it was never created (create revision 0), else wait for its delete and try again.
 * There is no queue: like those clients, a waiter may be overtaken by another that tries first. The key's create
 * revision is the fencing token, as for a Mutex key.
 */
import { hostname } from 'node:os';
import { call } from './connect';
import { LockLensError, abortError, throwIfAborted } from '../errors';
import { displayKey, leaseDecimal } from '../keys';
import type { QueuePosition } from '../backend';
import { Hold, deleteIfCreatedAt, type HeldPosition } from './mutex';
import { OwnKeyGuard } from './ownKeyGuard';
import type { Session } from './session';
import { WatchStream } from './watchStream';

export class SingleKeyLock {
  readonly key: Buffer;

  constructor(
    readonly session: Session,
    name: Uint8Array,
  ) {
    this.key = Buffer.from(name);
  }

  /** As Mutex.acquire's options; a waiter has no fencing token until it holds (null), nor a place in any queue. */
  async acquire(options: { readonly signal?: AbortSignal; readonly tryOnly?: boolean; readonly onQueue?: (p: QueuePosition) => void; readonly onHeld?: (p: HeldPosition) => void } = {}): Promise<Hold> {
    const conn = this.session.conn;
    const key = conn.toEtcd(this.key);
    // What the other clients put there is their own token; ours says who holds it, for whoever lists it.
    const value = Buffer.from(`LockLens ${hostname()} pid ${process.pid}`);
    let waiting = false;
    for (;;) {
      throwIfAborted(options.signal);
      if (this.session.lost) throw this.session.lost;
      const res = await call(
        conn.client.kv.txn({
          compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
          success: [{ request_put: { key, value, lease: leaseDecimal(this.session.leaseId) } }],
          failure: [{ request_range: { key } }],
        }),
      );
      const revision = Number(res.header.revision);
      if (res.succeeded) {
        if (options.signal?.aborted) {
          await this.deleteOwnKey(revision).catch(() => undefined);
          throw abortError(options.signal);
        }
        options.onHeld?.({ key: this.key, ahead: 0, fencingToken: revision, revision });
        return new Hold(this, revision, revision, new OwnKeyGuard(conn, this.key, revision, revision + 1));
      }
      const holder = res.responses[0].response_range.kvs[0];
      if (options.tryOnly) {
        throw new LockLensError('LOCKED', `'${displayKey(this.key)}' is held${holder?.lease && holder.lease !== '0' ? ` by lease ${BigInt(holder.lease).toString(16)}` : ''}`);
      }
      if (!waiting) options.onQueue?.({ key: this.key, ahead: 1, fencingToken: null });
      waiting = true;
      // A delete after the revision we found it at frees it; if it went in between, the watch delivers that delete.
      await deleted(this, key, revision + 1, options.signal);
    }
  }

  deleteOwnKey(createRevision: number): Promise<boolean> {
    return deleteIfCreatedAt(this.session, this.key, createRevision);
  }
}

/** Resolves at the key's first delete from `startRevision` on, at our session's loss, or at a broken watch (to look again). */
async function deleted(lock: SingleKeyLock, key: Buffer, startRevision: number, signal: AbortSignal | undefined): Promise<void> {
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => (wake = resolve));
  const watch = await WatchStream.open(lock.session.conn, { key, startRevision, noPut: true }, { onEvents: () => wake() });
  const lost = lock.session.onDidLose(() => wake());
  const onAbort = () => wake();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await Promise.race([woken, watch.ended]);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    lost.dispose();
    watch.close();
  }
}

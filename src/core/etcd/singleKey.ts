import { call, type EtcdConnection } from './connect';
import { LockLensError, abortError, throwIfAborted } from '../errors';
import { displayKey, leaseDecimal, leaseHex } from '../keys';
import { placeKey } from './conventions';
import { toKeyRecord } from './records';
import type { QueuePosition } from '../backend';
import { deleteKeyCreatedAt, Hold, type HeldPosition } from './mutex';
import { OwnKeyGuard } from './ownKeyGuard';
import type { Session } from './session';
import { WatchStream } from './watchStream';

export interface SingleKeyAcquireOptions {
  readonly signal?: AbortSignal;
  readonly tryOnly?: boolean;
  /** Told each time the key is found held, before waiting for it to go. */
  readonly onWait?: (position: QueuePosition) => void;
  /** As Mutex's `onHeld`: the moment the key is ours, before `acquire` resolves. */
  readonly onHeld?: (position: HeldPosition) => void;
}

/**
 * A lock that is one key, held while it exists, as npm `etcd3`'s `Lock` (`<name>`) and python-etcd3's `Lock`
 * (`/locks/<name>`) write it: put with a lease if the key was never created (`Create == 0`), else wait for it to go.
 * These clients keep no queue, so neither does this: a waiter watches the key and tries again when it is deleted, and
 * whoever's put lands first holds. The fencing token is the key's create revision, as for a Mutex.
 */
export class SingleKeyLock {
  readonly key: Buffer;

  constructor(
    readonly session: Session,
    name: Uint8Array,
  ) {
    if (name.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'a lock name cannot be empty');
    this.key = Buffer.from(name);
  }

  /** Takes the key when it is free; `tryOnly` throws LOCKED naming the holder's lease instead of waiting. */
  async acquire(options: SingleKeyAcquireOptions = {}): Promise<Hold> {
    for (;;) {
      throwIfAborted(options.signal);
      if (this.session.lost) throw this.session.lost;
      const attempt = await this.tryPut();
      if (attempt.created) {
        options.onHeld?.({ key: this.key, ahead: 0, fencingToken: attempt.revision, revision: attempt.revision });
        const guard = new OwnKeyGuard(this.session.conn, this.key, attempt.revision, attempt.revision + 1);
        return new Hold(this, attempt.revision, attempt.revision, guard);
      }
      if (options.tryOnly) {
        const owner = attempt.holderLease ? `lease ${attempt.holderLease}` : 'a key without a lease';
        throw new LockLensError('LOCKED', `'${displayKey(this.key)}' is held by ${owner}`);
      }
      // No queue: one ahead (the holder), and the token is the create revision of a put not made yet.
      options.onWait?.({ key: this.key, ahead: 1, fencingToken: null });
      await this.deleted(attempt.revision + 1, options.signal);
    }
  }

  deleteOwnKey(createRevision: number): Promise<boolean> {
    return deleteKeyCreatedAt(this.session.conn, this.key, createRevision);
  }

  /** One transaction: the key with our lease if it was never created, else the holder's lease. */
  private async tryPut(): Promise<{ created: boolean; revision: number; holderLease?: string }> {
    const conn = this.session.conn;
    const key = conn.toEtcd(this.key);
    const res = await call(
      conn.client.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key, value: Buffer.alloc(0), lease: leaseDecimal(this.session.leaseId) } }],
        failure: [{ request_range: { key, keys_only: true } }],
      }),
    );
    const revision = Number(res.header.revision);
    if (res.succeeded) return { created: true, revision };
    const lease = leaseHex(res.responses[0].response_range.kvs[0]?.lease ?? '0');
    return { created: false, revision, holderLease: lease || undefined };
  }

  /** Resolves at the key's next delete from `from` on (a broken watch just tries again); rejects on abort or loss. */
  private deleted(from: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      let watch: WatchStream | undefined;
      let settled = false;
      const settle = (finish: () => void) => {
        if (settled) return;
        settled = true;
        watch?.close();
        signal?.removeEventListener('abort', onAbort);
        lost.dispose();
        finish();
      };
      const onAbort = () => settle(() => reject(abortError(signal!)));
      signal?.addEventListener('abort', onAbort, { once: true });
      const lost = this.session.onDidLose((e) => settle(() => reject(e)));
      WatchStream.open(this.session.conn, { key: this.session.conn.toEtcd(this.key), startRevision: from, noPut: true }, {
        onEvents: (events) => events.some((e) => e.type === 'Delete') && settle(resolve),
      }).then(
        (stream) => {
          if (settled) return stream.close();
          watch = stream;
          void stream.ended.then(() => settle(resolve));
        },
        () => settle(resolve),
      );
    });
  }
}

/** Whether `name` is now a lock of one key (not a queue member, nor free): a name acquire takes in that layout. */
export async function isSingleKeyLock(conn: EtcdConnection, name: Uint8Array): Promise<boolean> {
  const res = await call(conn.client.kv.range({ key: conn.toEtcd(name) }));
  const kv = res.kvs[0];
  return kv !== undefined && placeKey(toKeyRecord(kv, conn.namespace.length)).convention === 'single-key';
}

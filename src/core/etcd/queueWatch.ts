import type { IEvent } from 'etcd3';
import type { EtcdConnection } from './connect';
import type { Disposable } from '../emitter';
import { LockLensError, abortError } from '../errors';
import { WatchStream } from './watchStream';

export type Wake = { readonly kind: 'deleted'; readonly revision: number } | { readonly kind: 'broken' };

/**
 * One watch over the key range spanning a waiter's own key and the keys it waits on, kept open while the waiter
 * re-reads the queue, with every DELETE buffered in revision order. Reopening a watch from an older revision would
 * make etcd replay it through its unsynced-watcher loop, which runs every 100 ms: measured, 60-110 ms handoffs.
 */
export class QueueWatch implements Disposable {
  private readonly deletes: { key: Buffer; revision: number }[] = [];
  private notify?: () => void;
  private broken = false;
  /** Set once the lock is ours and this watch guards our key (see `guard`). */
  private guarding?: { onDeleted(revision: number): void; onBroken(): void };
  private stream?: WatchStream;
  private closed = false;
  readonly rangeStart: Buffer;
  readonly rangeEnd: Buffer;

  constructor(
    conn: EtcdConnection,
    keys: readonly Buffer[],
    private readonly own: Buffer,
    from: number,
  ) {
    const span = [...keys, own].sort(Buffer.compare);
    this.rangeStart = span[0];
    this.rangeEnd = Buffer.concat([span[span.length - 1], Buffer.from([0])]);
    const onEvents = (events: IEvent[]) => {
      for (const ev of events) if (ev.type === 'Delete') this.deletes.push({ key: ev.kv.key, revision: Number(ev.kv.mod_revision) });
      if (this.guarding) this.checkOwnKey();
      else this.notify?.();
    };
    WatchStream.open(conn, { key: this.rangeStart, rangeEnd: this.rangeEnd, startRevision: from }, { onEvents }).then(
      (stream) => {
        if (this.closed) return stream.close();
        this.stream = stream;
        void stream.ended.then(() => this.fail());
      },
      () => this.fail(),
    );
  }

  /** Whether this watch sees every one of `keys`. */
  covers(keys: readonly Buffer[]): boolean {
    return keys.every((k) => Buffer.compare(k, this.rangeStart) >= 0 && Buffer.compare(k, this.rangeEnd) < 0);
  }

  /**
   * The first DELETE of one of `keys` (other keys in the range are skipped), or `broken`. Rejects when our own key is
   * deleted first, when `stop` fires (the session is lost) or the caller aborts.
   */
  next(keys: readonly Buffer[], signal: AbortSignal | undefined, stop: (listener: (e: LockLensError) => void) => Disposable, expired: () => LockLensError): Promise<Wake> {
    // An abort that came while the caller was reading (not waiting here) must still end the wait.
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise((resolve, reject) => {
      const cleanups: Disposable[] = [];
      const settle = (finish: () => void) => {
        this.notify = undefined;
        cleanups.forEach((c) => c.dispose());
        finish();
      };
      const check = () => {
        while (this.deletes.length) {
          const d = this.deletes.shift()!;
          if (this.own.equals(d.key)) return settle(() => reject(expired()));
          if (keys.some((k) => k.equals(d.key))) {
            // One transaction (`etcdctl del --prefix`, a revoke of a lease holding both) can delete the key ahead and
            // ours in the same revision, ours listed after it: then we are not next, we are gone. A revision's events
            // are all in the response that carries the first of them (etcd cuts watch batches only between
            // revisions, and fragments only when asked to), so they are all buffered by now.
            if (this.deletes.some((o) => o.revision === d.revision && this.own.equals(o.key))) return settle(() => reject(expired()));
            return settle(() => resolve({ kind: 'deleted', revision: d.revision }));
          }
        }
        if (this.broken) settle(() => resolve({ kind: 'broken' }));
      };
      const onAbort = () => settle(() => reject(abortError(signal!)));
      signal?.addEventListener('abort', onAbort, { once: true });
      cleanups.push({ dispose: () => signal?.removeEventListener('abort', onAbort) });
      cleanups.push(stop((e) => settle(() => reject(e))));
      this.notify = check;
      check();
    });
  }

  /** Whether a DELETE of our own key has been delivered and not consumed yet. */
  get ownKeyDeleted(): boolean {
    return this.deletes.some((d) => this.own.equals(d.key));
  }

  /**
   * Once the lock is ours, keeps this watch open as the holder's guard instead of opening another: calls `onDeleted`
   * when our own key is deleted (already buffered, or later), `onBroken` if the watch fails first; other keys' events
   * are dropped. Opening a watch is a call to etcd and work for both processes, which right after a handoff would
   * compete with the command the holder has just let run; this watch has covered our key since before the handoff.
   */
  guard(onDeleted: (revision: number) => void, onBroken: () => void): void {
    this.notify = undefined;
    this.guarding = { onDeleted, onBroken };
    this.checkOwnKey();
  }

  dispose(): void {
    this.closed = true;
    this.guarding = undefined;
    this.stream?.close();
  }

  private checkOwnKey(): void {
    const gone = this.deletes.find((d) => this.own.equals(d.key));
    this.deletes.length = 0;
    if (gone) this.guarding?.onDeleted(gone.revision);
    else if (this.broken) this.guarding?.onBroken();
  }

  private fail(): void {
    if (this.closed) return;
    this.broken = true;
    if (this.guarding) this.checkOwnKey();
    else this.notify?.();
  }
}

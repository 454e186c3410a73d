import type { IEvent, IWatchResponse } from 'etcd3';
import { asLockLensError, withDeadline, type EtcdConnection } from './connect';
import { LockLensError } from '../errors';

/** Why a watch stopped. `compacted`: the start revision is gone, the caller must re-read and start again. */
export type WatchEnd =
  | { readonly kind: 'compacted'; readonly compactRevision: number }
  | { readonly kind: 'failed'; readonly error: LockLensError }
  | { readonly kind: 'closed' };

export interface WatchRequest {
  readonly key: Buffer;
  readonly rangeEnd?: Buffer;
  readonly startRevision: number;
  readonly noPut?: boolean;
}

export interface WatchCallbacks {
  /** Events of one response, in revision order; `revision` is the response header's. */
  onEvents(events: IEvent[], revision: number): void;
  /** A progress notification: every event up to `revision` has been delivered. */
  onProgress?(revision: number): void;
}

/**
 * One etcd watch on its own gRPC stream, with nothing hidden: it reports compaction and failure instead of resuming
 * on its own, because the etcd3 client's automatic resume restarts from the last header revision and can skip events.
 * Callers own recovery (re-read, then watch from that revision + 1).
 */
export class WatchStream {
  private end?: WatchEnd;
  /** The store's revision when etcd created the watch. A watch that started at or before it replays history first. */
  createdRevision = 0;
  private readonly finished: Promise<WatchEnd>;
  private finish!: (end: WatchEnd) => void;

  private constructor(private readonly stream: { write(m: unknown): void; end(): void; cancel?(): void }) {
    this.finished = new Promise((resolve) => (this.finish = resolve));
  }

  /** Resolves once etcd confirmed the watch; rejects with the reason it could not start, within the call timeout. */
  static async open(conn: EtcdConnection, request: WatchRequest, callbacks: WatchCallbacks): Promise<WatchStream> {
    const raw = await conn.client.watchClient.watch().catch((e: unknown) => {
      throw asLockLensError(e);
    });
    const watch = new WatchStream(raw as never);
    const created = new Promise<void>((resolve, reject) => {
      raw.on('data', (res: IWatchResponse) => {
        if (res.created) {
          watch.createdRevision = Number(res.header.revision);
          resolve();
        }
        if (res.canceled) {
          const compacted = Number(res.compact_revision);
          const end: WatchEnd = compacted > 0
            ? { kind: 'compacted', compactRevision: compacted }
            : { kind: 'failed', error: new LockLensError('ETCD', `watch canceled: ${res.cancel_reason || 'no reason given'}`) };
          watch.stop(end);
          resolve(); // a compacted start is reported through `ended`, not as an open failure
          return;
        }
        const revision = Number(res.header.revision);
        if (res.events.length) callbacks.onEvents(res.events, revision);
        else if (!res.created) callbacks.onProgress?.(revision);
      });
      raw.on('error', (e: unknown) => {
        const error = asLockLensError(e);
        watch.stop({ kind: 'failed', error });
        reject(error);
      });
      raw.on('end', () => {
        const error = new LockLensError('UNREACHABLE', 'watch stream ended by the server');
        watch.stop({ kind: 'failed', error });
        reject(error);
      });
    });
    raw.write({
      create_request: {
        key: request.key,
        range_end: request.rangeEnd,
        start_revision: request.startRevision,
        filters: request.noPut ? ['Noput'] : [],
      },
    });
    try {
      await withDeadline(created, conn.callTimeoutMs);
    } catch (e) {
      watch.close();
      throw e;
    }
    return watch;
  }

  /** Resolves when the watch stops for any reason; never rejects. */
  get ended(): Promise<WatchEnd> {
    return this.finished;
  }

  /** Asks etcd to confirm the revision this watch has caught up to (answered through onProgress). */
  requestProgress(): void {
    if (!this.end) this.stream.write({ progress_request: {} });
  }

  close(): void {
    this.stop({ kind: 'closed' });
  }

  private stop(end: WatchEnd): void {
    if (this.end) return;
    this.end = end;
    try {
      this.stream.end();
      this.stream.cancel?.();
    } catch {
      // already torn down by gRPC
    }
    this.finish(end);
  }
}

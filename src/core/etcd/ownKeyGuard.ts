import { call, type EtcdConnection } from './connect';
import { Emitter, type Disposable } from '../emitter';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import type { QueueWatch } from './queueWatch';
import { sleep } from '../sleep';
import { WatchStream } from './watchStream';

/**
 * Watches a holder's own lock key and fires once if anybody else deletes it (a revoke, an expiry), or it can no longer
 * be found after a broken watch: a holder is never silently assumed.
 */
export class OwnKeyGuard implements Disposable {
  private readonly deleted = new Emitter<LockLensError>();
  readonly onDidDelete = this.deleted.event;
  private watch?: WatchStream;
  private adopted?: QueueWatch;
  private stopped = false;

  /**
   * `queueWatch`: the waiter's watch, which covers this key and has delivered every event up to the revision the lock
   * became ours at; it goes on as this guard's watch (see QueueWatch.guard). Without one, the guard watches from
   * `startRevision`.
   */
  constructor(
    private readonly conn: EtcdConnection,
    /** The key as the user names it (the connection adds its namespace). */
    private readonly key: Buffer,
    private readonly createRevision: number,
    startRevision: number,
    queueWatch?: QueueWatch,
  ) {
    if (queueWatch) {
      this.adopted = queueWatch;
      // Not in the constructor: the queue watch may already hold our key's DELETE, and `guard` reports it at once,
      // before the hold has subscribed to onDidDelete. Until then its events stay buffered.
      setImmediate(() => {
        if (this.stopped) return;
        queueWatch.guard(
          (revision) => this.fire(`lock key ${displayKey(this.key)} was deleted at revision ${revision} (lease revoked or expired)`),
          () => {
            // Broken: from here on, the guard's own watch, after a look at the key.
            queueWatch.dispose();
            this.adopted = undefined;
            if (!this.stopped) void this.run(startRevision, true);
          },
        );
      });
      return;
    }
    // After the caller's next step (a CLI lets its command run first); starting a moment later misses nothing.
    setImmediate(() => void this.run(startRevision));
  }

  /**
   * Stops reporting, at once and without a call to etcd: the owner is releasing, and its own delete is not a loss.
   * The watch stays open until `dispose`, which can come later, when closing it costs nobody anything.
   */
  silence(): void {
    this.stopped = true;
    this.deleted.dispose();
  }

  dispose(): void {
    this.stopped = true;
    this.watch?.close();
    this.adopted?.dispose();
    this.deleted.dispose();
  }

  private async run(from: number, broken = false): Promise<void> {
    const etcdKey = this.conn.toEtcd(this.key);
    let backoff = 100;
    while (!this.stopped) {
      if (broken) {
        broken = false;
        // The watch broke: look at the key before watching again. Gone, or re-created by someone else: lost.
        try {
          const res = await call(this.conn.client.kv.range({ key: etcdKey, keys_only: true }));
          if (Number(res.kvs[0]?.create_revision ?? 0) !== this.createRevision) return this.fire(`lock key ${displayKey(this.key)} is gone`);
          from = Number(res.header.revision) + 1;
        } catch {
          // etcd unreachable: the session's keepalive deadline decides when the lock counts as lost.
          await sleep(backoff, undefined, { unref: true });
          backoff = Math.min(backoff * 2, 5000);
          broken = true;
          continue;
        }
      }
      try {
        this.watch = await WatchStream.open(this.conn, { key: etcdKey, startRevision: from }, {
          onEvents: (events) => {
            const gone = events.find((e) => e.type === 'Delete');
            if (gone) this.fire(`lock key ${displayKey(this.key)} was deleted at revision ${gone.kv.mod_revision} (lease revoked or expired)`);
          },
        });
        if (this.stopped) return this.watch.close();
        backoff = 100;
        if ((await this.watch.ended).kind === 'closed') return;
      } catch {
        // fall through to the check below
      }
      await sleep(backoff, undefined, { unref: true });
      backoff = Math.min(backoff * 2, 5000);
      broken = true;
    }
  }

  private fire(message: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.watch?.close();
    this.adopted?.dispose();
    this.deleted.fire(new LockLensError('LOCK_LOST', message));
  }
}

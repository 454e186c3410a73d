import { call, type EtcdConnection } from './connection';
import { Emitter, type Disposable } from '../emitter';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import { WatchStream } from './watchStream';

/**
 * Watches a holder's own lock key and fires once if anybody else deletes it (a revoke, an expiry), or it can no longer
 * be found after a broken watch: a holder is never silently assumed.
 */
export class OwnKeyGuard implements Disposable {
  private readonly deleted = new Emitter<LockLensError>();
  readonly onDidDelete = this.deleted.event;
  private watch?: WatchStream;
  private stopped = false;

  constructor(
    private readonly conn: EtcdConnection,
    /** The key as the user names it (the connection adds its namespace). */
    private readonly key: Buffer,
    private readonly createRevision: number,
    startRevision: number,
  ) {
    // After the caller's next step (a CLI lets its command run first); starting a moment later misses nothing.
    setImmediate(() => void this.run(startRevision));
  }

  dispose(): void {
    this.stopped = true;
    this.watch?.close();
    this.deleted.dispose();
  }

  private async run(from: number): Promise<void> {
    const etcdKey = this.conn.toEtcd(this.key);
    let backoff = 100;
    while (!this.stopped) {
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
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 5000);
      // The watch broke: look at the key before watching again. Gone, or re-created by someone else: lost.
      try {
        const res = await call(this.conn.client.kv.range({ key: etcdKey, keys_only: true }));
        if (Number(res.kvs[0]?.create_revision ?? 0) !== this.createRevision) return this.fire(`lock key ${displayKey(this.key)} is gone`);
        from = Number(res.header.revision) + 1;
      } catch {
        // etcd unreachable: the session's keepalive deadline decides when the lock counts as lost.
      }
    }
  }

  private fire(message: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.watch?.close();
    this.deleted.fire(new LockLensError('LOCK_LOST', message));
  }
}

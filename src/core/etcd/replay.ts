import type { ReplayedHold } from '../history';
import { LockModel, lockId } from './lockModel';
import type { KeyRecord } from './records';

/** One event of etcd's history: a put (the key as it was written) or a delete (the key alone, as etcd reports it). */
export type KeyChange = { readonly put: KeyRecord } | { readonly delete: Buffer };

/** A hold while it is replayed: its end is learned later, from the revision its key went and then from its lease. */
export type ReplayHold = Omit<ReplayedHold, 'end'>;

/**
 * Rebuilds one lock's holds from etcd's history: the events of its range, fed revision by revision into the same
 * LockModel the live view uses, so a replayed holder is the one the live view would have shown (the lowest create
 * revision, which is also what a Go Mutex waits for). Pure: no etcd, so every interleaving can be unit-tested.
 */
export class HoldReplay {
  readonly lockId: string;
  private readonly model = new LockModel();
  private readonly done: ReplayHold[] = [];
  private current?: Mutable<ReplayHold>;
  private applied = 0;

  constructor(name: Uint8Array, single: boolean) {
    this.lockId = lockId(name, single ? 'single-key' : 'go-mutex');
  }

  /**
   * The keys present at `revision`, where the history read begins because compaction removed what came before: the
   * holder then already held, since a revision history no longer has.
   */
  begin(records: readonly KeyRecord[], revision: number): void {
    this.model.reload(() => true, records, revision);
    this.observe(revision, true);
  }

  /** Every event of one revision, together: a lease revoke deletes all of the lease's keys at one revision. */
  apply(revision: number, changes: readonly KeyChange[]): void {
    for (const c of changes) {
      if ('put' in c) this.model.put(c.put);
      else this.model.delete(c.delete, revision);
    }
    this.applied += changes.length;
    if (this.mayChangeHolder(changes)) this.observe(revision, false);
  }

  /** Events applied (the keys present at `begin` are not events). */
  get events(): number {
    return this.applied;
  }

  /** Oldest first; the last one is still holding when its `endedRevision` is null. */
  holds(): ReplayHold[] {
    return this.current ? [...this.done, { ...this.current }] : [...this.done];
  }

  /**
   * Whether the holder can have changed: only when its key changed, or a key that sorts before it came in (a new key
   * never does: its create revision is higher). Sorting a long queue at every revision would not be.
   */
  private mayChangeHolder(changes: readonly KeyChange[]): boolean {
    const current = this.current;
    if (!current) return true;
    return changes.some((c) => ('put' in c ? c.put.key.equals(current.key) || c.put.createRevision <= (current.token ?? Infinity) : c.delete.equals(current.key)));
  }

  private observe(revision: number, beforeHistory: boolean): void {
    const lock = this.model.lock(this.lockId);
    const holder = lock?.holder ?? null;
    const current = this.current;
    // Only the holder's key going ends a hold (a new key never sorts before it), or the key leaving the lock's layout.
    if (current && holder?.key.equals(current.key) && holder.createRevision === current.token) return;
    if (current) {
      current.endedRevision = revision;
      this.done.push(current);
      this.current = undefined;
    }
    if (!lock || !holder) return;
    this.current = {
      key: holder.key,
      lease: holder.lease,
      owner: holder.owner,
      token: holder.createRevision,
      acquiredRevision: revision,
      beforeHistory,
      endedRevision: null,
      waiters: lock.waiters.map((w) => w.key),
    };
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

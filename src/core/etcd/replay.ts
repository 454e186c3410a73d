import { REPLAY_WAITERS_KEPT, type ReplayedHold } from '../history';
import { keyId } from '../keys';
import { lockId } from './lockModel';
import type { KeyRecord } from './records';
import type { Mutable } from '../../shared/mutable';

/** One event of etcd's history: a put (the key as it was written) or a delete (the key alone, as etcd reports it). */
export type KeyChange = { readonly put: KeyRecord } | { readonly delete: Buffer };

/** A hold while it is replayed: its end is learned later, from the revision its key went and then from its lease. */
export type ReplayHold = Omit<ReplayedHold, 'end'>;

/**
 * Rebuilds one lock's holds from etcd's history, revision by revision. The holder at each revision is the one a Go
 * `concurrency.Mutex` would have chosen: the key with the lowest create revision among every key of the range
 * `name/` (Go's `getOwner` and `waitDeletes` read the whole prefix), so a nested lock's key (`name/sub/<lease>`) or any
 * other key under `name/` that came first holds it too, under its own key. The live model groups such keys into other
 * locks instead; the replay follows Go, because what it rebuilds is who Go let in. A single-key lock (`single`) is
 * held by its key `name` while that exists. Pure: no etcd, so every interleaving can be unit-tested.
 */
export class HoldReplay {
  readonly lockId: string;
  private readonly queue = new CreateOrder();
  private readonly done: ReplayHold[] = [];
  private current?: Mutable<ReplayHold>;
  private applied = 0;
  private readonly inRange: (key: Buffer) => boolean;

  constructor(name: Uint8Array, single: boolean) {
    this.lockId = lockId(name, single ? 'single-key' : 'go-mutex');
    const exact = Buffer.from(name);
    const prefix = Buffer.concat([exact, Buffer.from('/')]);
    // The read range gives nothing else; a caller feeding other keys must not change the holder.
    this.inRange = single ? (key) => key.equals(exact) : (key) => key.length >= prefix.length && prefix.equals(key.subarray(0, prefix.length));
  }

  /**
   * The keys present at `revision`, where the history read begins (compaction removed what came before, or the replay
   * chose to start there): the holder then already held, since a revision not read.
   */
  begin(records: readonly KeyRecord[], revision: number): void {
    for (const r of records) if (this.inRange(r.key)) this.queue.put(r);
    this.observe(revision, true);
  }

  /** Every event of one revision, together: a lease revoke deletes all of the lease's keys at one revision. */
  apply(revision: number, changes: readonly KeyChange[]): void {
    for (const c of changes) {
      if ('put' in c) {
        if (this.inRange(c.put.key)) this.queue.put(c.put);
      } else if (this.inRange(c.delete)) this.queue.delete(c.delete);
    }
    this.applied += changes.length;
    this.observe(revision, false);
  }

  /** Events applied (the keys present at `begin` are not events). */
  get events(): number {
    return this.applied;
  }

  /** Oldest first; the last one is still holding when its `endedRevision` is null. */
  holds(): ReplayHold[] {
    return this.current ? [...this.done, { ...this.current }] : [...this.done];
  }

  private observe(revision: number, beforeHistory: boolean): void {
    const holder = this.queue.first();
    const current = this.current;
    // A hold is its key's life: the same key re-created (a new create revision) is a new hold, a rewrite is not.
    if (current && holder?.key.equals(current.key) && holder.createRevision === current.token) return;
    if (current) {
      current.endedRevision = revision;
      this.done.push(current);
      this.current = undefined;
    }
    if (!holder) return;
    this.current = {
      key: holder.key,
      lease: holder.lease,
      // As a live member's: the lease, which Go and etcdctl name their keys by.
      owner: holder.lease,
      token: holder.createRevision,
      acquiredRevision: revision,
      beforeHistory,
      endedRevision: null,
      waiters: this.queue.waiters(REPLAY_WAITERS_KEPT),
      waiterCount: this.queue.size - 1,
    };
  }
}

interface Entry {
  record: KeyRecord;
  present: boolean;
}

/**
 * The keys present, in Go's queue order: create revision, then key bytes (one transaction's keys share a create
 * revision). A new key always has the highest create revision, so it is appended; a key going is marked and skipped,
 * and the marks are swept out once they outnumber the keys. Finding the holder is then O(1) amortized at every
 * revision, where sorting the queue at every handoff cost O(queue log queue) each.
 */
class CreateOrder {
  private entries: Entry[] = [];
  private head = 0;
  private gone = 0;
  private readonly byKey = new Map<string, Entry>();

  get size(): number {
    return this.byKey.size;
  }

  put(record: KeyRecord): void {
    const kid = keyId(record.key);
    const known = this.byKey.get(kid);
    if (known?.record.createRevision === record.createRevision) {
      known.record = record;
      return;
    }
    if (known) this.remove(kid, known);
    const entry: Entry = { record, present: true };
    const last = this.entries.at(-1);
    if (!last || compare(last.record, record) <= 0) this.entries.push(entry);
    else {
      const at = this.insertionPoint(record);
      this.entries.splice(at, 0, entry);
      // Everything before the head is gone: a key sorting among those is the new first.
      if (at <= this.head) this.head = at;
    }
    this.byKey.set(kid, entry);
  }

  delete(key: Buffer): void {
    const kid = keyId(key);
    const entry = this.byKey.get(kid);
    if (entry) this.remove(kid, entry);
  }

  first(): KeyRecord | undefined {
    while (this.head < this.entries.length && !this.entries[this.head].present) this.head++;
    return this.entries[this.head]?.record;
  }

  /** The keys after the first, in order, `max` at most. */
  waiters(max: number): Buffer[] {
    const keys: Buffer[] = [];
    this.first();
    for (let i = this.head + 1; i < this.entries.length && keys.length < max; i++) {
      if (this.entries[i].present) keys.push(this.entries[i].record.key);
    }
    return keys;
  }

  private remove(kid: string, entry: Entry): void {
    entry.present = false;
    this.byKey.delete(kid);
    if (++this.gone > 1024 && this.gone > this.byKey.size) {
      this.entries = this.entries.filter((e) => e.present);
      this.head = 0;
      this.gone = 0;
    }
  }

  /** A key older than the newest (only where the read begins, or a key re-created out of order): binary search. */
  private insertionPoint(record: KeyRecord): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(this.entries[mid].record, record) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

function compare(a: KeyRecord, b: KeyRecord): number {
  return a.createRevision - b.createRevision || Buffer.compare(a.key, b.key);
}

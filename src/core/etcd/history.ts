import { setImmediate as nextTurn } from 'node:timers/promises';
import { call, type EtcdConnection } from './connection';
import { LockLensError, throwIfAborted } from '../errors';
import { holdEnd, type HistoryOperations, type LockHistory, type ReplayOptions, type ReplayedHold } from '../history';
import { answersProgressWhenCaughtUp } from './historyPlan';
import { HistoryCompacted, readHistory, type RevisionChanges } from './historyRead';
import { prefixRange } from '../keys';
import { readRange, type EtcdRange, type PrefixRead } from './keyspace';
import { LeaseTracker } from './leases';
import { HoldReplay, type ReplayHold } from './replay';

/** Leases asked at once how they are, after a replay. */
const LEASE_QUERIES = 16;
/** Events replayed between two turns of the event loop: a few milliseconds' work, so views keep drawing. */
const EVENTS_PER_TURN = 2000;

/**
 * A lock's past from etcd's MVCC history: every event of its keys from revision 1 (or from where compaction cut it)
 * to the revision the replay began at, replayed into holds; then each ended hold's lease is asked how it ended.
 */
export class EtcdHistory implements HistoryOperations {
  constructor(private readonly conn: EtcdConnection) {}

  async replay(name: Uint8Array, options: ReplayOptions & { readonly single?: boolean } = {}): Promise<LockHistory> {
    const { signal, onProgress } = options;
    const single = options.single ?? false;
    const range = lockRange(this.conn, name, single);
    throwIfAborted(signal);
    const [now, status] = await Promise.all([
      call(this.conn.client.kv.range({ key: range.key, range_end: range.range_end, count_only: true })),
      call(this.conn.client.maintenance.status()),
    ]);
    const toRevision = Number(now.header.revision);
    const trustsProgress = answersProgressWhenCaughtUp(status.version);
    let base: PrefixRead | undefined;
    let revisions: RevisionChanges[];
    for (;;) {
      const from = base ? base.revision + 1 : 1;
      try {
        revisions = await readHistory(this.conn, range, from, toRevision, { signal, trustsProgress, onProgress: (r) => onProgress?.(r, toRevision) });
        break;
      } catch (e) {
        if (!(e instanceof HistoryCompacted)) throw e;
        if (e.revision > toRevision) {
          throw new LockLensError('ETCD', `etcd compacted its history at revision ${e.revision}, past revision ${toRevision} being replayed: replay again`);
        }
        // What compaction kept: the keys as they were at its revision. Their holder began before history.
        base = await readRange(this.conn, range, e.revision);
      }
    }
    const replay = new HoldReplay(name, single);
    if (base) replay.begin(base.records, base.revision);
    let sinceTurn = 0;
    for (const { revision, changes } of revisions) {
      replay.apply(revision, changes);
      sinceTurn += changes.length;
      if (sinceTurn >= EVENTS_PER_TURN) {
        sinceTurn = 0;
        await nextTurn();
        throwIfAborted(signal);
      }
    }
    const holds = await this.withEnds(replay.holds());
    throwIfAborted(signal);
    return {
      name: Buffer.from(name),
      lockId: replay.lockId,
      fromRevision: base?.revision ?? 1,
      toRevision,
      compactedAt: base?.revision ?? null,
      events: replay.events,
      holds,
    };
  }

  /** Each ended hold's end, from whether its lease still lives (`holdEnd`); a hold still holding has none. */
  private async withEnds(holds: readonly ReplayHold[]): Promise<ReplayedHold[]> {
    const leases = new LeaseTracker(this.conn, { concurrency: LEASE_QUERIES });
    await leases.sweep(new Set(holds.flatMap((h) => (h.endedRevision !== null && h.lease ? [h.lease] : []))));
    leases.dispose();
    return holds.map((h) => {
      const info = h.lease ? leases.get(h.lease) : undefined;
      return { ...h, end: h.endedRevision === null ? null : holdEnd(h.lease, info && info.state === 'alive') };
    });
  }
}

/** A queue's keys `name/…`, or the single key `name`, inside the connection's namespace. */
function lockRange(conn: EtcdConnection, name: Uint8Array, single: boolean): EtcdRange {
  return single ? { key: conn.toEtcd(name) } : prefixRange(conn.toEtcd(Buffer.concat([name, Buffer.from('/')])));
}

import { setImmediate as nextTurn } from 'node:timers/promises';
import { call, withDeadline, type EtcdConnection } from './connect';
import { abortError, errorMessage, LockLensError, throwIfAborted } from '../errors';
import {
  holdEnd,
  MAX_REPLAY_REVISIONS,
  type HistoryOperations,
  type HistorySpan,
  type LockHistory,
  type ReplayOptions,
  type ReplayedHold,
} from '../history';
import { answersProgressWhenCaughtUp } from './historyPlan';
import { HistoryCompacted, readHistory, type HistoryRead } from './historyRead';
import { prefixRange } from './keyRange';
import { readRange, type EtcdRange, type PrefixRead } from './keyspace';
import { leaseLives } from './leases';
import { HoldReplay, type ReplayHold } from './replay';
import { WatchStream } from './watchStream';
import { groupDigits } from '../../shared/groupDigits';

/** Leases asked at once how they are, after a replay. */
const LEASE_QUERIES = 16;
/** Replay work between two turns of the event loop: short enough that views keep drawing. */
const SLICE_MS = 8;

/**
 * A lock's past from etcd's MVCC history: every event of its keys from the oldest revision kept (or one the caller
 * chose) to the revision the replay began at, replayed into holds; then each ended hold's lease is asked how it ended.
 */
export class EtcdHistory implements HistoryOperations {
  constructor(private readonly conn: EtcdConnection) {}

  span(name: Uint8Array, options: { readonly single?: boolean } = {}): Promise<HistorySpan> {
    return spanOf(this.conn, lockRange(this.conn, name, options.single ?? false));
  }

  async replay(name: Uint8Array, options: ReplayOptions & { readonly single?: boolean } = {}): Promise<LockHistory> {
    const { signal, onProgress, fromRevision: chosen } = options;
    const single = options.single ?? false;
    const range = lockRange(this.conn, name, single);
    throwIfAborted(signal);
    const [span, status] = await Promise.all([spanOf(this.conn, range), call(this.conn.client.maintenance.status())]);
    throwIfAborted(signal);
    const toRevision = span.current;
    if (chosen !== undefined && !(Number.isInteger(chosen) && chosen >= 1 && chosen <= toRevision)) {
      throw new LockLensError('INVALID_ARGUMENT', `the revision to start at must be a whole number from 1 to ${toRevision} (etcd's revision now): ${chosen}`);
    }
    const limit = options.maxRevisions ?? MAX_REPLAY_REVISIONS;
    if (chosen === undefined && toRevision - span.oldest > limit) throw tooLarge(span, limit);
    const trustsProgress = answersProgressWhenCaughtUp(status.version);
    // `start` > 1: the keys present at `start` are read as they were and the events after it replayed.
    let start = Math.max(chosen ?? 1, span.oldest);
    let compactedAt = span.oldest > 1 && start === span.oldest ? span.oldest : null;
    let skippedBefore = chosen !== undefined && chosen > span.oldest ? chosen : null;
    let base: PrefixRead | undefined;
    let read: HistoryRead;
    for (;;) {
      try {
        base = start > 1 ? await readRange(this.conn, range, start) : undefined;
        read = await readHistory(this.conn, range, start + (base ? 1 : 0), toRevision, {
          signal,
          trustsProgress,
          onProgress: (r) => onProgress?.(r, toRevision),
        });
        break;
      } catch (e) {
        const compacted = await this.compactedPast(e, start, range);
        if (compacted > toRevision) {
          throw new LockLensError('ETCD', `etcd compacted its history at revision ${compacted}, past revision ${toRevision} being replayed: replay again`);
        }
        // Compaction while reading (the base read, or a watch started again): start over from where history now
        // begins. Events already read before it are dropped: with the keys read at `compacted`, they would be counted
        // twice, and the read after it must begin from that base anyway.
        start = compacted;
        compactedAt = compacted;
        skippedBefore = null;
      }
    }
    const replay = new HoldReplay(name, single);
    if (base) replay.begin(base.records, base.revision);
    let sliceStart = performance.now();
    for (const { revision, changes } of read.revisions) {
      replay.apply(revision, changes);
      // On elapsed time, not on events: one revision can hand over a long queue.
      if (performance.now() - sliceStart >= SLICE_MS) {
        await nextTurn();
        throwIfAborted(signal);
        sliceStart = performance.now();
      }
    }
    const holds = await this.withEnds(replay.holds(), options);
    return {
      name: Buffer.from(name),
      lockId: replay.lockId,
      fromRevision: start,
      toRevision,
      compactedAt,
      skippedBefore,
      endedOnSilence: read.endedOnSilence,
      events: replay.events,
      holds,
    };
  }

  /**
   * The revision history now begins at, when `e` says the read from `start` met compaction: a watch refused (it says
   * where), or the base read refused (etcd does not say: asked). Anything else is rethrown.
   */
  private async compactedPast(e: unknown, start: number, range: EtcdRange): Promise<number> {
    if (e instanceof HistoryCompacted) return e.revision;
    if (!isCompactedError(e)) throw e;
    const { oldest } = await spanOf(this.conn, range);
    if (oldest <= start) throw e;
    return oldest;
  }

  /**
   * Each ended hold's end, from whether its lease still lives (`holdEnd`); a hold still holding has none. One call per
   * lease (`etcdctl lock` takes one per run, so thousands after a busy cron), LEASE_QUERIES at a time, without the
   * lease's keys, told as it goes and stopped by the signal.
   */
  private async withEnds(holds: readonly ReplayHold[], options: ReplayOptions): Promise<ReplayedHold[]> {
    const { signal, onLeaseProgress } = options;
    const leases = [...new Set(holds.flatMap((h) => (h.endedRevision !== null && h.lease ? [h.lease] : [])))];
    const alive = new Map<string, boolean>();
    let next = 0;
    let asked = 0;
    onLeaseProgress?.(0, leases.length);
    const ask = async () => {
      while (next < leases.length) {
        throwIfAborted(signal);
        const id = leases[next++];
        // One that did not answer is left unknown.
        const lives = await leaseLives(this.conn, id).catch(() => undefined);
        if (lives !== undefined) alive.set(id, lives);
        asked++;
        if (!signal?.aborted) onLeaseProgress?.(asked, leases.length);
      }
    };
    await untilAborted(Promise.all(Array.from({ length: Math.min(LEASE_QUERIES, leases.length) }, ask)), signal);
    return holds.map((h) => ({ ...h, end: h.endedRevision === null ? null : holdEnd(h.lease, h.lease ? alive.get(h.lease) : undefined) }));
  }
}

/**
 * What a replay of `range` would read. Revision 1 read at all says nothing was compacted; refused, a watch from it is
 * refused in turn with the compaction revision, at once: etcd refuses a compacted start before it scans anything.
 */
async function spanOf(conn: EtcdConnection, range: EtcdRange): Promise<HistorySpan> {
  const count = { key: range.key, range_end: range.range_end, count_only: true };
  const [now, first] = await Promise.all([
    call(conn.client.kv.range(count)),
    call(conn.client.kv.range({ ...count, revision: 1 })).then(
      () => true,
      (e: unknown) => {
        if (isCompactedError(e)) return false;
        throw e;
      },
    ),
  ]);
  const current = Number(now.header.revision);
  if (first) return { oldest: 1, current };
  const stream = await WatchStream.open(conn, { key: range.key, rangeEnd: range.range_end, startRevision: 1 }, { onEvents: () => undefined });
  try {
    const end = await withDeadline(stream.ended, conn.callTimeoutMs);
    if (end.kind === 'compacted') return { oldest: end.compactRevision, current: Math.max(current, end.compactRevision) };
    throw end.kind === 'failed' ? end.error : new LockLensError('ETCD', 'etcd refused to read revision 1 as compacted, yet did not refuse a watch from it');
  } finally {
    stream.close();
  }
}

function isCompactedError(e: unknown): boolean {
  return /required revision has been compacted/i.test(errorMessage(e));
}

function tooLarge(span: HistorySpan, limit: number): LockLensError {
  const revisions = span.current - span.oldest;
  return new LockLensError(
    'INVALID_ARGUMENT',
    `etcd keeps ${groupDigits(revisions)} revisions (${groupDigits(span.oldest)} to ${groupDigits(span.current)}), more than ${groupDigits(limit)}: etcd serves history by scanning every ` +
      `revision of every key while its writes wait, so a replay of them all could stall the store. Read the last ones with ` +
      `--from-revision N (e.g. ${groupDigits(Math.max(1, span.current - limit))}), or all of them with --all`,
  );
}

/** `promise`, or CANCELLED as soon as `signal` aborts (calls in flight then end on their own deadline). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  throwIfAborted(signal);
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}

/** A queue's keys `name/…`, or the single key `name`, inside the connection's namespace. */
function lockRange(conn: EtcdConnection, name: Uint8Array, single: boolean): EtcdRange {
  return single ? { key: conn.toEtcd(name) } : prefixRange(conn.toEtcd(Buffer.concat([name, Buffer.from('/')])));
}

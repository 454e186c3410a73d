import type { IEvent } from 'etcd3';
import { call, type EtcdConnection } from './connect';
import { abortError, LockLensError } from '../errors';
import { HistoryReadPlan, quietTimeMs, silenceEndsReadAt, type PlanStep, type ReadWindow } from './historyPlan';
import type { EtcdRange } from './keyspace';
import { displayKey } from '../keys';
import { toKeyRecord, type RawKeyValue } from './records';
import type { KeyChange } from './replay';
import { WatchStream } from './watchStream';

/** The events of one revision. */
export interface RevisionChanges {
  readonly revision: number;
  readonly changes: readonly KeyChange[];
}

export interface HistoryRead {
  /** Oldest first. */
  readonly revisions: RevisionChanges[];
  /** No event came and etcd could not confirm there was none: the read ended after its quiet time (`readHistory`). */
  readonly endedOnSilence: boolean;
}

export interface HistoryReadOptions {
  readonly signal?: AbortSignal;
  /** The revision through which every event is read so far. */
  readonly onProgress?: (revision: number) => void;
  /** etcd answers progress requests only once a watch has caught up with history (`answersProgressWhenCaughtUp`). */
  readonly trustsProgress: boolean;
}

/** Watches at once: enough for 64,000 dense revisions in one pass of etcd's sync loop. */
const MAX_WATCHES = 64;
const PROGRESS_REQUEST_MS = 100;

/** etcd compacted the history being read: it now begins at `revision`. */
export class HistoryCompacted extends Error {
  constructor(readonly revision: number) {
    super(`etcd history compacted at revision ${revision}`);
  }
}

/**
 * Every event of `range` from revision `from` through `to`, oldest first, read with watches from past revisions
 * (HistoryReadPlan says how many and when they are done). Rejects with HistoryCompacted when etcd no longer has
 * revision `from`, or compacts past the windows while they are read.
 *
 * Once one event came, events prove everything (HistoryReadPlan). A range with no event at all leaves every watch
 * silent, and only a progress reply can say they caught up, from an etcd that sends it only then
 * (`answersProgressWhenCaughtUp`). Elsewhere silence is believed only after a quiet time scaled to the revisions etcd
 * must scan to serve the watches (`silenceEndsReadAt`), and only when no key of the range was written since `from`
 * (then events must come: they get one more quiet time, and their absence is an error, never an empty history). A
 * read ended so says it (`endedOnSilence`). That is the one place where time decides.
 */
export function readHistory(conn: EtcdConnection, range: EtcdRange, from: number, to: number, options: HistoryReadOptions): Promise<HistoryRead> {
  return new Promise((resolve, reject) => {
    const plan = new HistoryReadPlan(from, to, MAX_WATCHES);
    const byRevision = new Map<number, KeyChange[]>();
    const attempts = new Map<ReadWindow, { stopped: boolean; stream?: WatchStream }>();
    const strip = conn.namespace.length;
    let finished = false;
    let heard = false;
    let progressHeard = false;
    let endedOnSilence = false;
    const began = Date.now();
    let reported = from - 1;
    let quiet: NodeJS.Timeout | undefined;
    const ticker = options.trustsProgress ? setInterval(() => attempts.forEach((a) => a.stream?.requestProgress()), PROGRESS_REQUEST_MS) : undefined;
    const onAbort = () => finish(abortError(options.signal!));

    function finish(error?: unknown): void {
      if (finished) return;
      finished = true;
      clearInterval(ticker);
      clearTimeout(quiet);
      options.signal?.removeEventListener('abort', onAbort);
      for (const w of [...attempts.keys()]) stop(w);
      if (error) reject(error);
      else {
        const revisions = [...Float64Array.from(byRevision.keys()).sort()].map((revision) => ({ revision, changes: byRevision.get(revision)! }));
        resolve({ revisions, endedOnSilence });
      }
    }

    function stop(w: ReadWindow): void {
      const attempt = attempts.get(w);
      if (!attempt) return;
      attempt.stopped = true;
      attempt.stream?.close();
      attempts.delete(w);
    }

    function apply(step: PlanStep): void {
      for (const w of step.close) stop(w);
      for (const { window, from: at } of step.open) void start(window, at);
      const frontier = Math.min(plan.frontier, to);
      if (frontier > reported) options.onProgress?.((reported = frontier));
      if (plan.done) finish();
    }

    function onEvents(w: ReadWindow, events: IEvent[], header: number): void {
      heard = true;
      clearTimeout(quiet);
      let revision = -1;
      let first = Infinity;
      let revisions = 0;
      let into: KeyChange[] | undefined;
      for (const ev of events) {
        const kv = ev.kv as RawKeyValue;
        const r = Number(kv.mod_revision);
        if (r !== revision) {
          revision = r;
          revisions++;
          first = Math.min(first, r);
          // Every response carries all events of its revisions: the first to bring a revision brings all of it.
          into = r >= from && r <= to && !byRevision.has(r) ? [] : undefined;
          if (into) byRevision.set(r, into);
        }
        into?.push(ev.type === 'Put' ? { put: toKeyRecord(kv, strip) } : { delete: kv.key.subarray(strip) });
      }
      apply(plan.delivered(w, { firstRevision: first, lastRevision: revision, revisions, header }));
    }

    async function start(w: ReadWindow, at: number): Promise<void> {
      stop(w);
      const attempt: { stopped: boolean; stream?: WatchStream } = { stopped: false };
      attempts.set(w, attempt);
      try {
        // Events can come in the same chunk as the created reply, before `open` resolves: `attempt` tells they count.
        const stream = await WatchStream.open(
          conn,
          { key: range.key, rangeEnd: range.range_end, startRevision: at },
          {
            onEvents: (events, header) => {
              if (!attempt.stopped) onEvents(w, events, header);
            },
            onProgress: (revision) => {
              if (attempt.stopped || !options.trustsProgress) return;
              progressHeard = true;
              clearTimeout(quiet);
              apply(plan.reached(w, revision));
            },
          },
        );
        if (attempt.stopped) return stream.close();
        attempt.stream = stream;
        const end = await stream.ended;
        if (attempt.stopped || end.kind === 'closed') return;
        finish(end.kind === 'compacted' ? new HistoryCompacted(end.compactRevision) : end.error);
      } catch (e) {
        if (!attempt.stopped) finish(e);
      }
    }

    /** See above: after its quiet time, a silence nothing contradicts is an empty range. */
    function awaitSilence(): void {
      const at = silenceEndsReadAt(to - from + 1, options.trustsProgress, progressHeard);
      if (at === undefined) return;
      quiet = setTimeout(() => {
        if (finished || heard) return;
        void written().then(
          (key) => {
            if (finished || heard) return;
            if (!key) {
              endedOnSilence = true;
              return finish();
            }
            // Its events exist: wait for them once more as long, then say they never came.
            quiet = setTimeout(() => {
              if (finished || heard) return;
              const waited = Math.round((Date.now() - began) / 1000);
              const what = displayKey(key);
              finish(new LockLensError('TIMEOUT', `etcd sent none of this lock's history in ${waited} s, though its key ${what} was written after revision ${from}: replay again`));
            }, quietTimeMs(to - from + 1));
          },
          (e: unknown) => finish(e),
        );
      }, Math.max(0, began + at - Date.now()));
    }

    /** A key of the range still there that was written since `from`, which etcd therefore has events of. */
    async function written(): Promise<Buffer | undefined> {
      const res = await call(conn.client.kv.range({ key: range.key, range_end: range.range_end, revision: to, min_mod_revision: from, keys_only: true, limit: 1 }));
      return res.kvs[0]?.key.subarray(strip);
    }

    if (options.signal?.aborted) return finish(abortError(options.signal));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (plan.done) return finish();
    for (const w of plan.windows) void start(w, w.start);
    awaitSilence();
  });
}

/**
 * etcd's `watchBatchMaxRevs`: a watch catching up with history is sent its events in batches of exactly this many
 * revisions, one batch per pass of etcd's sync loop (every 100 ms), until the last, which has fewer. The same in every
 * etcd from 3.0 to 3.6.
 */
export const ETCD_BATCH_REVISIONS = 1000;

/** A stretch of revisions one watch reads: [start, end]. */
export interface ReadWindow {
  readonly start: number;
  end: number;
  /** Every event of the range is known through this revision (start - 1: none yet). */
  delivered: number;
  closed: boolean;
}

/** What a watch response with events said. */
export interface Delivery {
  readonly firstRevision: number;
  readonly lastRevision: number;
  /** Distinct revisions among its events. */
  readonly revisions: number;
  /** The response header's revision. */
  readonly header: number;
}

export interface PlanStep {
  /** Windows read to their end (or past it by another's reading): stop their watches. */
  readonly close: readonly ReadWindow[];
  /** Watches to start, at `from`: a window to go on with, and windows split off a dense one. */
  readonly open: readonly { readonly window: ReadWindow; readonly from: number }[];
}

/**
 * How the revisions [from, to] of one key range are read from etcd's history through watches, and when they all are.
 *
 * One watch over 100,000 revisions takes ten seconds (1000 revisions per pass), so the span is cut into windows, one
 * watch each, all served in the same pass; a window whose events turn out dense is split again over the watches that
 * are done. All watch the same keys, so what one watch proves read covers every window it passes.
 *
 * What proves a watch has delivered every event through a revision:
 * - an event at that revision (a response carries every event of its revisions);
 * - a response of fewer than ETCD_BATCH_REVISIONS revisions: it was the watch's last history batch (or a live
 *   event), complete through its header revision;
 * - a progress reply, on the etcd versions that send it only once a watch has caught up (the caller's `reached`).
 * A full batch proves only its own revisions, and the next may never come (when that one was the last), so the
 * window's watch starts again from the batch's last revision: its events exist, the next batch cannot be empty.
 */
export class HistoryReadPlan {
  readonly windows: ReadWindow[] = [];

  constructor(
    readonly from: number,
    readonly to: number,
    private readonly maxWatches: number,
  ) {
    const span = to - from + 1;
    if (span <= 0) return;
    const count = Math.min(maxWatches, Math.ceil(span / ETCD_BATCH_REVISIONS));
    const size = Math.ceil(span / count);
    for (let start = from; start <= to; start += size) this.windows.push(window(start, Math.min(to, start + size - 1)));
  }

  /** The revision through which every event from `from` on is known. */
  get frontier(): number {
    let f = this.from - 1;
    for (const w of this.windows) {
      if (w.start > f + 1) break;
      f = Math.max(f, w.delivered);
    }
    return f;
  }

  get done(): boolean {
    return this.frontier >= this.to;
  }

  /** A response with events on `w`'s watch. */
  delivered(w: ReadWindow, d: Delivery): PlanStep {
    const complete = d.revisions < ETCD_BATCH_REVISIONS;
    w.delivered = Math.max(w.delivered, complete ? Math.max(d.header, d.lastRevision) : d.lastRevision);
    const close = this.closeRead();
    if (w.closed) return { close, open: [] };
    // A full batch, or a last one from a member that had not yet applied `to`: go on from its last revision.
    return { close, open: [{ window: w, from: d.lastRevision }, ...this.split(w, d)] };
  }

  /** Every event through `revision` was delivered on `w`'s watch (a progress reply etcd sends only once caught up). */
  reached(w: ReadWindow, revision: number): PlanStep {
    w.delivered = Math.max(w.delivered, revision);
    return { close: this.closeRead(), open: [] };
  }

  /**
   * Closes every open window read to its end, by its own watch or by one that started before it and read past it (a
   * watch's reading is contiguous from where it started). Read exactly to its end is not enough while the next
   * window's watch has heard nothing: that one stays silent if no event follows, and only this one going on can say.
   */
  private closeRead(): ReadWindow[] {
    const closed: ReadWindow[] = [];
    let reach = this.from - 1;
    this.windows.forEach((w, i) => {
      reach = Math.max(reach, w.delivered);
      const next = this.windows[i + 1];
      const read = reach > w.end || (reach === w.end && (!next || next.delivered >= next.start));
      if (!w.closed && read) {
        w.closed = true;
        closed.push(w);
      }
    });
    return closed;
  }

  /**
   * Splits what is left of `w` after `d` over the watches not in use, as many as its events need at the density the
   * batch showed: a dense stretch is read in one pass, a sparse one is not read twice over by idle watches.
   */
  private split(w: ReadWindow, d: Delivery): { window: ReadWindow; from: number }[] {
    const left = w.end - d.lastRevision + 1;
    const density = d.revisions / (d.lastRevision - d.firstRevision + 1);
    const idle = this.maxWatches - this.windows.filter((x) => !x.closed).length;
    const pieces = Math.min(1 + idle, Math.ceil((left * density) / ETCD_BATCH_REVISIONS));
    if (pieces <= 1) return [];
    const size = Math.ceil(left / pieces);
    const end = w.end;
    w.end = d.lastRevision + size - 1;
    const added: ReadWindow[] = [];
    for (let start = w.end + 1; start <= end; start += size) added.push(window(start, Math.min(end, start + size - 1)));
    this.windows.splice(this.windows.indexOf(w) + 1, 0, ...added);
    return added.map((a) => ({ window: a, from: a.start }));
  }
}

function window(start: number, end: number): ReadWindow {
  return { start, end, delivered: start - 1, closed: false };
}

/**
 * Whether this etcd version answers a progress request only once the watch has caught up with history, and always
 * answers one: from 3.4.31, 3.5.13 and 3.6. Before, it answered at once, ahead of history not yet sent
 * (etcd-io/etcd#15220), or, from 3.4.24 and 3.5.8, never for a new watch that had no event (etcd-io/etcd#17507).
 */
export function answersProgressWhenCaughtUp(version: string): boolean {
  const [major, minor, patch] = version.split('.').map((n) => Number.parseInt(n, 10));
  if (major !== 3) return major > 3;
  return minor >= 6 || (minor === 5 && patch >= 13) || (minor === 4 && patch >= 31);
}

/**
 * etcd sends a watch catching up with history about ETCD_BATCH_REVISIONS revisions a pass of its sync loop, every
 * 100 ms: 0.1 ms a revision. A silent watch may still be waiting for that scan; the quiet time allows it twice over.
 */
export const QUIET_MS_PER_REVISION = 0.2;
/** The shortest quiet time: etcd hands a new watch its history within a pass or two of its sync loop (100 ms each). */
export const QUIET_MIN_MS = 1000;
/** On etcd that answers progress requests once caught up: how long without any answer before it is taken not to. */
export const PROGRESS_FALLBACK_MS = 5000;

/** How long a read of `revisions` revisions must stay silent before silence may say it has no event. */
export function quietTimeMs(revisions: number): number {
  return Math.max(QUIET_MIN_MS, Math.ceil(revisions * QUIET_MS_PER_REVISION));
}

/**
 * When, in ms after a read of `revisions` revisions began, silence (no event yet on any watch) may end it: its watches
 * may then have scanned them all. Never on etcd that answers progress requests once caught up and has answered one:
 * only that reply may end it. Such an etcd that has answered none may be a proxy that drops them (etcd's grpc-proxy
 * does): after PROGRESS_FALLBACK_MS it is treated as one that cannot say, rather than waited for forever.
 */
export function silenceEndsReadAt(revisions: number, trustsProgress: boolean, progressHeard: boolean): number | undefined {
  if (!trustsProgress) return quietTimeMs(revisions);
  return progressHeard ? undefined : Math.max(PROGRESS_FALLBACK_MS, quietTimeMs(revisions));
}

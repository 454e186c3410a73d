/**
 * Which locks get series of their own on /metrics, and under which name: at most `maxLocks` series over every
 * connection (the locks with waiters first, then the oldest holds, then the most recently active), the rest summed per
 * connection and kind into `lock="__other__"`; names matching `lockNames.drop` always go there, and `rewrite` applies
 * to the name shown (two locks rewritten alike share a series). Pure: rows in, series out.
 */
import type { LockKind } from '../../core/lockState';
import type { NameRewrite } from './config';
import { compareText } from '../../shared/compareText';
import type { Mutable } from '../../shared/mutable';

export const OTHER = '__other__';

/** Counter totals of one lock (or of what was folded into `__other__`). */
export interface Counts {
  readonly acquisitions: number;
  readonly handoffs: number;
  readonly expiries: number;
  readonly ownerLosses: number;
  readonly forceReleases: number;
}

/** One lock as its series say it. */
export interface LockRow {
  readonly connection: string;
  readonly store: string;
  readonly name: string;
  readonly kind: LockKind;
  /** In the watch now (its gauges have values); false: only its counters are kept (it went, or it was retired). */
  readonly present: boolean;
  /** Counted under `__other__` whatever its name (counters of locks long gone). */
  readonly retired?: boolean;
  readonly holders: number;
  readonly waiters: number;
  readonly holdSeconds: number;
  readonly waitSeconds: number;
  /** The least TTL left among its holders; null when none is sampled. */
  readonly ttlSeconds: number | null;
  readonly stalled: boolean;
  readonly neverExpires: boolean;
  readonly counts: Counts;
  /** When it last changed (epoch ms): the order among locks with neither waiters nor holders. */
  readonly lastActive: number;
}

export interface Series extends Omit<LockRow, 'name' | 'retired' | 'lastActive'> {
  readonly lock: string;
}

export interface NamePolicy {
  readonly maxLocks: number;
  readonly drop: readonly RegExp[];
  readonly rewrite: readonly NameRewrite[];
}

export interface Listing {
  readonly series: Series[];
  /** Per connection: its locks in the watch that have no series of their own. */
  readonly unlisted: Map<string, number>;
}

export function lockSeries(rows: readonly LockRow[], policy: NamePolicy): Listing {
  const series: Summed[] = [];
  // Series by connection, kind and name shown: maps within maps rather than a text key made for each of 10,000 rows
  // (JSON.stringify at first, then a concatenation): with the sums in place, 0.28× the allocation and 0.36-0.52× the time.
  const byConnection = new Map<string, Map<LockKind, Map<string, Summed>>>();
  const unlisted = new Map<string, number>();
  let listed = 0;
  // Loops rather than callbacks made per call: see metrics.ts on what V8 did with the scrape's code.
  for (const row of [...rows].sort(byUrgency)) {
    const byKind = byConnection.get(row.connection) ?? byConnection.set(row.connection, new Map()).get(row.connection)!;
    const locks = byKind.get(row.kind) ?? byKind.set(row.kind, new Map()).get(row.kind)!;
    const shown = row.retired || matchesAny(row.name, policy.drop) ? undefined : shownName(row.name, policy.rewrite);
    const isNew = shown !== undefined && !locks.has(shown);
    let lock = OTHER;
    if (shown !== undefined && (!isNew || listed < policy.maxLocks)) {
      if (isNew) listed++;
      lock = shown;
    } else if (row.present) unlisted.set(row.connection, (unlisted.get(row.connection) ?? 0) + 1);
    const s = locks.get(lock);
    if (s) mergeInto(s, row);
    else {
      const added = seriesOf(row, lock);
      locks.set(lock, added);
      series.push(added);
    }
  }
  return { series, unlisted };
}

function matchesAny(name: string, patterns: readonly RegExp[]): boolean {
  for (const re of patterns) if (re.test(name)) return true;
  return false;
}

function shownName(name: string, rewrite: readonly NameRewrite[]): string {
  let shown = name;
  for (const r of rewrite) shown = shown.replace(r.match, r.replace);
  return shown;
}

/**
 * Locks with waiters first (the longest wait first), then held ones (the oldest hold first), then the latest active;
 * ties (every lock found at the first read has held as long) by name, then connection: rows come in no order, and the
 * locks that get series at the --max-locks cut must not change from one scrape to the next.
 */
function byUrgency(a: LockRow, b: LockRow): number {
  const waits = Number(b.waiters > 0) - Number(a.waiters > 0);
  if (waits) return waits;
  return urgencyOf(a, b) || compareText(a.name, b.name) || compareText(a.connection, b.connection);
}

/** Between two locks that both have waiters or both have none. */
function urgencyOf(a: LockRow, b: LockRow): number {
  if (a.waiters > 0) return b.waitSeconds - a.waitSeconds;
  const holds = Number(b.holders > 0) - Number(a.holders > 0);
  if (holds) return holds;
  if (a.holders > 0) return b.holdSeconds - a.holdSeconds;
  return b.lastActive - a.lastActive;
}

/** A series as it is summed: its own object and its own counts, so that the rows merged into it are left as they are. */
type Summed = Omit<Mutable<Series>, 'counts'> & { counts: Mutable<Counts> };

// Series are written out field by field, as rows are (metrics.ts): a spread followed by fields it already has is slow
// in V8. The rows beyond --max-locks (9,500 of 10,000 in serve's bench) are summed into `__other__` in place rather
// than into a new series each (docs/BENCHMARKS.md, serve, the third round).
function seriesOf(r: LockRow, lock: string): Summed {
  const c = r.counts;
  return {
    connection: r.connection,
    store: r.store,
    kind: r.kind,
    lock,
    present: r.present,
    holders: r.holders,
    waiters: r.waiters,
    holdSeconds: r.holdSeconds,
    waitSeconds: r.waitSeconds,
    ttlSeconds: r.ttlSeconds,
    stalled: r.stalled,
    neverExpires: r.neverExpires,
    counts: { acquisitions: c.acquisitions, handoffs: c.handoffs, expiries: c.expiries, ownerLosses: c.ownerLosses, forceReleases: c.forceReleases },
  };
}

/** Holders, waiters and counters summed; ages the oldest; TTL the least; a stall or a holder that never expires, any. */
function mergeInto(s: Summed, r: LockRow): void {
  s.present ||= r.present;
  s.holders += r.holders;
  s.waiters += r.waiters;
  s.holdSeconds = Math.max(s.holdSeconds, r.holdSeconds);
  s.waitSeconds = Math.max(s.waitSeconds, r.waitSeconds);
  s.ttlSeconds = s.ttlSeconds === null ? r.ttlSeconds : r.ttlSeconds === null ? s.ttlSeconds : Math.min(s.ttlSeconds, r.ttlSeconds);
  s.stalled ||= r.stalled;
  s.neverExpires ||= r.neverExpires;
  s.counts.acquisitions += r.counts.acquisitions;
  s.counts.handoffs += r.counts.handoffs;
  s.counts.expiries += r.counts.expiries;
  s.counts.ownerLosses += r.counts.ownerLosses;
  s.counts.forceReleases += r.counts.forceReleases;
}

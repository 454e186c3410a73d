/**
 * Which locks get series of their own on /metrics, and under which name: at most `maxLocks` series over every
 * connection (the locks with waiters first, then the oldest holds, then the most recently active), the rest summed per
 * connection and kind into `lock="__other__"`; names matching `lockNames.drop` always go there, and `rewrite` applies
 * to the name shown (two locks rewritten alike share a series). Pure: rows in, series out.
 */
import type { LockKind } from '../../core/lockState';
import type { NameRewrite } from './config';

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
  const bySeries = new Map<string, Series>();
  const unlisted = new Map<string, number>();
  // The connection's length sets it apart and a kind is a word: unambiguous without JSON.stringify, which made a key of
  // every one of 10,000 rows a twentieth of a scrape (docs/BENCHMARKS.md, serve).
  const keyOf = (row: LockRow, lock: string) => `${row.connection.length}:${row.connection}${row.kind}:${lock}`;
  const add = (row: LockRow, lock: string, key: string) => {
    const s = bySeries.get(key);
    bySeries.set(key, s ? merged(s, row) : seriesOf(row, lock));
  };
  let listed = 0;
  for (const row of [...rows].sort(byUrgency)) {
    const shown = row.retired || policy.drop.some((re) => re.test(row.name)) ? undefined : shownName(row.name, policy.rewrite);
    const key = shown === undefined ? undefined : keyOf(row, shown);
    const isNew = key !== undefined && !bySeries.has(key);
    if (key !== undefined && (!isNew || listed < policy.maxLocks)) {
      if (isNew) listed++;
      add(row, shown!, key);
      continue;
    }
    if (row.present) unlisted.set(row.connection, (unlisted.get(row.connection) ?? 0) + 1);
    add(row, OTHER, keyOf(row, OTHER));
  }
  return { series: [...bySeries.values()], unlisted };
}

function shownName(name: string, rewrite: readonly NameRewrite[]): string {
  return rewrite.reduce((n, r) => n.replace(r.match, r.replace), name);
}

/** Locks with waiters first (the longest wait first), then held ones (the oldest hold first), then the latest active. */
function byUrgency(a: LockRow, b: LockRow): number {
  const waits = Number(b.waiters > 0) - Number(a.waiters > 0);
  if (waits) return waits;
  if (a.waiters > 0) return b.waitSeconds - a.waitSeconds;
  const holds = Number(b.holders > 0) - Number(a.holders > 0);
  if (holds) return holds;
  if (a.holders > 0) return b.holdSeconds - a.holdSeconds;
  return b.lastActive - a.lastActive;
}

// Series are written out field by field, as rows are (metrics.ts): a spread followed by fields it already has is slow
// in V8, and every lock beyond --max-locks is merged into `__other__` once a scrape.
function seriesOf(r: LockRow, lock: string): Series {
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
    counts: r.counts,
  };
}

/** Holders, waiters and counters summed; ages the oldest; TTL the least; a stall or a holder that never expires, any. */
function merged(s: Series, r: LockRow): Series {
  return {
    connection: s.connection,
    store: s.store,
    kind: s.kind,
    lock: s.lock,
    present: s.present || r.present,
    holders: s.holders + r.holders,
    waiters: s.waiters + r.waiters,
    holdSeconds: Math.max(s.holdSeconds, r.holdSeconds),
    waitSeconds: Math.max(s.waitSeconds, r.waitSeconds),
    ttlSeconds: s.ttlSeconds === null ? r.ttlSeconds : r.ttlSeconds === null ? s.ttlSeconds : Math.min(s.ttlSeconds, r.ttlSeconds),
    stalled: s.stalled || r.stalled,
    neverExpires: s.neverExpires || r.neverExpires,
    counts: {
      acquisitions: s.counts.acquisitions + r.counts.acquisitions,
      handoffs: s.counts.handoffs + r.counts.handoffs,
      expiries: s.counts.expiries + r.counts.expiries,
      ownerLosses: s.counts.ownerLosses + r.counts.ownerLosses,
      forceReleases: s.counts.forceReleases + r.counts.forceReleases,
    },
  };
}

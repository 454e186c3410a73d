/** The figures shown for a lock (hold and wait times, handoffs, stalls), made from what holdObservation.ts recorded of it. */
import { HOLD_ENDS, type HoldEnd } from '../shared/holdEnds';
import { HANDOFF_WINDOW_MS, MAX_HOLDS, type LockRecord, type Longest, type ObservedHold } from './holdObservation';
import { percentile } from './percentile';

/** Samples of a duration: percentiles over the most recent MAX_SAMPLES, the maximum and count over all seen. */
export interface Spread {
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  readonly count: number;
}

/**
 * How far a hold's shown duration (acquired to ended, or to now) can be trusted: exactly (''), at least ('≥ ': it was
 * found holding), at most ('≤ ': a reload found it gone), or not at all (null: both ends unseen).
 */
export function holdBound(h: ObservedHold): '' | '≥ ' | '≤ ' | null {
  const endSeen = h.endedAt === null || h.endedExact;
  if (h.acquiredExact) return endSeen ? '' : '≤ ';
  return endSeen ? '≥ ' : null;
}

export interface LockFigures {
  /** Epoch ms LockLens first saw the lock. */
  readonly since: number;
  /** Holds seen, found in place or seen from their start. */
  readonly holds: number;
  /** Holds seen from start to end; null before the first. */
  readonly hold: Spread | null;
  /** Waits seen from start to end (whether they ended holding or leaving); null before the first. */
  readonly wait: Spread | null;
  /** Handoffs (a waiter taking over) per minute, over the last HANDOFF_WINDOW_MS that LockLens watched. */
  readonly handoffsPerMinute: number;
  /** Times the holder changed while LockLens watched. */
  readonly transitions: number;
  readonly longestHold: Longest | null;
  readonly longestWait: Longest | null;
  /** Holds whose TTL was seen not being renewed. */
  readonly stalls: number;
  /**
   * How the ended holds among the last MAX_HOLDS ended, by end (`unknown`: nothing told it), in HOLD_ENDS order;
   * ends never seen are left out.
   */
  readonly ends: readonly EndCount[];
}

export interface EndCount {
  readonly end: HoldEnd | 'unknown';
  readonly count: number;
}

/** The holds the counts of ends are over. */
export const ENDS_COUNTED_OVER = MAX_HOLDS;

/** The figures over one lock's record, its handoff rate over what of the window was watched since `watchedSince`. */
export function figuresOf(r: LockRecord, watchedSince: number | undefined, now: number): LockFigures {
  // Over the part of the window LockLens watched: a minute after a restart, that minute's handoffs over a minute.
  const from = Math.max(now - HANDOFF_WINDOW_MS, watchedSince ?? now);
  const recent = r.handoffs.filter((t) => t >= from).length;
  const minutes = Math.max(1, (now - from) / 60_000);
  return {
    since: r.since,
    holds: r.holdsSeen,
    hold: spread(r.holdMs, r.holdCount, r.longestHold),
    wait: spread(r.waitMs, r.waitCount, r.longestWait),
    handoffsPerMinute: recent / minutes,
    transitions: r.transitions,
    longestHold: r.longestHold,
    longestWait: r.longestWait,
    stalls: r.stalls,
    ends: endCounts(r.holds),
  };
}

export function endCounts(holds: readonly ObservedHold[]): EndCount[] {
  const counts = new Map<HoldEnd | 'unknown', number>();
  for (const h of holds) if (h.endedAt !== null) counts.set(h.end ?? 'unknown', (counts.get(h.end ?? 'unknown') ?? 0) + 1);
  return [...HOLD_ENDS, 'unknown' as const].filter((e) => counts.has(e)).map((end) => ({ end, count: counts.get(end)! }));
}

function spread(recent: readonly number[], count: number, longest: Longest | null): Spread | null {
  if (count === 0 || !longest) return null;
  return { p50: percentile(recent, 50), p95: percentile(recent, 95), max: longest.ms, count };
}

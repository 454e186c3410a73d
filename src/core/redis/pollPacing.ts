/**
 * How often a watch without keyspace notifications reads everything again. A full read SCANs the whole keyspace of
 * every node (SCAN walks every key whatever its MATCH), so on a server with millions of keys each read is real work for
 * the user's Redis: the next read waits at least POLL_COST_FACTOR times as long as the last one took, which keeps
 * LockLens's SCANs to about 1/POLL_COST_FACTOR of one server thread, and the status says so. Pure: no timers.
 */

/** A read every `k × its duration` at most: a ~10% duty cycle on the server (less in fact, the time counts the RTTs). */
export const POLL_COST_FACTOR = 10;
/** How fast the read time estimate follows new reads (an exponential moving average): one slow read does not swing it. */
const SMOOTHING = 0.3;
/** The interval moves only when the target moved this much: up by 10%, down by 25% (no status flicker every poll). */
const RAISE_AT = 1.1;
const LOWER_AT = 0.75;

/** The wait before the next full read: the configured interval, or `k ×` the last read's duration when longer. */
export function adaptiveInterval(pollMs: number, readMs: number, k = POLL_COST_FACTOR): number {
  const cost = Number.isFinite(readMs) && readMs > 0 ? Math.ceil(k * readMs) : 0;
  return Math.max(pollMs, cost);
}

/** What one full read cost: the keys SCAN walked (DBSIZE summed over the nodes) and how long the slowest node took. */
export interface ReadCost {
  /** Undefined: DBSIZE refused (an ACL), not known. */
  readonly keys: number | undefined;
  /** The read of the prefixes (what every poll does). */
  readonly ms: number;
  /** With the walk for free fair locks when there was one: what this read cost the node in all. */
  readonly totalMs: number;
}

export class PollPacer {
  private estimateMs: number | undefined;
  private keys: number | undefined;
  private chosen: number;

  constructor(
    readonly pollMs: number,
    private readonly k = POLL_COST_FACTOR,
  ) {
    this.chosen = pollMs;
  }

  /** The interval between polls now, in ms. */
  get intervalMs(): number {
    return this.chosen;
  }

  /** Whether polls are slower than configured because reads are expensive. */
  get slowed(): boolean {
    return this.chosen > this.pollMs;
  }

  /** The smoothed duration of a full read, ms. */
  get readMs(): number {
    return this.estimateMs ?? 0;
  }

  get keyCount(): number | undefined {
    return this.keys;
  }

  /** The least time to leave after a full read that took `ms` before the next one (an event asking for one, too). */
  gapAfter(ms: number): number {
    return adaptiveInterval(0, ms, this.k);
  }

  /** Folds in a full read's cost; true when the interval changed (a status worth re-saying). */
  observe(cost: Pick<ReadCost, 'keys' | 'ms'>): boolean {
    this.keys = cost.keys;
    this.estimateMs = this.estimateMs === undefined ? cost.ms : this.estimateMs + SMOOTHING * (cost.ms - this.estimateMs);
    const target = adaptiveInterval(this.pollMs, this.estimateMs, this.k);
    const move = target > this.chosen * RAISE_AT || target < this.chosen * LOWER_AT || (target === this.pollMs && this.chosen !== this.pollMs);
    if (!move) return false;
    // Rounded so the status shows a stable figure: two significant digits.
    this.chosen = target === this.pollMs ? target : Math.max(this.pollMs, roundTo2(target));
    return true;
  }

  /**
   * "polling every 3.2 s: a full read of 2.1M keys takes 320 ms; turn on …", or the plain one when not slowed.
   * `notifications`: off on the server, or `unreadable` (CONFIG refused: followed if the server sends them).
   */
  describe(notifications: 'off' | 'unreadable' = 'off'): string {
    const unreadable = 'CONFIG is refused, so LockLens cannot tell whether keyspace notifications are on: it follows them if they come';
    if (!this.slowed) return `polling every ${formatMs(this.pollMs)}: ${notifications === 'off' ? 'keyspace notifications are off' : unreadable}`;
    const of = this.keys === undefined ? '' : ` of ${formatCount(this.keys)} keys`;
    const advice = notifications === 'off' ? 'turn on keyspace notifications for live updates' : unreadable;
    return `polling every ${formatMs(this.chosen)}: a full read${of} takes ${formatMs(roundTo2(this.readMs))}; ${advice}`;
  }
}

function roundTo2(ms: number): number {
  if (ms < 10) return Math.round(ms);
  const magnitude = 10 ** (Math.floor(Math.log10(ms)) - 1);
  return Math.round(ms / magnitude) * magnitude;
}

/** `200 ms`, `3.2 s`, `60 s`, `2.5 min`. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) {
    const s = ms / 1000;
    return `${s < 10 ? trim(s.toFixed(1)) : Math.round(s)} s`;
  }
  return `${trim((ms / 60_000).toFixed(1))} min`;
}

/** `950`, `200k`, `2.1M`. */
export function formatCount(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${n < 10_000 ? trim((n / 1000).toFixed(1)) : Math.round(n / 1000)}k`;
  return `${n < 10_000_000 ? trim((n / 1_000_000).toFixed(1)) : Math.round(n / 1_000_000)}M`;
}

function trim(fixed: string): string {
  return fixed.replace(/\.0$/, '');
}

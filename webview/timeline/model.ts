import { applyDiff } from '../../src/protocol/timeline';
import { compareRows, type TimelineDiff, type TimelineRow } from '../../src/shared/timelineData';
import type { Mutable } from '../../src/shared/mutable';

/**
 * The webview's rows and what is on screen: the rows as the host sent them (diffs applied with the protocol's own
 * `applyDiff`), and the lines shown, one header per lock then its bars in queue order, after the filter and the
 * time window. No DOM here.
 */

export interface LockLine {
  readonly type: 'lock';
  /** connection + lock id: unique. */
  readonly group: string;
  readonly lockName: string;
  readonly connection: string;
  readonly kind: TimelineRow['kind'];
  /** Live members (not ended) of the lock. */
  readonly live: number;
  /** A live member says its lock is in a confirmed deadlock. */
  readonly deadlock: boolean;
}

export interface RowLine {
  readonly type: 'row';
  readonly row: TimelineRow;
}

export type Line = LockLine | RowLine;

export interface Layout {
  readonly lines: readonly Line[];
  /** Index in `lines` by row id. */
  readonly indexOf: ReadonlyMap<string, number>;
  readonly liveRows: number;
  readonly locks: number;
  /** True when more than one connection is shown: headers then name theirs. */
  readonly manyConnections: boolean;
}

export class TimelineStore {
  private readonly rows = new Map<string, TimelineRow>();
  private sorted: TimelineRow[] = [];
  private order = false;
  /** Bumped on every change, so views know to lay out again. */
  version = 0;

  get size(): number {
    return this.rows.size;
  }

  get(id: string): TimelineRow | undefined {
    return this.rows.get(id);
  }

  reset(rows: readonly TimelineRow[]): void {
    this.rows.clear();
    for (const r of rows) this.rows.set(r.id, r);
    this.order = false;
    this.version++;
  }

  apply(diff: TimelineDiff): void {
    applyDiff(this.rows, diff);
    // Ends change no order; upserts may (a new key, a moved position), removals shrink it.
    if (diff.upserts.length || diff.removed.length) this.order = false;
    else if (diff.ended.length) this.sorted = this.sorted.map((r) => this.rows.get(r.id) ?? r);
    this.version++;
  }

  /** Every row in display order: connection, lock, create revision. */
  all(): readonly TimelineRow[] {
    if (!this.order) {
      this.sorted = [...this.rows.values()].sort(compareRows);
      this.order = true;
    }
    return this.sorted;
  }

  /**
   * The lines to show: rows of locks whose name contains `filter` (any case), ended rows only while their end is in
   * the window; a header before each lock's rows.
   */
  layout(filter: string, windowStart: number): Layout {
    const needle = filter.trim().toLowerCase();
    const lines: Line[] = [];
    const indexOf = new Map<string, number>();
    const connections = new Set<string>();
    let liveRows = 0;
    let locks = 0;
    let header: { index: number; line: Mutable<LockLine> } | undefined;
    for (const row of this.all()) {
      if (needle && !row.lockName.toLowerCase().includes(needle)) continue;
      if (row.endedAt !== undefined && row.endedAt < windowStart) continue;
      const group = `${row.connection}\u0000${row.lock}`;
      if (header?.line.group !== group) {
        const line: Mutable<LockLine> = { type: 'lock', group, lockName: row.lockName, connection: row.connection, kind: row.kind, live: 0, deadlock: false };
        header = { index: lines.length, line };
        lines.push(line);
        locks++;
        connections.add(row.connection);
      }
      if (row.endedAt === undefined) {
        header.line.live++;
        if (row.deadlock) header.line.deadlock = true;
        liveRows++;
      }
      indexOf.set(row.id, lines.length);
      lines.push({ type: 'row', row });
    }
    return { lines, indexOf, liveRows, locks, manyConnections: connections.size > 1 };
  }
}

/** Seconds of TTL left at `now` (host clock), counting down from the last sample; undefined when not known. */
export function ttlLeft(row: TimelineRow, now: number): number | undefined {
  if (row.endedAt !== undefined || row.leaseState === 'expired') return 0;
  if (row.ttl === undefined || row.observedAt === undefined) return undefined;
  return Math.max(0, row.ttl - (now - row.observedAt) / 1000);
}

/** Long hold as of `now`: the host's flag, or the threshold passed since then. */
export function isLongHold(row: TimelineRow, now: number, longHoldMs: number): boolean {
  if (row.endedAt !== undefined) return false;
  return row.longHold || (row.position === 0 && row.heldSince !== undefined && now - row.heldSince > longHoldMs);
}

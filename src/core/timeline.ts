import { compareRows, type TimelineDiff, type TimelineEnd, type TimelineRow, type TimelineRowEnd } from '../protocol/timeline';
import { displayKey, keyId } from './keys';
import { remainingTtl, type LeaseInfo } from './leases';
import { lockHealth, type LockClock } from './lockHealth';
import type { LockState } from './lockModel';

/**
 * The lease timeline's data: lock states, lease samples and observed ages turned into one row per lock member and
 * lease, and the difference between two such pictures, so that the panel sends only what changed. Pure: no vscode, no
 * etcd, no timers; `now` is always passed in.
 */

/** What one connection contributes: its live locks, its sampled leases and its clock of observed ages. */
export interface TimelineSource {
  readonly connection: string;
  readonly locks: readonly LockState[];
  readonly lease: (id: string) => LeaseInfo | undefined;
  readonly clock: LockClock;
}

export interface TimelineOptions {
  readonly longHoldMs: number;
  /** Ended bars are kept this long after they end (the longest time window). */
  readonly keepEndedMs: number;
  /** At most this many ended bars are kept, the newest. */
  readonly maxEnded?: number;
}

export const DEFAULT_MAX_ENDED = 2000;

/**
 * A new sample that agrees with the countdown of the one sent, within this many seconds, is not sent again: etcd
 * reports whole seconds, and the webview counts down by itself. A keepalive always differs (it adds a refresh).
 */
const TTL_SLACK_S = 1;

/** A row's identity: connection, lock, key and lease (a key re-put with another lease is another bar). */
export function rowId(connection: string, lockId: string, key: Uint8Array, lease: string): string {
  return JSON.stringify([connection, lockId, keyId(key), lease]);
}

/** The parts of a row id, or undefined when it is not one. */
export function parseRowId(id: string): { connection: string; lockId: string; keyId: string; lease: string } | undefined {
  try {
    const parts = JSON.parse(id) as unknown;
    if (!Array.isArray(parts) || parts.length !== 4 || !parts.every((p) => typeof p === 'string')) return undefined;
    const [connection, lockId, keyId, lease] = parts as string[];
    return { connection, lockId, keyId, lease };
  } catch {
    return undefined;
  }
}

/** The rows of one connection now, in lock order then queue order. */
export function timelineRows(source: TimelineSource, longHoldMs: number, now: number): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (const lock of source.locks) {
    const lockName = displayKey(lock.name);
    for (const h of lockHealth(lock, source.clock, source.lease, { longHoldMs }, now)) {
      const m = h.member;
      const seen = source.clock.seen(m);
      const info = h.lease;
      const row: Mutable<TimelineRow> = {
        id: rowId(source.connection, lock.id, m.key, m.lease),
        connection: source.connection,
        lock: lock.id,
        lockName,
        key: displayKey(m.key),
        kind: lock.kind,
        role: h.role,
        position: h.position,
        lease: m.lease,
        createRevision: m.createRevision,
        firstSeenAt: seen.at,
        firstSeenExact: seen.exact,
        refreshes: info?.refreshes ?? [],
        stalled: info?.state === 'alive' && info.stalled,
        longHold: h.troubles.includes('longHold'),
      };
      if (h.position === 0) row.heldSince = h.since.at;
      if (info) {
        row.leaseState = info.state;
        row.grantedTtl = info.grantedTtl;
        row.ttl = info.ttl;
        row.observedAt = info.observedAt;
      }
      rows.push(row);
    }
  }
  return rows;
}

/**
 * Keeps the rows as last sent and turns each new picture into a diff against them. Applying the diffs in order to
 * the first snapshot (with `applyDiff` from the protocol) gives exactly `snapshot()`: the unit tests check that.
 */
export class TimelineReducer {
  private readonly rows = new Map<string, TimelineRow>();
  private pendingEnds: TimelineRowEnd[] = [];

  constructor(private options: TimelineOptions) {}

  setOptions(options: TimelineOptions): void {
    this.options = options;
  }

  row(id: string): TimelineRow | undefined {
    return this.rows.get(id);
  }

  /** Every row as sent, in display order. */
  snapshot(): TimelineRow[] {
    return [...this.rows.values()].sort(compareRows);
  }

  /**
   * Folds in the current picture of every connection shown. Rows whose key is gone end now; rows of connections no
   * longer among `sources` are removed (LockLens stopped looking; nothing ended).
   */
  update(sources: readonly TimelineSource[], now: number): TimelineDiff {
    const upserts: TimelineRow[] = [];
    const ended: TimelineRowEnd[] = this.pendingEnds;
    const removed: string[] = [];
    this.pendingEnds = [];
    const live = new Set<string>();
    const bySource = new Map(sources.map((s) => [s.connection, s]));

    for (const source of sources) {
      for (const fresh of timelineRows(source, this.options.longHoldMs, now)) {
        live.add(fresh.id);
        const sent = this.rows.get(fresh.id);
        const next = sent && sent.endedAt === undefined ? merge(sent, fresh) : fresh;
        if (!sent || !sameRow(sent, next)) {
          this.rows.set(next.id, next);
          upserts.push(next);
        }
      }
    }

    for (const [id, row] of this.rows) {
      if (live.has(id)) continue;
      const source = bySource.get(row.connection);
      if (!source) {
        this.rows.delete(id);
        removed.push(id);
      } else if (row.endedAt === undefined) {
        const end = endOf(row, source, now);
        this.rows.set(id, { ...row, endedAt: now, end });
        ended.push({ id, endedAt: now, end });
      }
    }

    removed.push(...this.prune(now));
    // A settled end is sent only if the row is still there and still ended (its key may have come back).
    return { upserts, ended: ended.filter((e) => this.rows.get(e.id)?.endedAt !== undefined), removed };
  }

  /** Ended rows whose end is still `unknown`: the panel asks etcd whether their lease is alive. */
  unsettled(): TimelineRow[] {
    return [...this.rows.values()].filter((r) => r.end === 'unknown');
  }

  /** How an `unknown` end turned out; sent with the next update. */
  settle(id: string, end: TimelineEnd): void {
    const row = this.rows.get(id);
    if (!row || row.endedAt === undefined || row.end === end) return;
    this.rows.set(id, { ...row, end });
    this.pendingEnds.push({ id, endedAt: row.endedAt, end });
  }

  /** Forgets ended rows older than the kept window, and the oldest beyond the cap. */
  private prune(now: number): string[] {
    const removed: string[] = [];
    const endedRows: TimelineRow[] = [];
    for (const [id, row] of this.rows) {
      if (row.endedAt === undefined) continue;
      if (now - row.endedAt > this.options.keepEndedMs) {
        this.rows.delete(id);
        removed.push(id);
      } else endedRows.push(row);
    }
    const max = this.options.maxEnded ?? DEFAULT_MAX_ENDED;
    if (endedRows.length > max) {
      endedRows.sort((a, b) => a.endedAt! - b.endedAt! || (a.id < b.id ? -1 : 1));
      for (const row of endedRows.slice(0, endedRows.length - max)) {
        this.rows.delete(row.id);
        removed.push(row.id);
      }
    }
    return removed;
  }
}

/** How a row whose key just went ended, as far as the last lease sample tells. */
function endOf(row: TimelineRow, source: TimelineSource, now: number): TimelineEnd {
  if (!row.lease) return 'released';
  const info = source.lease(row.lease);
  if (info && (info.state === 'expired' || remainingTtl(info, now) <= 0)) return 'revokedOrExpired';
  // The key was deleted while the lease had time left: Go's Unlock, or a revoke. Only etcd can say which.
  return 'unknown';
}

/**
 * The fresh row, but with the sent countdown kept when the new sample only confirms it (so that a sweep of healthy
 * leases sends nothing), and the earliest first-seen time (a key's first sighting can only move back).
 */
function merge(sent: TimelineRow, fresh: TimelineRow): TimelineRow {
  let row = fresh;
  if (sent.firstSeenAt < fresh.firstSeenAt) row = { ...row, firstSeenAt: sent.firstSeenAt, firstSeenExact: sent.firstSeenExact };
  if (
    sent.leaseState === 'alive' &&
    fresh.leaseState === 'alive' &&
    sent.grantedTtl === fresh.grantedTtl &&
    sameNumbers(sent.refreshes, fresh.refreshes) &&
    sent.ttl !== undefined &&
    fresh.ttl !== undefined &&
    sent.observedAt !== undefined &&
    fresh.observedAt !== undefined
  ) {
    const expected = sent.ttl - (fresh.observedAt - sent.observedAt) / 1000;
    if (Math.abs(expected - fresh.ttl) <= TTL_SLACK_S) row = { ...row, ttl: sent.ttl, observedAt: sent.observedAt };
  }
  return row;
}

const FIELDS: readonly (keyof TimelineRow)[] = [
  'connection',
  'lock',
  'lockName',
  'key',
  'kind',
  'role',
  'position',
  'lease',
  'createRevision',
  'firstSeenAt',
  'firstSeenExact',
  'heldSince',
  'leaseState',
  'grantedTtl',
  'ttl',
  'observedAt',
  'stalled',
  'longHold',
  'endedAt',
  'end',
];

function sameRow(a: TimelineRow, b: TimelineRow): boolean {
  return FIELDS.every((f) => a[f] === b[f]) && sameNumbers(a.refreshes, b.refreshes);
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  return a === b || (a.length === b.length && a.every((x, i) => x === b[i]));
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

import { compareRows, type PastMessage, type TimelineDiff, type TimelineEnd, type TimelineRow, type TimelineRowEnd } from '../shared/timelineData';
import type { LockHistory } from './history';
import { displayKey, keyId } from './keys';
import { endOfGone, evidenceOf, fellBelow } from './holdEndEvidence';
import type { LeaseInfo } from './leaseInfo';
import { lockHealth, type LockClock } from './lockHealth';
import { endsWithOwner, members, type LockState } from './lockState';
import type { Mutable } from '../shared/mutable';

/**
 * The lease timeline's data: lock states, lease samples and observed ages turned into one row per lock member and
 * lease, and the difference between two such pictures, so that the panel sends only what changed. Pure: no vscode, no
 * etcd, no timers; `now` is always passed in.
 */

/** What one connection contributes: its live locks, its sampled leases and its clock of observed ages. */
export interface TimelineSource {
  readonly connection: string;
  /**
   * Whether members are attached to leases that outlive their keys and can be revoked (etcd): then a row shows its
   * lease, and a key deleted while its lease had time left may have been released or revoked (only the store can say).
   * Otherwise the row shows its owner, and such a key was released.
   */
  readonly hasLeases: boolean;
  readonly locks: readonly LockState[];
  readonly lease: (id: string) => LeaseInfo | undefined;
  readonly clock: LockClock;
  /** LockLens itself ended the member with this lease or owner (ownEnds.ts): its bar ends `forceReleased`. */
  readonly ownEnd?: (lease: string, owner: string) => boolean;
  /** Whether a session or connection lived at the watch's last read (`LockWatch.ownerLives`). */
  readonly ownerLives?: (id: string) => boolean | undefined;
  /** Whether the lock is in a confirmed deadlock (the connection's diagnosis); absent: nothing is diagnosed. */
  readonly deadlocked?: (lockId: string) => boolean;
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

/** A lock's texts for people and its rows' ids, in member order. */
interface LockTexts {
  readonly connection: string;
  readonly lockName: string;
  readonly keys: readonly string[];
  readonly ids: readonly string[];
}

/**
 * The model hands out the same LockState object until the lock changes, so its texts and ids are made once per
 * change rather than once per update (decoding and escaping keys is most of the cost of an update).
 */
const lockTexts = new WeakMap<LockState, LockTexts>();

function textsOf(connection: string, lock: LockState): LockTexts {
  let texts = lockTexts.get(lock);
  if (texts?.connection !== connection) {
    const ms = members(lock);
    texts = { connection, lockName: displayKey(lock.name), keys: ms.map((m) => displayKey(m.key)), ids: ms.map((m) => rowId(connection, lock.id, m.key, m.lease)) };
    lockTexts.set(lock, texts);
  }
  return texts;
}

/** The rows of one connection now, in lock order then queue order. */
export function timelineRows(source: TimelineSource, longHoldMs: number, now: number): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (const lock of source.locks) {
    const texts = textsOf(source.connection, lock);
    const deadlock = source.deadlocked?.(lock.id) ?? false;
    for (const [i, h] of lockHealth(lock, source.clock, source.lease, { longHoldMs }, now).entries()) {
      const m = h.member;
      // A waiter's `since` is when its key was first seen; the holder's is when it began to hold.
      const seen = h.position === 0 ? source.clock.seen(m) : h.since;
      const info = h.lease;
      const row: Mutable<TimelineRow> = {
        id: texts.ids[i],
        connection: source.connection,
        lock: lock.id,
        lockName: texts.lockName,
        key: texts.keys[i],
        kind: lock.kind,
        role: h.role,
        position: h.position,
        lease: source.hasLeases ? m.lease : '',
        owner: source.hasLeases ? '' : m.owner,
        token: m.token,
        firstSeenAt: seen.at,
        firstSeenExact: seen.exact,
        refreshes: info?.refreshes ?? [],
        stalled: info?.state === 'alive' && info.stalled,
        longHold: h.troubles.includes('longHold'),
        deadlock,
      };
      if (endsWithOwner(m)) row.endsWithOwner = true;
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
  /**
   * Each row's last countdown that found what it expires with alive: a sweep that finds a Redis key gone before the
   * read that ends its row replaces the row's countdown, and only the last alive one tells an expiry from a delete.
   */
  private readonly countdowns = new Map<string, Countdown>();
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
          if (next.leaseState === 'alive' && next.ttl !== undefined && next.observedAt !== undefined) {
            const last = this.countdowns.get(next.id);
            const shortened = (last?.shortened ?? false) || (last !== undefined && fellBelow(last, next.ttl, next.observedAt));
            this.countdowns.set(next.id, { ttl: next.ttl, observedAt: next.observedAt, shortened });
          }
          this.rows.set(next.id, next);
          upserts.push(next);
        }
      }
    }

    for (const [id, row] of this.rows) {
      if (live.has(id)) continue;
      const source = bySource.get(row.connection);
      if (!source) {
        this.forget(id);
        removed.push(id);
      } else if (row.endedAt === undefined) {
        const end = endOf(row, this.countdowns.get(id), source, now);
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

  private forget(id: string): void {
    this.rows.delete(id);
    this.countdowns.delete(id);
  }

  /** Forgets ended rows older than the kept window, and the oldest beyond the cap. */
  private prune(now: number): string[] {
    const removed: string[] = [];
    const endedRows: TimelineRow[] = [];
    for (const [id, row] of this.rows) {
      if (row.endedAt === undefined) continue;
      if (now - row.endedAt > this.options.keepEndedMs) {
        this.forget(id);
        removed.push(id);
      } else endedRows.push(row);
    }
    const max = this.options.maxEnded ?? DEFAULT_MAX_ENDED;
    if (endedRows.length > max) {
      endedRows.sort((a, b) => a.endedAt! - b.endedAt! || (a.id < b.id ? -1 : 1));
      for (const row of endedRows.slice(0, endedRows.length - max)) {
        this.forget(row.id);
        removed.push(row.id);
      }
    }
    return removed;
  }
}

interface Countdown {
  readonly ttl: number;
  readonly observedAt: number;
  /** A sample of the row found it moved earlier (holdEndEvidence.ts's `fellBelow`). */
  readonly shortened: boolean;
}

/** The evidence of a row that ends with its owner's session or connection: only whether that lived tells. */
const GONE_WITH_OWNER = { lease: '', secondsLeft: undefined, leaseGone: false, expiryEvents: false, expiryTold: false, endsWithOwner: true };

/**
 * How a row whose key just went ended, as far as the last TTL sample tells (holdEndEvidence.ts decides): a lease's
 * fresh sample, or the last alive countdown of its row (a key's own TTL, the row keeping no id of it: a Redis
 * `expired` event is not seen here, the countdown that ran out tells the expiry), or whether its owner's session or
 * connection lived on. `unknown` until the host has asked etcd about a lease never sampled, or where nothing tells.
 */
function endOf(row: TimelineRow, countdown: Countdown | undefined, source: TimelineSource, now: number): TimelineEnd {
  if (source.ownEnd?.(row.lease, row.owner)) return 'forceReleased';
  const store = { hasLeases: source.hasLeases, sampledTtls: row.ttl !== undefined };
  if (row.endsWithOwner) return endOfGone({ ...GONE_WITH_OWNER, ownerLives: source.ownerLives?.(row.owner) }, store) ?? 'unknown';
  if (source.hasLeases) return endOfGone(evidenceOf(row.lease, row.lease ? source.lease(row.lease) : undefined, now), store) ?? 'unknown';
  const secondsLeft = countdown && countdown.ttl - (now - countdown.observedAt) / 1000;
  const evidence = {
    lease: row.ttl === undefined ? '' : row.key,
    secondsLeft,
    leaseGone: row.leaseState === 'expired',
    expiryEvents: false,
    expiryTold: false,
    shortened: countdown?.shortened ?? false,
  };
  return endOfGone(evidence, store) ?? 'unknown';
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

/** Field by field, spelled out: a loop over field names is several times slower, and this runs 2,000 times an update. */
function sameRow(a: TimelineRow, b: TimelineRow): boolean {
  return (
    a.ttl === b.ttl &&
    a.observedAt === b.observedAt &&
    a.role === b.role &&
    a.position === b.position &&
    a.stalled === b.stalled &&
    a.longHold === b.longHold &&
    a.deadlock === b.deadlock &&
    a.leaseState === b.leaseState &&
    a.grantedTtl === b.grantedTtl &&
    a.heldSince === b.heldSince &&
    a.firstSeenAt === b.firstSeenAt &&
    a.firstSeenExact === b.firstSeenExact &&
    a.endedAt === b.endedAt &&
    a.end === b.end &&
    a.kind === b.kind &&
    a.token === b.token &&
    a.lease === b.lease &&
    a.owner === b.owner &&
    a.key === b.key &&
    a.lockName === b.lockName &&
    a.lock === b.lock &&
    a.connection === b.connection &&
    sameNumbers(a.refreshes, b.refreshes)
  );
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  return a === b || (a.length === b.length && a.every((x, i) => x === b[i]));
}

/** Replayed holds drawn, the newest: a webview list of tens of thousands of rows helps nobody. */
export const MAX_PAST_HOLDS = 500;

/** A replayed history as the timeline draws it: keys as text, waiters counted, the newest MAX_PAST_HOLDS holds. */
export function pastMessage(history: LockHistory, connection: string): PastMessage {
  const holds = history.holds.slice(-MAX_PAST_HOLDS);
  return {
    type: 'past',
    connection,
    lockName: displayKey(history.name),
    fromRevision: history.fromRevision,
    toRevision: history.toRevision,
    compactedAt: history.compactedAt,
    skippedBefore: history.skippedBefore,
    endedOnSilence: history.endedOnSilence,
    older: history.holds.length - holds.length,
    holds: holds.map((h) => ({
      key: displayKey(h.key),
      lease: h.lease,
      token: h.token,
      acquiredRevision: h.acquiredRevision,
      beforeHistory: h.beforeHistory,
      endedRevision: h.endedRevision,
      end: h.end,
      waiters: h.waiterCount,
    })),
  };
}

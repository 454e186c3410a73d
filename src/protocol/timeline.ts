/**
 * The one message protocol between the timeline panel's host (src/extension/timelinePanel.ts) and its webview
 * (webview/timeline/). Both sides import this file, so a wrong message is a compile error; it imports nothing from
 * vscode, Node or the core, because the browser bundle includes it too (only the plain data of src/shared/).
 *
 * The host sends the whole picture once (`init`, when the webview says `ready`: on first load, after it was hidden,
 * after a resume), then only what changed (`diff`, coalesced). Each side checks what it receives with the guards at the
 * end of this file: a message is data, never trusted to have the shape its type claims.
 */

import { HOLD_ENDS } from '../shared/holdEnds';
import type { PastHold, PastMessage, TimelineDiff, TimelineRow, TimelineRowEnd } from '../shared/timelineData';

export interface TimelineConfig {
  /** Holders holding longer are flagged (setting locklens.longHoldSeconds). */
  readonly longHoldMs: number;
  /** Revoke is offered only when false (setting locklens.readOnly). */
  readonly readOnly: boolean;
  /** The time windows offered, in ms; ended bars are kept for the longest. */
  readonly windowsMs: readonly number[];
}

/** Every text the webview shows that is not data, localised by the host. `{0}` marks an argument. */
export interface TimelineStrings {
  readonly filterPlaceholder: string;
  readonly window: string;
  readonly pause: string;
  readonly resume: string;
  readonly paused: string;
  readonly summary: string; // Live: {0} · locks: {1}
  readonly empty: string;
  readonly noMatch: string;
  readonly rowsLabel: string;
  readonly holder: string;
  readonly waiter: string;
  readonly leader: string;
  readonly candidate: string;
  readonly single: string;
  readonly lease: string; // lease {0}
  readonly noLease: string;
  readonly owner: string; // owner {0}
  readonly token: string; // token {0}
  readonly ttl: string; // TTL {0}s
  readonly ttlOf: string; // TTL {0}s of {1}s
  readonly ttlUnknown: string;
  readonly stalled: string;
  readonly longHold: string;
  readonly expired: string;
  readonly endedReleased: string;
  readonly endedRevoked: string;
  readonly endedExpired: string;
  readonly endedForceReleased: string;
  readonly endedOwnerLost: string;
  readonly endedUnknown: string;
  readonly refreshes: string; // {0} renewals seen
  readonly firstSeen: string; // first seen {0} ago
  readonly firstSeenInexact: string; // already there when LockLens looked, ≥ {0} ago
  readonly waiting: string; // waiting #{0}
  readonly reveal: string;
  readonly copyLeaseId: string;
  readonly revoke: string;
  readonly forceRelease: string;
  readonly selectHint: string;
  readonly now: string;
  readonly legend: string;
  /** The tag on the header of a lock in a confirmed deadlock, and what the legend says of it. */
  readonly deadlock: string;
  readonly deadlockLegend: string;
  readonly lockQueue: string;
  readonly lockElection: string;
  readonly lockSingle: string;
  readonly lockReadWrite: string;
  readonly lockSemaphore: string;
  readonly liveCount: string; // {0} live
  readonly seconds: string; // {0}s
  readonly minutes: string; // {0}m
  readonly minutesSeconds: string; // {0}m {1}s
  readonly hours: string; // {0}h
  readonly actions: string;
  readonly pastTitle: string; // Past of {0} on {1}: revisions {2} to {3}
  readonly pastCompacted: string; // History before revision {0} was compacted: older holds are not shown.
  readonly pastEmpty: string;
  readonly pastClose: string;
  readonly pastHolding: string; // holding since revision {0}
  readonly pastSpan: string; // revision {0} → {1}
  readonly pastBefore: string; // before revision {0}
  readonly pastWaiting: string; // {0} waiting
  readonly pastLabel: string; // the list's label for screen readers
  readonly pastOlder: string; // {0} older holds not drawn
  readonly pastSkipped: string; // Read from revision {0} on, as chosen: older holds are not shown.
  readonly pastSilence: string; // the read ended after a quiet time
}

export interface InitMessage {
  readonly type: 'init';
  /** The host's clock when sent: the webview corrects for a browser on another machine (code-server). */
  readonly sentAt: number;
  readonly rows: readonly TimelineRow[];
  readonly config: TimelineConfig;
  readonly strings: TimelineStrings;
  /** Pre-fill the lock filter (opened from a lock in the tree). */
  readonly filter?: string;
}

export interface DiffMessage extends TimelineDiff {
  readonly type: 'diff';
  readonly sentAt: number;
}

export interface ConfigMessage {
  readonly type: 'config';
  readonly config: TimelineConfig;
}

export interface FilterMessage {
  readonly type: 'filter';
  readonly filter: string;
}

export type HostMessage = InitMessage | DiffMessage | ConfigMessage | FilterMessage | PastMessage;

/** Asks for an `init`: on load, and on resume after a pause. */
export interface ReadyMessage {
  readonly type: 'ready';
}

/**
 * What a bar's member can be done to, named for what ends it: a lease's ID copied or the lease revoked (etcd), or,
 * for a holder without one (a Redis token, a ZooKeeper node, a database session), a force release.
 */
export type RowAction = 'reveal' | 'copyLeaseId' | 'revoke' | 'forceRelease';

/** Per-row actions name the row; the host looks it up and acts only on what it knows. */
export interface RowActionMessage {
  readonly type: RowAction;
  readonly row: string;
}

/** The user closed the past section: the host stops sending it again after a reload. */
export interface ClosePastMessage {
  readonly type: 'closePast';
}

export type WebviewMessage = ReadyMessage | RowActionMessage | ClosePastMessage;

/** What the webview keeps across hide/show (`vscode.setState`); the data itself comes back in `init`. */
export interface TimelineViewState {
  readonly filter: string;
  readonly windowMs: number;
  readonly paused: boolean;
  readonly selected?: string;
  readonly scrollTop: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Applying a diff: the webview keeps its rows with exactly this, and the unit tests check it against the reducer.

/** Applies a diff to rows kept by id, in place. Ends and removals of unknown rows are ignored. */
export function applyDiff(rows: Map<string, TimelineRow>, diff: TimelineDiff): void {
  for (const row of diff.upserts) rows.set(row.id, row);
  for (const e of diff.ended) {
    const row = rows.get(e.id);
    if (row) rows.set(e.id, { ...row, endedAt: e.endedAt, end: e.end });
  }
  for (const id of diff.removed) rows.delete(id);
}

export function isEmptyDiff(diff: TimelineDiff): boolean {
  return diff.upserts.length === 0 && diff.ended.length === 0 && diff.removed.length === 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Guards. Cheap enough for 2,000 rows; they check every field either side reads.

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const optNum = (v: unknown) => v === undefined || isNum(v);
const ROLES: readonly string[] = ['holder', 'waiter', 'leader', 'candidate', 'single'];
const KINDS: readonly string[] = ['queue', 'single', 'election', 'readwrite', 'semaphore'];
const ENDS: readonly string[] = [...HOLD_ENDS, 'unknown'];

export function isTimelineRow(v: unknown): v is TimelineRow {
  return (
    isObj(v) &&
    isStr(v.id) &&
    isStr(v.connection) &&
    isStr(v.lock) &&
    isStr(v.lockName) &&
    isStr(v.key) &&
    KINDS.includes(v.kind as string) &&
    ROLES.includes(v.role as string) &&
    isNum(v.position) &&
    isStr(v.lease) &&
    isStr(v.owner) &&
    (v.token === null || isNum(v.token)) &&
    (v.endsWithOwner === undefined || v.endsWithOwner === true) &&
    isNum(v.firstSeenAt) &&
    isBool(v.firstSeenExact) &&
    optNum(v.heldSince) &&
    (v.leaseState === undefined || v.leaseState === 'alive' || v.leaseState === 'expired') &&
    optNum(v.grantedTtl) &&
    optNum(v.ttl) &&
    optNum(v.observedAt) &&
    Array.isArray(v.refreshes) &&
    v.refreshes.every(isNum) &&
    isBool(v.stalled) &&
    isBool(v.longHold) &&
    isBool(v.deadlock) &&
    optNum(v.endedAt) &&
    (v.end === undefined || ENDS.includes(v.end as string))
  );
}

function isRowEnd(v: unknown): v is TimelineRowEnd {
  return isObj(v) && isStr(v.id) && isNum(v.endedAt) && ENDS.includes(v.end as string);
}

function isConfig(v: unknown): v is TimelineConfig {
  return isObj(v) && isNum(v.longHoldMs) && isBool(v.readOnly) && Array.isArray(v.windowsMs) && v.windowsMs.length > 0 && v.windowsMs.every((w) => isNum(w) && w > 0);
}

function isStrings(v: unknown): v is TimelineStrings {
  return isObj(v) && Object.values(v).every(isStr) && isStr(v.filterPlaceholder) && isStr(v.summary);
}

/** The webview's check of what the host sent. */
export function isHostMessage(v: unknown): v is HostMessage {
  if (!isObj(v)) return false;
  switch (v.type) {
    case 'init':
      return isNum(v.sentAt) && Array.isArray(v.rows) && v.rows.every(isTimelineRow) && isConfig(v.config) && isStrings(v.strings) && (v.filter === undefined || isStr(v.filter));
    case 'diff':
      return (
        isNum(v.sentAt) &&
        Array.isArray(v.upserts) &&
        v.upserts.every(isTimelineRow) &&
        Array.isArray(v.ended) &&
        v.ended.every(isRowEnd) &&
        Array.isArray(v.removed) &&
        v.removed.every(isStr)
      );
    case 'config':
      return isConfig(v.config);
    case 'filter':
      return isStr(v.filter);
    case 'past':
      return (
        isStr(v.connection) &&
        isStr(v.lockName) &&
        isNum(v.fromRevision) &&
        isNum(v.toRevision) &&
        (v.compactedAt === null || isNum(v.compactedAt)) &&
        (v.skippedBefore === null || isNum(v.skippedBefore)) &&
        isBool(v.endedOnSilence) &&
        isNum(v.older) &&
        Array.isArray(v.holds) &&
        v.holds.every(isPastHold)
      );
    default:
      return false;
  }
}


function isPastHold(v: unknown): v is PastHold {
  return (
    isObj(v) &&
    isStr(v.key) &&
    isStr(v.lease) &&
    (v.token === null || isNum(v.token)) &&
    isNum(v.acquiredRevision) &&
    isBool(v.beforeHistory) &&
    (v.endedRevision === null || isNum(v.endedRevision)) &&
    (v.end === null || (HOLD_ENDS as readonly unknown[]).includes(v.end)) &&
    isNum(v.waiters)
  );
}

/** The host's check of what the webview sent. */
export function isWebviewMessage(v: unknown): v is WebviewMessage {
  if (!isObj(v)) return false;
  switch (v.type) {
    case 'ready':
    case 'closePast':
      return true;
    case 'reveal':
    case 'copyLeaseId':
    case 'revoke':
    case 'forceRelease':
      return isStr(v.row) && v.row.length > 0 && v.row.length < 100_000;
    default:
      return false;
  }
}

/** The saved view state, or undefined when it is not one (an older version's, or nothing). */
export function isViewState(v: unknown): v is TimelineViewState {
  return isObj(v) && isStr(v.filter) && isNum(v.windowMs) && isBool(v.paused) && isNum(v.scrollTop) && (v.selected === undefined || isStr(v.selected));
}

/** `{0}`, `{1}`… replaced by the arguments, as vscode.l10n.t does. */
export function formatString(template: string, ...args: readonly (string | number)[]): string {
  return template.replace(/\{(\d+)\}/g, (m, i: string) => (Number(i) < args.length ? String(args[Number(i)]) : m));
}

/**
 * The lock records as they are kept across restarts: their JSON format (what is saved of each connection) and its
 * checks, strict enough that a damaged file is never half believed.
 */
import { HOLD_ENDS } from './history';
import type { Holding, LockRecord, Wait } from './holdObservation';
import type { RevisionTimes } from './revisionTimes';

const FORMAT = 1;

/** What is kept of a connection across restarts. */
export interface KeptConnection {
  readonly locks: Map<string, LockRecord>;
  revisionTimes: RevisionTimes;
}

/** A lock record as saved: its waits as [identity, wait] pairs. */
type SavedLock = Omit<LockRecord, 'waits'> & { readonly waits: [string, Wait][] };
interface SavedConnection {
  readonly locks: [string, SavedLock][];
  readonly revisionTimes: [number, number][];
}
export interface SavedRecords {
  readonly format: number;
  readonly connections: Record<string, SavedConnection>;
}

/** The records as JSON. TTL samples are left out: stale by a restart. */
export function savedRecords(kept: Iterable<[string, KeptConnection]>): SavedRecords {
  const connections: Record<string, SavedConnection> = {};
  for (const [name, c] of kept) {
    const locks = [...c.locks].map(([id, r]): [string, SavedLock] => [id, withoutSamples(r)]);
    connections[name] = { locks, revisionTimes: c.revisionTimes };
  }
  return { format: FORMAT, connections };
}

function withoutSamples(r: LockRecord): SavedLock {
  const unsampled = (h: Holding): Holding => ({ ...h, sample: null });
  const others = r.otherHolders && { otherHolders: r.otherHolders.map(unsampled) };
  return { ...r, current: r.current && unsampled(r.current), ...others, waits: [...r.waits] };
}

/** Records saved by `savedRecords`; throws on anything else. */
export function loadedRecords(json: unknown): Map<string, KeptConnection> {
  if (!isObj(json) || json.format !== FORMAT || !isObj(json.connections)) throw new Error('not LockLens lock records');
  const kept = new Map<string, KeptConnection>();
  for (const [name, c] of Object.entries(json.connections)) {
    if (!isObj(c) || !Array.isArray(c.locks) || !isRevisionTimes(c.revisionTimes)) throw new Error(`damaged records of ${name}`);
    const locks = new Map<string, LockRecord>();
    for (const entry of c.locks) {
      if (!Array.isArray(entry) || typeof entry[0] !== 'string' || !isSavedLock(entry[1])) throw new Error(`damaged lock record in ${name}`);
      locks.set(entry[0], { ...entry[1], waits: new Map(entry[1].waits) });
    }
    kept.set(name, { locks, revisionTimes: c.revisionTimes });
  }
  return kept;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isNumOrNull = (v: unknown) => v === null || isNum(v);
const isNums = (v: unknown) => Array.isArray(v) && v.every(isNum);
const isLongest = (v: unknown) => v === null || (isObj(v) && isNum(v.ms) && typeof v.who === 'string');

function isRevisionTimes(v: unknown): v is RevisionTimes {
  return Array.isArray(v) && v.every((p) => Array.isArray(p) && p.length === 2 && isNum(p[0]) && isNum(p[1]));
}

function isSample(v: unknown): boolean {
  return isObj(v) && isNum(v.ttl) && isNum(v.observedAt) && typeof v.gone === 'boolean' && typeof v.stalled === 'boolean';
}

function isHold(v: unknown): boolean {
  return (
    isObj(v) &&
    typeof v.key === 'string' &&
    (v.convention === undefined || typeof v.convention === 'string') &&
    typeof v.owner === 'string' &&
    typeof v.lease === 'string' &&
    isNumOrNull(v.token) &&
    isNum(v.acquiredAt) &&
    typeof v.acquiredExact === 'boolean' &&
    isNumOrNull(v.acquiredRevision) &&
    isNumOrNull(v.waitedMs) &&
    isNumOrNull(v.endedAt) &&
    typeof v.endedExact === 'boolean' &&
    isNumOrNull(v.endedRevision) &&
    (v.end === null || (HOLD_ENDS as readonly unknown[]).includes(v.end)) &&
    typeof v.stalled === 'boolean'
  );
}

function isHolding(v: unknown): boolean {
  return isObj(v) && typeof v.member === 'string' && typeof v.lease === 'string' && (v.sample === null || isSample(v.sample));
}

function isWait(v: unknown): boolean {
  return Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && isObj(v[1]) && isNum(v[1].since) && typeof v[1].exact === 'boolean' && typeof v[1].who === 'string';
}

function isSavedLock(v: unknown): v is SavedLock {
  if (!isObj(v) || !Array.isArray(v.holds) || !v.holds.every(isHold) || !Array.isArray(v.waits) || !v.waits.every(isWait)) return false;
  const holding = v.current === null ? [] : [v.current, ...(Array.isArray(v.otherHolders) ? v.otherHolders : [])];
  // Each holder now has an open hold (a semaphore's several): anything else would be read as a hold that never ends.
  const currentOk =
    (v.otherHolders === undefined || (Array.isArray(v.otherHolders) && v.current !== null)) &&
    holding.every(isHolding) &&
    v.holds.filter((h) => (h as { endedAt: unknown }).endedAt === null).length >= holding.length;
  return (
    currentOk &&
    [v.since, v.lastActive, v.holdsSeen, v.holdCount, v.waitCount, v.transitions, v.stalls].every(isNum) &&
    [v.holdMs, v.waitMs, v.handoffs].every(isNums) &&
    isLongest(v.longestHold) &&
    isLongest(v.longestWait)
  );
}

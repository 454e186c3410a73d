/**
 * The advisory locks of the connection's database as one statement reads them: pg_locks joined with
 * pg_stat_activity, one row per session and key (granted, or waiting), turned into locks. A lock's holders are its
 * granted rows (several when shared: pg_advisory_lock_shared), its waiters its ungranted rows in the order they will
 * get it (see `waitOrder`). Every member is a session: its key is `pid <pid>`, its owner the pid, and it expires with
 * its session (never "held forever": a session lock ends with its connection).
 *
 * pg_locks does not say whether an advisory lock was taken for the session (`pg_advisory_lock`) or for the current
 * transaction (`pg_advisory_xact_lock`, Flyway's): both look the same, so both are shown the same.
 */
import { compareText } from '../../shared/compareText';
import { NO_VALUE, type LockMember, type LockState, type SessionInfo } from '../lockState';
import { namesOfRow, rowOfKey, type AdvisoryKey } from './advisoryKeys';

const CONVENTION = 'pg-advisory';
/** What pg_stat_activity shows as the query of a session the reader may not see. */
export const INSUFFICIENT_PRIVILEGE = '<insufficient privilege>';
/** At most this much of a session's statement is read (track_activity_query_size is 1 KB by default anyway). */
const QUERY_CHARS = 4096;

export interface AdvisoryRow {
  /** oids as text (int8 casts: pg returns them as strings). */
  readonly classid: string;
  readonly objid: string;
  readonly objsubid: number;
  /** null for a prepared transaction's locks (two-phase commit). */
  readonly pid: number | null;
  readonly virtualtransaction: string;
  readonly granted: boolean;
  readonly shared: boolean;
  /** epoch ms; null before PostgreSQL 14, which does not record when a wait began. */
  readonly waitstart: number | null;
  /** Before PostgreSQL 14, for a waiting row: pg_blocking_pids(pid). null otherwise. */
  readonly blocked_by: number[] | null;
  readonly usename: string | null;
  readonly application_name: string | null;
  readonly client_addr: string | null;
  readonly client_port: number | null;
  /** epoch ms */
  readonly backend_start: number | null;
  readonly state: string | null;
  /** On one row of each session only (see advisoryQuery): ReadingMembers hands it to the session's other rows. */
  readonly query: string | null;
}

/**
 * The statement, for a server of `version` (server_version_num): every advisory lock of the current database, or
 * those of one key (`$1` classid, `$2` objid, `$3` objsubid).
 */
export function advisoryQuery(version: number, oneKey: boolean): string {
  const hasWaitstart = version >= 140000;
  const waitstart = hasWaitstart ? '(extract(epoch FROM l.waitstart) * 1000)::float8' : 'NULL::float8';
  // pg_blocking_pids takes every lock-manager partition lock: asked only where waitstart is missing, of waiters only.
  const blockedBy = hasWaitstart ? 'NULL::int4[]' : 'CASE WHEN l.granted THEN NULL ELSE pg_blocking_pids(l.pid) END';
  // A session's statement (up to 4 KB) is sent on one of its rows, not on each: a pool's sessions hold hundreds of
  // keys each, and a poll read and decoded each statement that many times (docs/BENCHMARKS.md, serve, the third round).
  return `SELECT l.classid::int8::text AS classid, l.objid::int8::text AS objid, l.objsubid::int4 AS objsubid, l.pid,
  l.virtualtransaction, l.granted, l.mode = 'ShareLock' AS shared, ${waitstart} AS waitstart, ${blockedBy} AS blocked_by,
  a.usename::text AS usename, a.application_name, host(a.client_addr) AS client_addr, a.client_port,
  (extract(epoch FROM a.backend_start) * 1000)::float8 AS backend_start, a.state,
  CASE WHEN row_number() OVER (PARTITION BY l.pid) = 1 THEN left(a.query, ${QUERY_CHARS}) END AS query
FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())${
    oneKey ? '\n  AND l.classid = $1::int8::oid AND l.objid = $2::int8::oid AND l.objsubid = $3::int2' : ''
  }`;
}

/** The statement's parameters for one key. */
export function keyParams(key: AdvisoryKey): string[] {
  const { classid, objid, objsubid } = rowOfKey(key);
  return [classid.toString(), objid.toString(), String(objsubid)];
}

function clientOf(row: AdvisoryRow): string | undefined {
  if (row.client_port === -1) return 'local socket';
  if (row.client_addr === null) return undefined;
  return row.client_addr.includes(':') ? `[${row.client_addr}]:${row.client_port}` : `${row.client_addr}:${row.client_port}`;
}

/** What pg_stat_activity says about a session (`query` its statement), without what the reader may not see. */
export function sessionOf(row: AdvisoryRow, query = row.query): SessionInfo {
  // Assigned field by field in SessionInfo's order (which JSON output keeps): a listing builds one per session.
  const session: { -readonly [K in keyof SessionInfo]: SessionInfo[K] } = {};
  if (row.usename !== null) session.user = row.usename;
  if (row.application_name) session.application = row.application_name;
  const client = clientOf(row);
  if (client !== undefined) session.client = client;
  if (row.backend_start !== null) session.connectedAt = Math.floor(row.backend_start);
  if (row.state !== null) session.state = row.state;
  if (query !== null && query !== INSUFFICIENT_PRIVILEGE) session.query = query;
  if (row.waitstart !== null) session.waitingSince = Math.floor(row.waitstart);
  return session;
}

/** A session's one member of a lock (a session that holds a key twice, shared and exclusive, is shown once, exclusive). */
function memberOf(row: AdvisoryRow, mode: 'read' | 'write' | undefined, query: string | null): LockMember {
  const owner = row.pid === null ? '' : String(row.pid);
  return {
    key: Buffer.from(row.pid === null ? `prepared transaction ${row.virtualtransaction}` : `pid ${row.pid}`),
    convention: CONVENTION,
    owner,
    // A session's locks end with it; a prepared transaction's only when it is committed or rolled back.
    expiresWith: owner ? 'connection' : 'nothing',
    lease: owner,
    token: null,
    holds: null,
    ...(mode ? { mode } : {}),
    session: sessionOf(row, query),
    valuePreview: NO_VALUE,
    valueSize: 0,
  };
}

/**
 * The members of one reading. A session is the same member in every lock it holds in one mode (pg_stat_activity is
 * read once per statement), so that member is built once and shared by those locks; a waiting row's member says since
 * when it waits, and is its own.
 */
class ReadingMembers {
  private readonly shared = new Map<number | string, LockMember>();
  /** Each session's statement, from the one row of it that has it. */
  private readonly queries = new Map<number, string>();

  constructor(rows: readonly AdvisoryRow[]) {
    for (const r of rows) if (r.pid !== null && r.query !== null) this.queries.set(r.pid, r.query);
  }

  of(row: AdvisoryRow, mode: 'read' | 'write' | undefined): LockMember {
    const query = row.pid === null ? row.query : (this.queries.get(row.pid) ?? null);
    if (row.pid === null || row.waitstart !== null) return memberOf(row, mode, query);
    const id = mode ? `${mode} ${row.pid}` : row.pid;
    let member = this.shared.get(id);
    if (!member) this.shared.set(id, (member = memberOf(row, mode, query)));
    return member;
  }
}

function byWaitStart(a: AdvisoryRow, b: AdvisoryRow): number {
  // A waiter's waitstart is null for a moment after it begins waiting: it came last.
  const wa = a.waitstart ?? Infinity;
  const wb = b.waitstart ?? Infinity;
  return wa !== wb ? wa - wb : (a.pid ?? 0) - (b.pid ?? 0);
}

/**
 * Before PostgreSQL 14 no wait start is recorded, and pid order is not wait order. pg_blocking_pids(waiter) lists the
 * sessions holding a conflicting lock and those queued ahead of it asking for a conflicting mode, so the waiters among
 * them are the ones it waits behind, and the longest chain of such in front of it gives an order in which every waiter
 * comes after those it waits behind: the lock manager's own grant order. Waiters on the same step (shared ones in a
 * row) do not conflict and are granted together; pid orders them.
 */
function byBlockingDepth(waiting: readonly AdvisoryRow[]): (a: AdvisoryRow, b: AdvisoryRow) => number {
  const behind = new Map(waiting.filter((r) => r.pid !== null).map((r) => [r.pid!, r.blocked_by ?? []]));
  const depths = new Map<number, number>();
  const depth = (pid: number, visiting: Set<number>): number => {
    const known = depths.get(pid);
    if (known !== undefined) return known;
    // A cycle (a deadlock the server has not broken yet) is cut where it closes.
    if (visiting.has(pid)) return -1;
    visiting.add(pid);
    const ahead = (behind.get(pid) ?? []).filter((b) => behind.has(b));
    const d = ahead.length ? 1 + Math.max(...ahead.map((b) => depth(b, visiting))) : 0;
    visiting.delete(pid);
    depths.set(pid, d);
    return d;
  };
  return (a, b) => depth(a.pid ?? 0, new Set()) - depth(b.pid ?? 0, new Set()) || (a.pid ?? 0) - (b.pid ?? 0);
}

/** Waiting rows in the order the server will grant them. */
function waitOrder(waiting: readonly AdvisoryRow[]): AdvisoryRow[] {
  const beforeWaitstart = waiting.some((r) => r.blocked_by !== null);
  return [...waiting].sort(beforeWaitstart ? byBlockingDepth(waiting) : byWaitStart);
}

function identity(row: AdvisoryRow): string {
  return row.pid === null ? `x${row.virtualtransaction}` : `p${row.pid}`;
}

/**
 * Its rows' members: the holders (one per session, exclusive ones first) and the waiters in grant order. Most keys have
 * one row, whose session is its only member.
 */
function membersOf(rows: readonly AdvisoryRow[]): { holders: AdvisoryRow[]; waiting: AdvisoryRow[] } {
  if (rows.length === 1) return rows[0].granted ? { holders: [rows[0]], waiting: [] } : { holders: [], waiting: [rows[0]] };
  const held = new Map<string, AdvisoryRow>();
  for (const r of rows.filter((r) => r.granted)) {
    const seen = held.get(identity(r));
    if (!seen || (seen.shared && !r.shared)) held.set(identity(r), r);
  }
  const holders = [...held.values()].sort((a, b) => Number(a.shared) - Number(b.shared) || (a.pid ?? 0) - (b.pid ?? 0));
  // A session that holds the key and waits for it in the other mode (shared, asking for exclusive) is shown holding.
  // Every waiting row counts in the order, those shown holding too: a later waiter may wait behind them.
  const order = waitOrder(rows.filter((r) => !r.granted));
  return { holders, waiting: order.filter((r) => !held.has(identity(r))) };
}

function lockOf({ name, altName }: { name: string; altName?: string }, rows: readonly AdvisoryRow[], members: ReadingMembers): LockState {
  const { holders, waiting } = membersOf(rows);
  // Any advisory key can be taken either way, so the kind is what its members make it now: a read/write lock while a
  // shared member holds or waits, a queue otherwise. It changes only with the members (in the same change), never
  // from one poll to the next of the same rows, so it adds no churn to the views.
  const readwrite = anyShared(rows);
  return {
    // A name is ASCII (digits, '-', ':'): its id, its bytes read as latin1 (keyId), is its text.
    id: name,
    name: Buffer.from(name),
    ...(altName ? { altName } : {}),
    kind: readwrite ? 'readwrite' : 'queue',
    holder: holders.length ? memberInMode(holders[0], readwrite, members) : null,
    ...(holders.length > 1 ? { sharedWith: membersOfRows(holders.slice(1), readwrite, members) } : {}),
    waiters: membersOfRows(waiting, readwrite, members),
  };
}

// Loops and functions made once, not callbacks made per lock of every poll: see byName (lockState.ts) on why.
function anyShared(rows: readonly AdvisoryRow[]): boolean {
  for (const r of rows) if (r.shared) return true;
  return false;
}

function memberInMode(r: AdvisoryRow, readwrite: boolean, members: ReadingMembers): LockMember {
  return members.of(r, readwrite ? (r.shared ? 'read' : 'write') : undefined);
}

function membersOfRows(rows: readonly AdvisoryRow[], readwrite: boolean, members: ReadingMembers): LockMember[] {
  const out: LockMember[] = [];
  for (const r of rows) out.push(memberInMode(r, readwrite, members));
  return out;
}

function byEntryName(a: { names: { name: string } }, b: { names: { name: string } }): number {
  return compareText(a.names.name, b.names.name);
}

/** The locks of a reading's rows, in name order. */
export function locksOfRows(rows: readonly AdvisoryRow[]): LockState[] {
  const byKey = new Map<string, { names: { name: string; altName?: string }; rows: AdvisoryRow[] }>();
  for (const r of rows) {
    const id = `${r.classid}/${r.objid}/${r.objsubid}`;
    let entry = byKey.get(id);
    if (!entry) byKey.set(id, (entry = { names: namesOfRow(r.classid, r.objid, r.objsubid), rows: [] }));
    entry.rows.push(r);
  }
  // Names are ASCII: compared as strings, they sort as their bytes do.
  const members = new ReadingMembers(rows);
  const locks: LockState[] = [];
  for (const e of [...byKey.values()].sort(byEntryName)) locks.push(lockOf(e.names, e.rows, members));
  return locks;
}

/**
 * Why some sessions show no client, start or statement: PostgreSQL shows them only to their own role, superusers and
 * members of pg_read_all_stats. undefined when every session was seen whole.
 */
export function hiddenSessions(rows: readonly AdvisoryRow[], currentUser: string): string | undefined {
  const hidden = new Set<number | null>();
  for (const r of rows) if (r.query === INSUFFICIENT_PRIVILEGE) hidden.add(r.pid);
  if (hidden.size === 0) return undefined;
  const sessions = hidden.size === 1 ? '1 session of another role is' : `${hidden.size} sessions of other roles are`;
  return (
    `${sessions} shown without client, start time, state or statement: PostgreSQL shows those only to the session's own role, ` +
    `superusers and members of pg_read_all_stats (GRANT pg_read_all_stats TO "${currentUser}")`
  );
}

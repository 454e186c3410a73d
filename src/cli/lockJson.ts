import type { Capabilities } from '../core/backend';
import { displayKey, isUtf8 } from '../core/keys';
import { remainingTtl, type LeaseInfo } from '../core/leaseInfo';
import { memberLiveness, type Liveness } from '../core/liveness';
import type { LockKind, LockMember, LockState, Permits, SessionInfo } from '../core/lockState';
import { permitCount, permitsSummary } from '../core/permitCount';
import { queryPreview, sessionWho } from '../core/sessionInfo';

/**
 * One member of a lock in `locklens list --json`: the documented shape (`keyBase64` only for non-UTF-8 keys), the
 * same for every store. What a store does not have is null, never made up: Redis has no leases or revisions.
 */
export interface EntryJson {
  key: string;
  keyBase64?: string;
  /** etcd: the lease in hex ('' when the key has none); null for stores without leases. */
  lease: string | null;
  /** etcd: the key's create revision; null for stores without revisions. */
  createRevision: number | null;
  /** Remaining seconds of whatever it expires with; null when nothing expires it or it was not sampled. */
  ttl: number | null;
  /**
   * Who holds or waits: the lease (etcd), the token (redis-py, redlock), the `<uuid>:<thread>` field (Redisson), the
   * session owning the node (ZooKeeper; '' for a persistent node).
   */
  owner: string;
  /** Re-entrant hold count (Redisson), else null. */
  holds: number | null;
  /** The fencing token, where the store has one (etcd: the create revision; ZooKeeper: the node's czxid), else null. */
  token: number | null;
  /** Which library's layout: go-mutex, etcd3-election, redisson-lock, redis-token, shedlock, … */
  convention: string;
  /**
   * Only for several independent Redis instances (redlock): on how many of them this member holds (`agree` of `of`,
   * an unreachable instance not agreeing), which ones, and whether that is a majority. Absent otherwise.
   */
  quorum?: { agree: number; of: number; instances?: string[]; majority: boolean };
  /**
   * Only where the owner is a session (ZooKeeper): the node's data as text (kazoo's identifier, Curator's client IP).
   * A session id says nothing of who holds; this is what does. Absent otherwise.
   */
  data?: string;
  /**
   * Only for SQL stores: the database session behind the member (PostgreSQL `pg_stat_activity`, MySQL's processlist),
   * as far as the reader may see it; times in ISO 8601. Absent for lock-table rows, which name no session.
   */
  session?: SessionJson;
  /**
   * Whether its owner is alive (`alive`, `paused`, `gone`, `unknown`), with the evidence in words: TTL samples, the
   * database session, ZooKeeper's `cons` (see src/core/liveness.ts).
   */
  liveness: Liveness;
}

export interface SessionJson {
  user?: string;
  application?: string;
  client?: string;
  connectedAt?: string;
  state?: string;
  query?: string;
  waitingSince?: string;
}

export interface LockJson {
  name: string;
  /** The same lock's name in another form (a PostgreSQL bigint key as its int pair), where it has one. */
  altName?: string;
  kind: LockState['kind'];
  holder: EntryJson | null;
  waiters: EntryJson[];
  /** Semaphores only: the permits as the store records them (null: only the clients know). */
  permits?: Permits;
  /** Semaphores only: every permit holder, `holder` first (empty where the store does not record them). */
  holders?: EntryJson[];
}

/** A key as the JSON documents give it: text, and its exact bytes in `keyBase64` when they are not UTF-8. */
export function keyJson(key: Buffer): { key: string; keyBase64?: string } {
  return { key: displayKey(key), ...(isUtf8(key) ? {} : { keyBase64: key.toString('base64') }) };
}

export function entryJson(m: LockMember, lease: (id: string) => LeaseInfo | undefined, capabilities: Capabilities, now = Date.now()): EntryJson {
  const info = m.lease ? lease(m.lease) : undefined;
  return {
    ...keyJson(m.key),
    lease: capabilities.owner === 'lease' ? m.lease : null,
    createRevision: 'createRevision' in m && typeof m.createRevision === 'number' ? m.createRevision : null,
    ttl: info ? Math.round(remainingTtl(info, now)) : null,
    owner: m.owner,
    holds: m.holds,
    token: m.token,
    convention: m.convention,
    ...(m.quorum
      ? { quorum: { agree: m.quorum.agree, of: m.quorum.of, ...(m.quorum.instances ? { instances: [...m.quorum.instances] } : {}), majority: m.quorum.agree > m.quorum.of / 2 } }
      : {}),
    ...(capabilities.owner === 'session' ? { data: displayKey(m.valuePreview) } : {}),
    ...(m.session ? { session: sessionJson(m.session) } : {}),
    liveness: memberLiveness(m, info, now),
  };
}

function sessionJson(s: SessionInfo): SessionJson {
  const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
  const json: SessionJson = { ...s, connectedAt: iso(s.connectedAt), waitingSince: iso(s.waitingSince) };
  return JSON.parse(JSON.stringify(json)) as SessionJson;
}

/**
 * A lock as JSON; a read lock's other readers, when there are any, are in `sharedWith`. A semaphore has its `permits`
 * and all its `holders` too.
 */
export function lockJson(lock: LockState, lease: (id: string) => LeaseInfo | undefined, capabilities: Capabilities): LockJson & { sharedWith?: EntryJson[] } {
  const holder = lock.holder ? entryJson(lock.holder, lease, capabilities) : null;
  const sharedWith = (lock.sharedWith ?? []).map((m) => entryJson(m, lease, capabilities));
  return {
    name: displayKey(lock.name),
    ...(lock.altName ? { altName: lock.altName } : {}),
    kind: lock.kind,
    holder,
    ...(sharedWith.length ? { sharedWith } : {}),
    waiters: lock.waiters.map((w) => entryJson(w, lease, capabilities)),
    ...(lock.permits ? { permits: { ...lock.permits }, holders: holder ? [holder, ...sharedWith] : [] } : {}),
  };
}

/** ", 2/3 permits held": a semaphore's part of its heading in a listing. */
function permitsHeading(lock: LockState): string {
  const p = permitCount(lock);
  return p ? `, ${permitsSummary(p)}` : '';
}

/**
 * Who a member is, in its store's terms: its lease (etcd), its session (ZooKeeper: a node goes with it; a persistent
 * node has none and stays until deleted), its database connection (SQL: a PostgreSQL pid, a MySQL connection id, with
 * the application and user behind it; a lock-table row names its holder in a column), or the owner the store keeps
 * (Redis's token or Redisson field).
 */
export function ownerText(e: EntryJson, owner: Capabilities['owner']): string {
  switch (owner) {
    case 'lease':
      return `lease ${e.lease || '(none: never expires)'}`;
    case 'session':
      return `session ${e.owner || '(none: a persistent node, never expires)'}`;
    case 'connection': {
      if (!e.session) return e.owner ? `locked by ${e.owner}` : 'holder not recorded';
      const known = [e.session.application, sessionWho(e.session)].filter(Boolean).join(', ');
      return `connection ${e.owner}${known ? ` (${known})` : ''}`;
    }
    case 'token':
      return `owner ${e.owner}`;
  }
}

/** What the first member of a lock and the others are called in a listing. */
const ROLES: Readonly<Record<LockKind, readonly [string, string]>> = {
  queue: ['holder', 'waiter'],
  single: ['holder', 'waiter'],
  readwrite: ['holder', 'waiter'],
  election: ['leader', 'candidate'],
  semaphore: ['holder', 'waiter'],
};

/** The human form of a lock in a listing (every TTL sampled): a heading and one line per member, holders first. */
export function lockText(lock: LockState, lease: (id: string) => LeaseInfo | undefined, capabilities: Capabilities): string {
  const roles = ROLES[lock.kind];
  const line = (role: string, m: LockMember) => {
    const e = entryJson(m, lease, capabilities);
    const parts = [`  ${role.padEnd(9)} ${e.key}`, ownerText(e, capabilities.owner)];
    if (e.holds !== null) parts.push(`holds ${e.holds}`);
    if (e.token !== null) parts.push(`token ${e.token}`);
    // Without leases (Redis) a listing samples every TTL there is: none is a key with no expiry, held until deleted.
    // A store without TTLs (ZooKeeper: a node lasts as long as its session, whose time left cannot be read) has none
    // to show, and saying "never expires" of a session's node would be false; nor of a SQL session's lock, which ends
    // with its connection (only a lock-table row, which names no session, can be held forever).
    if (capabilities.ttl && m.expiresWith !== 'connection') parts.push(`ttl ${e.ttl !== null ? `${e.ttl}s` : e.lease === null ? 'none (never expires)' : '-'}`);
    if (e.quorum) parts.push(`on ${e.quorum.agree}/${e.quorum.of} instances${e.quorum.majority ? '' : ' (no majority)'}`);
    if (e.data) parts.push(`data ${JSON.stringify(e.data)}`);
    if (e.session?.query) parts.push(`query ${JSON.stringify(queryPreview(e.session.query, 120))}`);
    parts.push(`${e.liveness.state} (${e.liveness.evidence})`);
    return parts.join('  ');
  };
  return [
    `${displayKey(lock.name)}${lock.altName ? ` = ${lock.altName}` : ''}  (${lock.kind}${permitsHeading(lock)}, ${lock.waiters.length} waiting)`,
    ...(lock.holder ? [line(roles[0], lock.holder)] : []),
    ...(lock.sharedWith ?? []).map((e) => line(roles[0], e)),
    ...lock.waiters.map((w) => line(roles[1], w)),
  ].join('\n');
}

import { displayKey, isUtf8 } from '../core/keys';
import { remainingTtl, type LeaseInfo } from '../core/leases';
import type { LockMember, LockState } from '../core/lockModel';

/** One member of a lock in `locklens list --json` (the documented shape; `keyBase64` only for non-UTF-8 keys). */
export interface EntryJson {
  key: string;
  keyBase64?: string;
  lease: string;
  createRevision: number;
  ttl: number | null;
}

export interface LockJson {
  name: string;
  kind: LockState['kind'];
  holder: EntryJson | null;
  waiters: EntryJson[];
}

export function entryJson(m: LockMember, lease: (id: string) => LeaseInfo | undefined, now = Date.now()): EntryJson {
  const info = m.lease ? lease(m.lease) : undefined;
  return {
    key: displayKey(m.key),
    ...(isUtf8(m.key) ? {} : { keyBase64: m.key.toString('base64') }),
    lease: m.lease,
    createRevision: m.createRevision,
    ttl: info ? Math.round(remainingTtl(info, now)) : null,
  };
}

export function lockJson(lock: LockState, lease: (id: string) => LeaseInfo | undefined): LockJson {
  return {
    name: displayKey(lock.name),
    kind: lock.kind,
    holder: lock.holder ? entryJson(lock.holder, lease) : null,
    waiters: lock.waiters.map((w) => entryJson(w, lease)),
  };
}

/** The human form of a lock: a heading and one line per member, holder first. */
export function lockText(lock: LockJson): string {
  const roles = lock.kind === 'election' ? ['leader', 'candidate'] : ['holder', 'waiter'];
  const line = (role: string, e: EntryJson) =>
    `  ${role.padEnd(9)} ${e.key}  lease ${e.lease || '(none: never expires)'}  token ${e.createRevision}  ttl ${e.ttl === null ? '-' : `${e.ttl}s`}`;
  return [
    `${lock.name}  (${lock.kind}, ${lock.waiters.length} waiting)`,
    ...(lock.holder ? [line(roles[0], lock.holder)] : []),
    ...lock.waiters.map((w) => line(roles[1], w)),
  ].join('\n');
}

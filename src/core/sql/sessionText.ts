/**
 * The database session behind a SQL lock's member, as the people deciding about it read it, the same wherever it is
 * named (a LOCKED message, a force release's confirmation, the CLI): which session, its application, who from where,
 * since when, and what it runs or last ran. And whether a member is one a force release may end: a holder.
 */
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import { holderCount, members, type LockMember, type LockState, type SessionInfo } from '../lockState';
import { queryPreview } from '../sessionInfo';

/** A store's words for its sessions. */
export interface SessionWords {
  /** What a session is called before its owner: "session pid 123", "connection 12". */
  readonly session: string;
  /** What its user is called. */
  readonly user: string;
}

export const SESSION_WORDS: { readonly postgres: SessionWords; readonly mysql: SessionWords } = {
  postgres: { session: 'session pid', user: 'role' },
  mysql: { session: 'connection', user: 'user' },
};

/** At most this many characters of a statement are quoted. */
const QUERY_CHARS = 200;

/**
 * `session pid 123 (application "worker", role app, from 10.0.0.5:5555, connected at …, last ran "SELECT …")`: one
 * parenthesis, so that it reads within any sentence.
 */
export function sessionText(owner: string, session: SessionInfo | undefined, words: SessionWords): string {
  const s = session ?? {};
  const about = [
    s.application && `application ${JSON.stringify(s.application)}`,
    s.user && `${words.user} ${s.user}`,
    s.client && `from ${s.client}`,
    s.connectedAt !== undefined && `connected at ${new Date(s.connectedAt).toISOString()}`,
    doingText(s),
  ].filter(Boolean);
  return `${words.session} ${owner}${about.length ? ` (${about.join(', ')})` : ''}`;
}

function doingText(s: SessionInfo): string | undefined {
  if (!s.query) return s.state && `state ${s.state}`;
  // PostgreSQL keeps an idle session's last statement; MySQL shows a statement only while it runs.
  const verb = s.state?.startsWith('idle') ? 'last ran' : 'running';
  return `${verb} ${JSON.stringify(queryPreview(s.query, QUERY_CHARS))}`;
}

/** The members holding `lock` now (several when shared). */
export function holdersOf(lock: LockState): LockMember[] {
  return members(lock).slice(0, holderCount(lock));
}

/** INVALID_ARGUMENT unless `member` holds `lock`: a force release ends a holder's session, never a waiter's. */
export function requireHolder(lock: LockState, member: LockMember): void {
  if (!holdersOf(lock).some((m) => m.key.equals(member.key) && m.owner === member.owner)) {
    throw new LockLensError('INVALID_ARGUMENT', `${displayKey(member.key)} does not hold ${displayKey(lock.name)}: only a holder can be released (a waiter gives up by itself)`);
  }
}

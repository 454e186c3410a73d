/**
 * Releasing someone else's advisory lock: PostgreSQL has no way to unlock another session's lock, so the session is
 * terminated (pg_terminate_backend), which frees every lock it holds and rolls back its open transaction. Only the
 * session the user was shown is terminated: the same pid, still holding that key, of the same role, connected at the
 * same moment (a pid is reused by a later session; the moment is hidden from roles without pg_read_all_stats). Its client is told: its connection ends with "terminating connection due to
 * administrator command".
 */
import { DatabaseError } from 'pg';
import type { ForceReleaseResult } from '../backend';
import { LockLensError, errorMessage } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState } from '../lockState';
import { sleep } from '../sleep';
import { SESSION_WORDS, holdersOf, requireHolder, sessionText } from '../sql/sessionText';
import { parseAdvisoryName, type AdvisoryKey } from './advisoryKeys';
import { keyParams } from './advisoryLocks';
import type { PgConnection } from './connect';

/** How long a terminated session is given to end before the release reports that it was asked to. */
const GONE_WAIT_MS = 5000;

function when(ms: number): string {
  return new Date(ms).toISOString();
}

/** What makes sure the session terminated is the one shown, in words. */
function sameSessionText(member: LockMember): string {
  if (member.session?.connectedAt !== undefined) return ', and is the session that connected at that moment';
  // A pid is reused by later sessions; without the start time, one of the same role that took it over and then this
  // lock would pass the check.
  const role = member.session?.user !== undefined ? ` and role (${member.session.user})` : '';
  return `. Its start time is hidden from this role, so only its pid${role} can be checked, not that it is the very session shown`;
}

export function describeForceRelease(lock: LockState, member: LockMember): string {
  if (!member.owner) return `${displayKey(member.key)} is a prepared transaction: only COMMIT PREPARED or ROLLBACK PREPARED ends it.`;
  const shown = sameSessionText(member);
  const next = lock.waiters.length ? ` The next waiter (pid ${lock.waiters[0].owner}) then gets the lock.` : '';
  const others = lock.sharedWith?.length ? ' The other sessions sharing it keep their hold.' : '';
  return (
    `Terminates the PostgreSQL ${sessionText(member.owner, member.session, SESSION_WORDS.postgres)}, only if it still holds ${displayKey(lock.name)}${shown}. ` +
    `Every lock of that session is freed, not only this one, and its open transaction is rolled back; its client sees its connection end.${others}${next}`
  );
}

function keyOf(lock: LockState): AdvisoryKey {
  return parseAdvisoryName(lock.name.toString('utf8'));
}

export async function forceRelease(
  db: PgConnection,
  readLock: (key: AdvisoryKey) => Promise<LockState | undefined>,
  lock: LockState,
  member: LockMember,
): Promise<ForceReleaseResult> {
  requireHolder(lock, member);
  if (!member.owner) throw new LockLensError('INVALID_ARGUMENT', describeForceRelease(lock, member));
  const pid = Number(member.owner);
  const key = keyOf(lock);
  const connectedAt = member.session?.connectedAt;
  const role = member.session?.user;
  const changed = (now: string) => new LockLensError('LOCK_CHANGED', `pid ${pid} ${now}: nothing was terminated`);
  let rows: { terminated: boolean }[];
  try {
    // The check and the termination in one statement: the session cannot let go and another take its pid between them.
    // The start time tells a reused pid apart, where this role may see it; the role (usename, seen by every role) is
    // compared whatever is hidden.
    rows = await db.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(a.pid) AS terminated FROM pg_stat_activity a
WHERE a.pid = $1 AND ($5::float8 IS NULL OR floor((extract(epoch FROM a.backend_start) * 1000)::float8) = $5::float8)
  AND ($6::text IS NULL OR a.usename = $6::text)
  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = $2::int8::oid AND l.objid = $3::int8::oid AND l.objsubid = $4::int2)`,
      [pid, ...keyParams(key), connectedAt ?? null, role ?? null],
    );
  } catch (e) {
    if (e instanceof DatabaseError && e.code === '42501') {
      const who = "a session can be terminated by a superuser, by its own role, or by a member of pg_signal_backend (a superuser's session only by a superuser)";
      throw new LockLensError('PERMISSION', `cannot terminate pid ${pid}: ${e.message}${e.detail ? ` (${e.detail})` : ''}; ${who}`, { cause: e });
    }
    throw e instanceof LockLensError ? e : new LockLensError('STORE', `terminating pid ${pid} failed: ${errorMessage(e)}`, { cause: e });
  }
  if (rows.length === 0) {
    const now = await readLock(key);
    const still = now && holdersOf(now).find((m) => m.owner === member.owner);
    if (!still) throw changed(`no longer holds ${displayKey(lock.name)} (released, or its session ended)`);
    const since = still.session?.connectedAt;
    const seen = [still.session?.user !== undefined && `role ${still.session.user}`, since !== undefined && `connected at ${when(since)}`].filter(Boolean);
    throw changed(`is another session than the one shown${seen.length ? ` (${seen.join(', ')})` : ''}`);
  }
  if (!rows[0].terminated) throw changed('ended while it was being terminated');
  const gone = await waitUntilGone(db, pid);
  return {
    keys: [member.key],
    action: gone
      ? `terminated session pid ${pid}, which freed every lock it held`
      : `asked session pid ${pid} to terminate; it had not ended ${GONE_WAIT_MS / 1000} s later (a backend ends at its next interrupt check)`,
  };
}

async function waitUntilGone(db: PgConnection, pid: number): Promise<boolean> {
  const deadline = Date.now() + GONE_WAIT_MS;
  while (Date.now() < deadline) {
    if ((await db.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).length === 0) return true;
    await sleep(25);
  }
  return false;
}

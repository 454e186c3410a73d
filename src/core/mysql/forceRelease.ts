/**
 * Releasing someone else's GET_LOCK: only its connection can release it, so the connection is ended
 * (`KILL CONNECTION`), which frees every lock it holds and rolls back its open transaction; the next waiter then gets
 * the lock. Only while that connection still holds that name, as the same user from the same host as shown: a
 * connection id is never reused while the server runs, but the lock may have been released and taken again.
 */
import type { ForceReleaseResult } from '../backend';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState, SessionInfo } from '../lockState';
import type { SqlSession } from '../sql/session';
import { SESSION_WORDS, requireHolder, sessionText } from '../sql/sessionText';
import { serverErrno, type MysqlFlavor } from './connect';
import { processRow } from './getLockReading';

const ER_NO_SUCH_THREAD = 1094;
const ER_KILL_DENIED = 1095;
const ER_SPECIFIC_ACCESS_DENIED = 1227;

export function describeForceRelease(lock: LockState, member: LockMember): string {
  const next = lock.waiters.length ? ' The longest waiting connection is then expected to get the lock.' : '';
  return (
    `Kills ${sessionText(member.owner, member.session, SESSION_WORDS.mysql)} with KILL CONNECTION ${member.owner}, only if it still holds ${displayKey(lock.name)}. ` +
    `Every GET_LOCK lock of that session is freed, not only this one, and its open transaction is rolled back; its client sees its connection fail.${next}`
  );
}

/** The connection's lock and who it is now, as one statement reads them. */
interface Seen {
  readonly holder: number | undefined;
  readonly user: string | undefined;
  readonly host: string | undefined;
}

async function see(db: SqlSession, name: string, id: number): Promise<Seen> {
  const [row] = await db.query(
    'SELECT IS_USED_LOCK(?) AS holder, (SELECT USER FROM information_schema.PROCESSLIST WHERE ID = ?) AS user, (SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = ?) AS host',
    [name, id, id],
  );
  const { user, host } = processRow({ ...row, id });
  return { holder: row.holder === null || row.holder === undefined ? undefined : Number(row.holder), user, host };
}

/** Why the lock is not (or no longer) the one shown, in words; undefined when it is. */
function changedSince(seen: Seen, id: number, shown: SessionInfo | undefined): string | undefined {
  if (seen.holder === undefined) return 'is free now (released, or its connection ended)';
  if (seen.holder !== id) return `is held by connection ${seen.holder} now, not ${id}`;
  // Another user's connection is not in a processlist read without PROCESS: nothing to compare.
  const visible = seen.user !== undefined || seen.host !== undefined;
  if (shownWho(shown) && visible && (seen.user !== shown?.user || seen.host !== shown?.client)) {
    return `is held by connection ${id} of ${seen.user ?? '?'} from ${seen.host ?? '?'}, not as shown`;
  }
  return undefined;
}

function shownWho(shown: SessionInfo | undefined): boolean {
  return shown?.user !== undefined || shown?.client !== undefined;
}

/**
 * KILL CONNECTION, only while the connection holds the name as shown. MariaDB checks and kills in one compound
 * statement, so nothing can change between the two; MySQL has none outside stored programs, so there the check is one
 * statement sent just before the KILL, leaving one round trip in which the holder could release and take another lock.
 */
async function killIfUnchanged(db: SqlSession, flavor: MysqlFlavor, name: string, id: number, shown: SessionInfo | undefined): Promise<string | undefined> {
  if (flavor === 'mysql') {
    const why = changedSince(await see(db, name, id), id, shown);
    if (!why) await db.query(`KILL CONNECTION ${id}`);
    return why;
  }
  const sameSession = shownWho(shown) ? ' AND NOT EXISTS (SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ? AND NOT (USER <=> ? AND HOST <=> ?))' : '';
  const params = shownWho(shown) ? [name, id, id, shown?.user ?? null, shown?.client ?? null] : [name, id];
  const killed = await db.query(`BEGIN NOT ATOMIC IF IS_USED_LOCK(?) = ?${sameSession} THEN KILL CONNECTION ${id}; SELECT 1 AS killed; END IF; END`, params);
  if (killed.length) return undefined;
  return changedSince(await see(db, name, id), id, shown) ?? 'changed while it was being released';
}

export async function forceRelease(db: SqlSession, flavor: MysqlFlavor, lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
  requireHolder(lock, member);
  const id = Number(member.owner);
  if (!Number.isSafeInteger(id) || id <= 0) throw new LockLensError('INVALID_ARGUMENT', `'${member.owner}' is not a connection id`);
  let changed: string | undefined;
  try {
    changed = await killIfUnchanged(db, flavor, lock.name.toString('utf8'), id, member.session);
  } catch (e) {
    const errno = serverErrno(e);
    if (errno === ER_NO_SUCH_THREAD) changed = `lost its connection ${id} while it was being released`;
    else if (errno === ER_KILL_DENIED || errno === ER_SPECIFIC_ACCESS_DENIED) {
      throw new LockLensError(
        'PERMISSION',
        `not allowed to kill connection ${id}: killing another user's connection needs the CONNECTION ADMIN privilege (MySQL 8: CONNECTION_ADMIN) or SUPER`,
        { cause: e },
      );
    } else throw e;
  }
  if (changed) throw new LockLensError('LOCK_CHANGED', `${displayKey(lock.name)} ${changed}: nothing was killed`);
  return { keys: [member.key], action: `killed connection ${id} (KILL CONNECTION), freeing every lock it held` };
}

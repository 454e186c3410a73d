/**
 * Releasing someone else's GET_LOCK: only its connection can release it, so the connection is ended
 * (`KILL CONNECTION`), which frees every lock it holds and rolls back its open transaction; the next waiter then gets
 * the lock. Only while that connection still holds that name, as the same user from the same host as shown: a
 * connection id is never reused while the server runs, but the lock may have been released and taken again.
 */
import type { ForceReleaseResult } from '../backend';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState } from '../lockState';
import type { SqlSession } from '../sql/session';
import { serverErrno } from './connect';
import { processRow } from './getLockReading';

const ER_NO_SUCH_THREAD = 1094;
const ER_KILL_DENIED = 1095;
const ER_SPECIFIC_ACCESS_DENIED = 1227;

function isHolder(lock: LockState, member: LockMember): boolean {
  return !!lock.holder && lock.holder.key.equals(member.key) && lock.holder.owner === member.owner;
}

function who(member: LockMember): string {
  const s = member.session;
  const user = s?.user ? ` of ${s.user}${s.client ? ` from ${s.client}` : ''}` : '';
  const doing = s?.query ? `, running ${JSON.stringify(s.query.slice(0, 200))}` : s?.state ? ` (${s.state})` : '';
  return `connection ${member.owner}${user}${doing}`;
}

export function describeForceRelease(lock: LockState, member: LockMember): string {
  const next = lock.waiters.length ? ' The longest waiting connection is then expected to get the lock.' : '';
  return (
    `Kills ${who(member)} (KILL CONNECTION ${member.owner}), only if it still holds ${displayKey(lock.name)}. ` +
    `Every GET_LOCK lock of that session is freed, not only this one, and its open transaction is rolled back; its client sees its connection fail.${next}`
  );
}

export async function forceRelease(db: SqlSession, lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
  if (!isHolder(lock, member)) {
    throw new LockLensError('INVALID_ARGUMENT', `${displayKey(member.key)} does not hold ${displayKey(lock.name)}: only a holder can be released (a waiter gives up by itself)`);
  }
  const id = Number(member.owner);
  if (!Number.isSafeInteger(id) || id <= 0) throw new LockLensError('INVALID_ARGUMENT', `'${member.owner}' is not a connection id`);
  const changed = (now: string) => new LockLensError('LOCK_CHANGED', `${displayKey(lock.name)} ${now}: nothing was killed`);
  const [row] = await db.query('SELECT IS_USED_LOCK(?) AS holder', [lock.name.toString('utf8')]);
  const holder = row.holder === null || row.holder === undefined ? undefined : Number(row.holder);
  if (holder === undefined) throw changed('is free now (released, or its connection ended)');
  if (holder !== id) throw changed(`is held by connection ${holder} now, not ${id}`);
  const shown = member.session;
  if (shown?.user !== undefined || shown?.client !== undefined) {
    const rows = await db.query('SELECT ID AS id, USER AS user, HOST AS host FROM information_schema.PROCESSLIST WHERE ID = ?', [id]);
    const now = rows.length ? processRow(rows[0]) : undefined;
    if (now && (now.user !== shown.user || now.host !== shown.client)) throw changed(`is held by connection ${id} of ${now.user ?? '?'} from ${now.host ?? '?'}, not as shown`);
  }
  try {
    await db.query(`KILL CONNECTION ${id}`);
  } catch (e) {
    const errno = serverErrno(e);
    if (errno === ER_NO_SUCH_THREAD) throw changed(`lost its connection ${id} while it was being released`);
    if (errno === ER_KILL_DENIED || errno === ER_SPECIFIC_ACCESS_DENIED) {
      throw new LockLensError(
        'PERMISSION',
        `not allowed to kill connection ${id}: killing another user's connection needs the CONNECTION ADMIN privilege (MySQL 8: CONNECTION_ADMIN) or SUPER`,
        { cause: e },
      );
    }
    throw e;
  }
  return { keys: [member.key], action: `killed connection ${id} (KILL CONNECTION), freeing every lock it held` };
}

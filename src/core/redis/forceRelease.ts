/**
 * Releasing someone else's lock, only if it is still what the user was shown: every path is one Lua script that
 * compares first (the token, the Redisson field and mode) and deletes only on a match, then wakes waiters the way the
 * lock's library expects (Redisson's forceUnlock publishes, or its waiters sleep until their own timeout).
 */
import type Redis from 'ioredis';
import type { ForceReleaseResult } from '../backend';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState } from '../lockState';
import { storeError } from './keyspaceReader';
import { CONVENTIONS } from './recognize';
import { wakePortWaiters } from './portWake';
import { lockChannel, lockQueueKey, lockTimeoutKey, rwLockChannel } from './redissonNames';
import { REDISSON_PERMIT_RELEASE } from './semaphoreScripts';
import { permitTimeoutKey, semaphoreChannel } from './semaphores';
import { FAIR_FORCE_UNLOCK, READ_UNLOCK_MESSAGE, REDISSON_FORCE_UNLOCK, TOKEN_RELEASE, UNLOCK_MESSAGE } from './scripts';

function isHolder(lock: LockState, member: LockMember): boolean {
  return [lock.holder, ...(lock.sharedWith ?? [])].some((m) => m && m.key.equals(member.key) && m.owner === member.owner);
}

/**
 * Runs a compare-and-delete script on every instance (one, or a redlock set): on how many it deleted, and how many
 * could not be asked. Throws only when none could.
 */
async function onEvery(clients: readonly Redis[], run: (c: Redis) => Promise<unknown>): Promise<{ deleted: number; unreachable: number }> {
  const results = await Promise.allSettled(clients.map(run));
  const deleted = results.filter((r) => r.status === 'fulfilled' && r.value === 1).length;
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (deleted === 0 && failed.length === results.length) throw failed[0].reason;
  return { deleted, unreachable: failed.length };
}

function where(deleted: number, of: number): string {
  return of > 1 ? ` on ${deleted} of ${of} instances` : '';
}

function shortValue(member: LockMember): string {
  const text = displayKey(member.valuePreview);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

/**
 * A MultiSemaphore holder's permits (`<identifier>_<i>`) as shown: its refresh re-adds them all while `_0` is there,
 * so one of them removed alone would come back, maybe past the limit.
 */
function multiPermits(lock: LockState, member: LockMember): Buffer[] {
  return [lock.holder, ...(lock.sharedWith ?? [])].filter((m): m is LockMember => !!m && m.convention === member.convention && m.owner === member.owner).map((m) => m.key);
}

export function describeForceRelease(lock: LockState, member: LockMember): string {
  const name = displayKey(lock.name);
  const tail = "The holder's process is not told and may still believe it holds the lock.";
  switch (member.convention) {
    case CONVENTIONS.shedlock:
    case CONVENTIONS.token:
      return `Deletes ${name} only if it still holds ${member.convention === CONVENTIONS.shedlock ? 'the value' : 'token'} ${shortValue(member)}${member.quorum ? `, on every one of the ${member.quorum.of} instances where it does` : ''}. ${tail}`;
    case CONVENTIONS.redissonRwLock:
      return `Deletes the read/write lock hash ${name} only if ${member.owner} still holds it in ${member.mode ?? 'its'} mode, then publishes Redisson's unlock message so its waiters retry at once. Every ${lock.sharedWith?.length ? 'reader' : 'holder'} loses it. ${tail}`;
    case CONVENTIONS.redisSemaphore:
      return `Removes the permit ${member.key.toString('utf8')} from the semaphore ${name}, only if it is still there: one permit comes free, the other holders keep theirs, and the next client to poll takes it. ${tail}`;
    case CONVENTIONS.redisMultiSemaphore:
      return `Removes the ${multiPermits(lock, member).length} permits of the MultiSemaphore holder ${member.owner} from the semaphore ${name}, only those still there: its client refreshes them together, so they go together; the other holders keep theirs. ${tail}`;
    case CONVENTIONS.redissonPermitSemaphore:
      return `Gives back the permit ${member.owner} of the semaphore ${name}, only if it is still held, as Redisson's release does: the count of free permits goes up by one and its waiters are told. The other holders keep theirs. ${tail}`;
    case CONVENTIONS.redissonFairLock:
      return `Deletes the lock hash ${name} only if ${member.owner} still holds it, then wakes the first waiter in its queue as Redisson's forceUnlock does. ${tail}`;
    case CONVENTIONS.redissonPortLock:
      return `Deletes the lock hash ${name} only if ${member.owner} still holds it, then publishes the unlock message on Redisson's channel and node-redisson's (its event stream too, where its clients use one) so its waiters retry at once. ${tail}`;
    default:
      return `Deletes the lock hash ${name} only if ${member.owner} still holds it, then publishes Redisson's unlock message so its waiters retry at once. ${tail}`;
  }
}

export async function forceRelease(clients: readonly Redis[], lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
  if (!isHolder(lock, member)) {
    throw new LockLensError('INVALID_ARGUMENT', `${member.owner} does not hold ${displayKey(lock.name)}: only a holder can be released (a waiter gives up by itself)`);
  }
  const changed = () => new LockLensError('LOCK_CHANGED', `${displayKey(lock.name)} is no longer held by ${member.owner}: nothing was released`);
  try {
    switch (member.convention) {
      case CONVENTIONS.shedlock:
      case CONVENTIONS.token: {
        if (member.valueSize !== member.valuePreview.length) throw new LockLensError('INVALID_ARGUMENT', 'the value shown was cut short: read it again');
        // Under redlock the same token is on every instance that agreed: compare-and-delete on every instance, and
        // say on how many it was still there. An instance that is down keeps its copy until its TTL.
        const { deleted, unreachable } = await onEvery(clients, (c) => c.eval(TOKEN_RELEASE, 1, lock.name, member.valuePreview));
        if (deleted === 0) throw changed();
        if (clients.length === 1) return { keys: [lock.name], action: 'deleted the key' };
        return {
          keys: [lock.name],
          action: `deleted the key on ${deleted} of ${clients.length} instances${unreachable ? ` (${unreachable} unreachable)` : ''}`,
        };
      }
      case CONVENTIONS.redissonRwLock: {
        // As RedissonWriteLock.forceUnlockAsync and RedissonReadLock's: a writer's end wakes every waiter (readers may
        // all enter), a reader's one.
        const message = member.mode === 'write' ? READ_UNLOCK_MESSAGE : UNLOCK_MESSAGE;
        const { deleted: n } = await onEvery(clients, (c) => c.eval(REDISSON_FORCE_UNLOCK, 2, lock.name, rwLockChannel(lock.name), member.key, message, member.mode ?? ''));
        if (n === 0) throw changed();
        return { keys: [lock.name], action: 'deleted the read/write lock hash and woke its waiters' + where(n, clients.length) };
      }
      case CONVENTIONS.redissonFairLock: {
        const { deleted: n } = await onEvery(clients, (c) =>
          c.eval(FAIR_FORCE_UNLOCK, 4, lock.name, lockQueueKey(lock.name), lockTimeoutKey(lock.name), lockChannel(lock.name), member.key, UNLOCK_MESSAGE, Date.now()),
        );
        if (n === 0) throw changed();
        return { keys: [lock.name], action: 'deleted the lock hash and woke the first waiter, if any' + where(n, clients.length) };
      }
      case CONVENTIONS.redissonLock:
      case CONVENTIONS.redissonPortLock: {
        // As our own unlock does: the waiters may be Redisson's or a port's.
        const { deleted: n } = await onEvery(clients, async (c) => {
          const deleted = await c.eval(REDISSON_FORCE_UNLOCK, 2, lock.name, lockChannel(lock.name), member.key, UNLOCK_MESSAGE, '');
          if (deleted === 1) await wakePortWaiters(c, lock.name);
          return deleted;
        });
        if (n === 0) throw changed();
        return { keys: [lock.name], action: 'deleted the lock hash and woke its waiters' + where(n, clients.length) };
      }
      case CONVENTIONS.redisSemaphore:
      case CONVENTIONS.redisMultiSemaphore: {
        // The token is the permit: removing those exact members is the compare-and-remove.
        const permits = member.convention === CONVENTIONS.redisMultiSemaphore ? multiPermits(lock, member) : [member.key];
        const { deleted: n } = await onEvery(clients, async (c) => Math.min(1, await c.zrem(lock.name, ...permits)));
        if (n === 0) throw changed();
        return { keys: [lock.name], action: permits.length === 1 ? 'removed that permit from the semaphore' : `removed that holder's ${permits.length} permits from the semaphore` };
      }
      case CONVENTIONS.redissonPermitSemaphore: {
        const { deleted: n } = await onEvery(clients, (c) => c.eval(REDISSON_PERMIT_RELEASE, 3, lock.name, semaphoreChannel(lock.name), permitTimeoutKey(lock.name), member.key));
        if (n === 0) throw changed();
        return { keys: [lock.name, permitTimeoutKey(lock.name)], action: 'gave that permit back and told the waiters' };
      }
      default:
        throw new LockLensError('INVALID_ARGUMENT', `LockLens does not know how to release a '${member.convention}' member safely`);
    }
  } catch (e) {
    throw storeError(e);
  }
}

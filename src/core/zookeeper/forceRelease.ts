/**
 * Releasing someone else's hold: deleting the holder's node, which wakes the contender watching it (the next in line
 * takes the lock). Only the node the user was shown is deleted: the same path, created at the same zxid by the same
 * session, at the data version just read. ZooKeeper tells the holder nothing (its library watches the node ahead of
 * it, not its own), so the holder may go on as if it held the lock (curator#727): the resource must check its
 * fencing token.
 */
import { Exception } from 'node-zookeeper-client';
import type { ForceReleaseResult } from '../backend';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import { holderCount, isSemaphore, type LockMember, type LockState } from '../lockState';
import { zkCode, type ZkClient } from './client';
import { sessionHex, zxidNumber } from './lockOfChildren';

function isHolder(lock: LockState, member: LockMember): boolean {
  return [lock.holder, ...(lock.sharedWith ?? [])].some((m) => m && m.key.equals(member.key) && m.owner === member.owner);
}

function whose(member: LockMember): string {
  return member.owner ? `session ${member.owner}` : 'no session (a persistent node)';
}

export function describeForceRelease(lock: LockState, member: LockMember): string {
  const semaphore = isSemaphore(lock);
  const others = holderCount(lock) > 1 ? (semaphore ? ' The other permit holders keep theirs: only this lease is deleted.' : ' The other readers keep their hold.') : '';
  const next = !lock.waiters.length ? '' : semaphore ? ' The waiter first in line counts the leases again and takes the permit freed.' : ' The next contender in line is woken by the deletion and takes the lock.';
  return (
    `Deletes the node ${displayKey(member.key)} of ${whose(member)}, only if it is still the one created at zxid ${member.token ?? 'shown'}.${others}${next} ` +
    `The holder's process is NOT told: ZooKeeper does not notify it, and it may still believe it holds the lock (curator#727). ` +
    `Resources should reject its fencing token ${member.token ?? '(none: its zxid is too large to show exactly)'}.`
  );
}

export async function forceRelease(client: ZkClient, lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
  if (!isHolder(lock, member)) {
    throw new LockLensError('INVALID_ARGUMENT', `${displayKey(member.key)} does not hold ${displayKey(lock.name)}: only a holder can be released (a waiter gives up by itself)`);
  }
  const path = member.key.toString('utf8');
  const changed = (now: string) => new LockLensError('LOCK_CHANGED', `${displayKey(member.key)} ${now}: nothing was deleted`);
  const stat = await client.exists(path);
  if (!stat) throw changed('is gone (released, or its session ended)');
  if (zxidNumber(stat.czxid) !== member.token || sessionHex(stat.ephemeralOwner) !== member.owner) {
    throw changed(`is no longer the node that was shown (created at zxid ${stat.czxid} by ${sessionHex(stat.ephemeralOwner) || 'no session'})`);
  }
  try {
    // With the version just read: a node changed since is not deleted. A sequential name is never reused, so the path
    // with this creation zxid is the node the user saw.
    await client.remove(path, stat.version);
  } catch (e) {
    if (zkCode(e) === Exception.NO_NODE) throw changed('went while it was being released');
    if (zkCode(e) === Exception.BAD_VERSION) throw changed('changed while it was being released');
    throw e;
  }
  return { keys: [member.key], action: `deleted the node created at zxid ${stat.czxid}` };
}

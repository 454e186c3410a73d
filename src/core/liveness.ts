/**
 * Whether a member's owner is alive, from the evidence its store gives, whatever the store: TTL samples (an etcd lease
 * whose keepalives keep coming, a Redis PTTL that jumps back up), a database session the server lists, or what a store
 * sets on the member about its owner's client connection (`LockMember.connection`: ZooKeeper's `cons`). Pure: `now`
 * is passed in. Nothing is claimed beyond the evidence: a TTL counting down says its holder stopped renewing, not
 * whether it is paused or dead, and the evidence says so.
 */
import { secondsText as seconds } from './diagnosis/ttlFit';
import { remainingTtl, type LeaseInfo } from './leaseInfo';
import type { ClientConnection, LockMember } from './lockState';

/**
 * `alive`: renewed lately, or its session is connected and heard from; `paused`: it stopped renewing or speaking
 * while what ends it still lives (a frozen process, a cut network, or a holder that never renews); `gone`: its session
 * has no connection left; `unknown`: the store says nothing that tells. A TTL that ran out is no proof of a dead
 * holder: it ends the hold, but a frozen holder's runs out as a dead one's does, and a ShedLock row is left to run out
 * on purpose once its job is done (lockAtLeastFor), the row staying behind with its last holder's name.
 */
export type LivenessState = 'alive' | 'paused' | 'gone' | 'unknown';

export interface Liveness {
  readonly state: LivenessState;
  /** The evidence, in words: what was seen and when, and what the store cannot tell. */
  readonly evidence: string;
}

export function memberLiveness(member: LockMember, info: LeaseInfo | undefined, now = Date.now()): Liveness {
  if (member.connection) return connectionLiveness(member.connection, now);
  switch (member.expiresWith) {
    case 'lease':
    case 'ttl':
      return ttlLiveness(member, info, now);
    case 'connection':
      return member.session
        ? {
            state: 'alive',
            evidence: `its database connection is open${member.session.client ? ` from ${member.session.client}` : ''}; ${SQL_BLIND}`,
          }
        : { state: 'unknown', evidence: 'the server did not show the session holding it' };
    case 'session':
      return { state: 'unknown', evidence: 'the store did not say whether its session has a client connected' };
    case 'nothing':
      return { state: 'unknown', evidence: 'nothing renews or ends it: it stays until deleted, whatever became of its holder' };
  }
}

const SQL_BLIND = 'the server cannot tell a paused client from a working one while its connection stays open';

function ttlLiveness(member: LockMember, info: LeaseInfo | undefined, now: number): Liveness {
  const what = member.expiresWith === 'lease' ? 'its lease' : 'its TTL';
  if (!info) return { state: 'unknown', evidence: `${what} has not been sampled` };
  if (info.state === 'expired') {
    return {
      state: 'unknown',
      evidence: `${what} ran out with nobody renewing it: the hold is over, but whether its holder lives the store cannot tell (it may have finished, let it run out on purpose, been paused, or died)`,
    };
  }
  const left = remainingTtl(info, now);
  const of = `${seconds(left)} of ${seconds(info.grantedTtl)} left`;
  const last = info.refreshes[info.refreshes.length - 1];
  if (info.stalled) {
    return {
      state: 'paused',
      evidence:
        `${what} is not being renewed (${of}): its holder is paused, gone, or never renews it; ` +
        `the store cannot tell which until it runs out${last !== undefined ? ` (last renewal seen ${seconds((now - last) / 1000)} ago)` : ''}`,
    };
  }
  if (last !== undefined) return { state: 'alive', evidence: `renewed ${seconds((now - last) / 1000)} ago (${of})` };
  // An etcd lease's keepalive resets it to its granted TTL, so what is missing is the time since the last renewal. A
  // key's own TTL says nothing of that until samples see it jump back up: its grant is only the highest value seen.
  if (member.expiresWith === 'lease') return { state: 'alive', evidence: `renewed or granted ${seconds(info.grantedTtl - left)} ago (${of})` };
  return { state: 'unknown', evidence: `${what} is counting down (${seconds(left)} left) and no renewal has been seen yet` };
}

function connectionLiveness(c: ClientConnection, now: number): Liveness {
  if (!c.client) {
    return {
      state: 'gone',
      evidence: `its session has no client connected (${c.source}): its client is gone, and its nodes go when the session times out`,
    };
  }
  const quiet = c.lastHeardAt === undefined ? undefined : now - c.lastHeardAt;
  if (quiet !== undefined && quiet > c.quietLimitMs) {
    return {
      state: 'paused',
      evidence:
        `its client ${c.client} is connected but silent for ${seconds(quiet / 1000)} (${c.source}), ` +
        `longer than the ${seconds(c.quietLimitMs / 1000)} within which a running client pings: paused, or its network is cut`,
    };
  }
  return { state: 'alive', evidence: `its client ${c.client} is connected${quiet !== undefined ? `, heard from ${seconds(Math.max(0, quiet) / 1000)} ago` : ''} (${c.source})` };
}

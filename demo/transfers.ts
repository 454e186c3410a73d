import type { EtcdConnection } from '../src/core/etcd/connect';
import { errorMessage } from '../src/core/errors';
import { Mutex, type Hold } from '../src/core/etcd/mutex';
import { Session } from '../src/core/etcd/session';
import { sleep } from '../src/core/sleep';

/**
 * The demo's deadlock. Two transfer services, each with its own etcd connection and one Go-compatible Session (one
 * lease for all its locks, as a Go `concurrency.Session` shared by its Mutexes), lock the two accounts of a transfer
 * in opposite orders: `alice-to-bob` holds /locks/transfer-alice and queues in /locks/transfer-bob,
 * `bob-to-alice` holds /locks/transfer-bob and queues in /locks/transfer-alice. Neither ever gets its second
 * lock: only the user breaks it, by force-releasing one hold (or revoking one lease) in LockLens. The other then
 * completes its transfer; the one whose hold was broken notices and gives up its own. They meet again after
 * AGAIN_MS, so the deadlock can be found and broken more than once.
 */

export const TRANSFER_LOCKS = { alice: '/locks/transfer-alice', bob: '/locks/transfer-bob' } as const;

/** After a round ends (the user broke the deadlock), the next one begins this much later. */
const AGAIN_MS = 60_000;
/** How long a transfer holding both accounts takes. */
const TRANSFER_MS = 1500;

type Log = (who: string, message: string, verbose?: boolean) => void;

interface Side {
  readonly who: string;
  readonly first: string;
  readonly second: string;
  readonly session: Session;
}

/**
 * One round: both services take their first account, and once both hold one, each queues for the other's with the
 * same lease. Resolves when both have finished or given up; both sessions are revoked at the end.
 */
export async function transferRound(conns: readonly [EtcdConnection, EtcdConnection], log: Log, signal: AbortSignal): Promise<void> {
  const sessions = await Promise.all(conns.map((c) => Session.create(c, 15)));
  try {
    const sides: Side[] = [
      { who: 'alice-to-bob', first: TRANSFER_LOCKS.alice, second: TRANSFER_LOCKS.bob, session: sessions[0] },
      { who: 'bob-to-alice', first: TRANSFER_LOCKS.bob, second: TRANSFER_LOCKS.alice, session: sessions[1] },
    ];
    const firsts = await Promise.all(sides.map((s) => new Mutex(s.session, s.first).acquire({ signal })));
    await Promise.all(sides.map((s, i) => finishTransfer(s, firsts[i], log, signal)));
  } finally {
    await Promise.all(sessions.map((s) => s.revoke().catch(() => undefined)));
  }
  if (!signal.aborted) {
    log('transfers', `both transfers are over; they deadlock again in ${AGAIN_MS / 1000} s`);
    await sleep(AGAIN_MS, signal);
  }
}

/** Queues for the second account while holding the first; with both, transfers and releases them. */
async function finishTransfer(side: Side, first: Hold, log: Log, signal: AbortSignal): Promise<void> {
  const { who, session } = side;
  let lost: string | undefined;
  first.onDidLose((e) => (lost = e.message));
  log(who, `holds ${side.first} (lease ${session.leaseId}) and waits for ${side.second}: deadlocked until someone force-releases one of the two holds`);
  let second: Hold;
  try {
    second = await new Mutex(session, side.second).acquire({ signal });
  } catch (e) {
    if (!signal.aborted) log(who, `gave up waiting for ${side.second}: ${errorMessage(e)}`);
    return;
  }
  if (lost !== undefined) {
    log(who, `got ${side.second}, but lost ${side.first} while it waited: gives up the transfer (${lost})`);
  } else {
    await sleep(TRANSFER_MS, signal);
    log(who, `holds ${side.first} and ${side.second}: transfer done`);
  }
  await second.release().catch(() => undefined);
  if (lost === undefined) await first.release().catch(() => undefined);
}

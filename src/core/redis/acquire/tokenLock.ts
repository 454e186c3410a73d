/**
 * The token recipe redis-py, redlock, Spring and the classic article share: SET NX PX with a random token, renewed and
 * released by compare-and-set scripts, on a majority of the instances when several are configured (redlock).
 */
import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import type { AcquireOptions, QueuePosition } from '../../backend';
import { LockLensError, abortError, throwIfAborted } from '../../errors';
import { displayKey } from '../../keys';
import { sleep } from '../../sleep';
import { storeError } from '../keyspaceReader';
import { TOKEN_RELEASE, TOKEN_RENEW } from '../scripts';
import { RenewingHold } from './hold';
import { RETRY_MS, validUntil } from './timing';

function quorumOf(n: number): number {
  return Math.floor(n / 2) + 1;
}

async function settleAll<T>(promises: Promise<T>[]): Promise<(T | Error)[]> {
  return Promise.all(promises.map((p) => p.catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))))));
}

async function releaseToken(clients: readonly Redis[], name: Buffer, token: string): Promise<number> {
  const results = await settleAll(clients.map((c) => c.eval(TOKEN_RELEASE, 1, name, token) as Promise<number>));
  return results.filter((r) => r === 1).length;
}

export async function acquireToken(clients: readonly Redis[], name: Buffer, ttlMs: number, options: AcquireOptions): Promise<RenewingHold> {
  const token = randomBytes(16).toString('hex');
  const quorum = quorumOf(clients.length);
  let announced: number | undefined;
  const announce = (p: QueuePosition) => {
    if (announced === p.ahead) return;
    announced = p.ahead;
    options.onQueue?.(p);
  };
  for (;;) {
    throwIfAborted(options.signal);
    const started = Date.now();
    const results = await settleAll(clients.map((c) => c.set(name, token, 'PX', ttlMs, 'NX')));
    const agree = results.filter((r) => r === 'OK').length;
    const failures = results.filter((r): r is Error => r instanceof Error);
    // Redlock: held only with a majority, within what is left of the TTL after the round trip and clock drift.
    const until = validUntil(started, ttlMs);
    if (agree >= quorum && until > Date.now()) {
      if (options.signal?.aborted) {
        await releaseToken(clients, name, token);
        throw abortError(options.signal);
      }
      announce({ key: name, ahead: 0, fencingToken: null });
      return new TokenHold(clients, name, token, ttlMs, until);
    }
    // Not held: undo it everywhere, also where the SET failed, since a command that timed out here may still have
    // run on the server (redlock's rule). Compare-and-delete on our own token never touches anyone else's.
    if (agree > 0 || failures.length > 0) await releaseToken(clients, name, token);
    if (failures.length > clients.length - quorum) throw storeError(failures[0]);
    if (options.tryOnly) {
      const holder = await clients[0].getBuffer(name).catch(() => null);
      throw new LockLensError('LOCKED', `${displayKey(name)} is held by ${holder ? displayKey(holder) : 'another client'}`);
    }
    announce({ key: name, ahead: 1, fencingToken: null });
    await sleep(RETRY_MS, options.signal);
  }
}

class TokenHold extends RenewingHold {
  constructor(
    private readonly clients: readonly Redis[],
    name: Buffer,
    private readonly token: string,
    ttlMs: number,
    until: number,
  ) {
    super(name, name, token, ttlMs, until);
  }

  protected async renew(): Promise<boolean> {
    const results = await settleAll(this.clients.map((c) => c.eval(TOKEN_RENEW, 1, this.name, this.token, this.ttlMs) as Promise<number>));
    const renewed = results.filter((r) => r === 1).length;
    const refused = results.filter((r) => r === 0).length;
    const quorum = quorumOf(this.clients.length);
    if (renewed >= quorum) return true;
    // Gone on enough instances that a majority can no longer be ours: lost now, not after a TTL.
    if (refused > this.clients.length - quorum) return false;
    throw results.find((r) => r instanceof Error) ?? new Error('no majority renewed');
  }

  protected async unlock(): Promise<boolean> {
    return (await releaseToken(this.clients, this.name, this.token)) >= quorumOf(this.clients.length);
  }
}

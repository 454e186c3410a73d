/**
 * One permit of a Redisson RPermitExpirableSemaphore, taken, kept and given back with Redisson's own scripts: a random
 * 16-byte id in `{name}:timeout`, scored by when it expires (renewed every TTL/3, as a lease time updated), the counter
 * of free permits decremented; giving it back publishes the count on `redisson_sc:{name}`, which wakes Redisson's
 * waiters. LockLens waits by trying again, as a Redisson waiter does when its wait on the channel times out.
 */
import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import type { AcquireOptions } from '../../backend';
import { LockLensError, abortError, throwIfAborted } from '../../errors';
import { displayKey } from '../../keys';
import { sleep } from '../../sleep';
import { REDISSON_PERMIT_ACQUIRE, REDISSON_PERMIT_RELEASE, REDISSON_PERMIT_UPDATE_LEASE } from '../semaphoreScripts';
import { permitTimeoutKey, semaphoreChannel } from '../semaphores';
import { RenewingHold } from './hold';
import { RETRY_MS, validUntil } from './timing';

/** The counter, its permit ids, its channel: the KEYS of every script. */
const keysOf = (name: Buffer) => [name, permitTimeoutKey(name), semaphoreChannel(name)] as const;

export async function acquireRedissonPermit(client: Redis, name: Buffer, ttlMs: number, options: AcquireOptions): Promise<RenewingHold> {
  const id = randomBytes(16);
  let waiting = false;
  for (;;) {
    throwIfAborted(options.signal);
    const sentAt = Date.now();
    if ((await client.eval(REDISSON_PERMIT_ACQUIRE, 3, ...keysOf(name), id, sentAt + ttlMs, sentAt)) === 1) {
      const hold = new RedissonPermitHold(client, name, id, ttlMs, validUntil(sentAt, ttlMs));
      if (options.signal?.aborted) {
        await hold.release();
        throw abortError(options.signal);
      }
      options.onQueue?.({ key: id, ahead: 0, fencingToken: null });
      return hold;
    }
    if (options.tryOnly) throw new LockLensError('LOCKED', `no permit of ${displayKey(name)} is free`);
    if (!waiting) {
      waiting = true;
      options.onQueue?.({ key: id, ahead: 1, fencingToken: null });
    }
    await sleep(RETRY_MS, options.signal);
  }
}

class RedissonPermitHold extends RenewingHold {
  constructor(
    private readonly client: Redis,
    name: Buffer,
    private readonly id: Buffer,
    ttlMs: number,
    until: number,
  ) {
    super(name, id, id.toString('hex'), ttlMs, until);
  }

  protected async renew(): Promise<boolean> {
    const now = Date.now();
    return (await this.client.eval(REDISSON_PERMIT_UPDATE_LEASE, 3, ...keysOf(this.name), this.id, now + this.ttlMs, now)) === 1;
  }

  protected async unlock(): Promise<boolean> {
    return (await this.client.eval(REDISSON_PERMIT_RELEASE, 3, this.name, semaphoreChannel(this.name), permitTimeoutKey(this.name), this.id)) === 1;
  }
}

/**
 * One permit of a redis-semaphore `Semaphore` (npm), taken, refreshed and given back with its own scripts: a random
 * token in the sorted set `semaphore:<key>`, scored by the time of its last refresh. Its clients wait by polling (no
 * channel), so a LockLens release is seen at their next try. The limit is not stored: every call, ours included, says it.
 */
import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import type { AcquireOptions } from '../../backend';
import { LockLensError, abortError, throwIfAborted } from '../../errors';
import { displayKey } from '../../keys';
import { sleep } from '../../sleep';
import { REDIS_SEMAPHORE_ACQUIRE, REDIS_SEMAPHORE_REFRESH } from '../semaphoreScripts';
import { RenewingHold } from './hold';
import { RETRY_MS, validUntil } from './timing';

export async function acquireRedisSemaphore(client: Redis, name: Buffer, limit: number, ttlMs: number, options: AcquireOptions): Promise<RenewingHold> {
  const token = randomUUID();
  let waiting = false;
  for (;;) {
    throwIfAborted(options.signal);
    const sentAt = Date.now();
    if ((await client.eval(REDIS_SEMAPHORE_ACQUIRE, 1, name, limit, token, ttlMs, sentAt)) === 1) {
      if (options.signal?.aborted) {
        await client.zrem(name, token);
        throw abortError(options.signal);
      }
      options.onQueue?.({ key: Buffer.from(token), ahead: 0, fencingToken: null });
      return new RedisSemaphoreHold(client, name, token, limit, ttlMs, validUntil(sentAt, ttlMs));
    }
    if (options.tryOnly) throw new LockLensError('LOCKED', `all ${limit} permits of ${displayKey(name)} are held`);
    if (!waiting) {
      waiting = true;
      options.onQueue?.({ key: Buffer.from(token), ahead: 1, fencingToken: null });
    }
    await sleep(RETRY_MS, options.signal);
  }
}

class RedisSemaphoreHold extends RenewingHold {
  constructor(
    private readonly client: Redis,
    name: Buffer,
    private readonly token: string,
    private readonly limit: number,
    ttlMs: number,
    until: number,
  ) {
    super(name, Buffer.from(token), token, ttlMs, until);
  }

  protected async renew(): Promise<boolean> {
    return (await this.client.eval(REDIS_SEMAPHORE_REFRESH, 1, this.name, this.limit, this.token, this.ttlMs, Date.now())) === 1;
  }

  protected async unlock(): Promise<boolean> {
    return (await this.client.zrem(this.name, this.token)) === 1;
  }
}

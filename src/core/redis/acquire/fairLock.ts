/**
 * Redisson's fair lock (RFairLock): a queue of waiters, each woken on its own channel, taken and released with
 * RedissonFairLock's scripts; renewed as an RLock is.
 */
import type Redis from 'ioredis';
import type { AcquireOptions } from '../../backend';
import type { AcquireContext } from './context';
import { fairLockChannel, lockChannel, lockQueueKey, lockTimeoutKey } from '../redissonNames';
import { FAIR_LEAVE, FAIR_LOCK, FAIR_THREAD_WAIT_MS, FAIR_UNLOCK, UNLOCK_MESSAGE } from '../scripts';
import type { RenewingHold } from './hold';
import { RedissonHold } from './redissonLock';
import { waitRedisson } from './redissonWait';

export async function acquireFair(ctx: AcquireContext, name: Buffer, ttlMs: number, options: AcquireOptions): Promise<RenewingHold> {
  const client = ctx.clients[0];
  const field = ctx.newField();
  const queue = lockQueueKey(name);
  const timeouts = lockTimeoutKey(name);
  return waitRedisson(ctx, name, ttlMs, options, {
    field,
    // Redisson wakes each fair waiter on its own channel.
    channels: [fairLockChannel(name, Buffer.from(field))],
    lock: async () => (await client.eval(FAIR_LOCK, 3, name, queue, timeouts, ttlMs, field, FAIR_THREAD_WAIT_MS, Date.now())) as number | null,
    ahead: () => positionOf(client, queue, field),
    mayTry: async () => {
      // Only a free lock with nobody waiting is taken.
      const [exists, waiting] = await Promise.all([client.exists(name), client.llen(queue)]);
      return exists === 0 && waiting === 0;
    },
    /**
     * Our place in the queue, and the lock itself if a lock script that failed here (a timeout) ran on the server
     * anyway. Both scripts act on our own fresh field only.
     */
    undo: async () => {
      await client.eval(FAIR_LEAVE, 2, queue, timeouts, field, FAIR_THREAD_WAIT_MS).catch(() => undefined);
      await unlockFair(client, name, field, ttlMs).catch(() => undefined);
    },
    hold: (until) => new FairHold(client, name, field, ttlMs, until),
  });
}

class FairHold extends RedissonHold {
  protected override unlock(): Promise<boolean> {
    return unlockFair(this.client, this.name, this.field, this.ttlMs);
  }
}

async function positionOf(client: Redis, queue: Buffer, field: string): Promise<number> {
  const list = (await client.lrange(queue, 0, -1)) as string[];
  const i = list.indexOf(field);
  return i < 0 ? 1 : i + 1;
}

/** RedissonFairLock's unlock for our field: true when it ended our hold (and woke the next waiter), false when it was not ours. */
async function unlockFair(client: Redis, name: Buffer, field: string, ttlMs: number): Promise<boolean> {
  return (await client.eval(FAIR_UNLOCK, 4, name, lockQueueKey(name), lockTimeoutKey(name), lockChannel(name), UNLOCK_MESSAGE, ttlMs, field, Date.now())) === 1;
}

/**
 * Redisson's RLock, taken with its own scripts and field format `<uuid>:<n>`: its waiters wake when we release, Redisson's
 * and its ports' (node-redisson keeps the hash, counts, Lua and message, and spells the channel its own way).
 */
import type Redis from 'ioredis';
import type { AcquireOptions } from '../../backend';
import type { AcquireContext } from './context';
import { wakePortWaiters } from '../portWake';
import { fairLockChannel, lockChannel, lockQueueKey, rlockChannels } from '../redissonNames';
import { REDISSON_LOCK, REDISSON_RENEW, REDISSON_UNLOCK, UNLOCK_MESSAGE } from '../scripts';
import { RenewingHold } from './hold';
import { waitRedisson } from './redissonWait';

export async function acquireRedisson(ctx: AcquireContext, name: Buffer, ttlMs: number, options: AcquireOptions): Promise<RenewingHold> {
  const client = ctx.clients[0];
  const field = ctx.newField();
  return waitRedisson(ctx, name, ttlMs, options, {
    field,
    // Redisson wakes RLock waiters on the lock's channel, node-redisson on its spelling of it.
    channels: rlockChannels(name),
    lock: async () => (await client.eval(REDISSON_LOCK, 1, name, ttlMs, field)) as number | null,
    ahead: () => Promise.resolve(1),
    /** The lock, if a lock script that failed here (a timeout) ran on the server anyway: the unlock acts on our own fresh field only. */
    undo: async () => {
      await unlockRedisson(client, name, field, ttlMs).catch(() => undefined);
    },
    hold: (until) => new RedissonHold(client, name, field, ttlMs, until),
  });
}

export class RedissonHold extends RenewingHold {
  constructor(
    protected readonly client: Redis,
    name: Buffer,
    protected readonly field: string,
    ttlMs: number,
    until: number,
  ) {
    super(name, Buffer.from(field), field, ttlMs, until);
  }

  protected async renew(): Promise<boolean> {
    return (await this.client.eval(REDISSON_RENEW, 1, this.name, this.ttlMs, this.field)) === 1;
  }

  protected unlock(): Promise<boolean> {
    return unlockRedisson(this.client, this.name, this.field, this.ttlMs);
  }
}

/** Redisson's unlock for our field: true when it ended our hold (and told the waiters), false when it was not ours. */
async function unlockRedisson(client: Redis, name: Buffer, field: string, ttlMs: number): Promise<boolean> {
  if ((await client.eval(REDISSON_UNLOCK, 2, name, lockChannel(name), UNLOCK_MESSAGE, ttlMs, field)) !== 1) return false;
  await wakePortWaiters(client, name);
  // A fair lock nobody waited for looked like an RLock when we took it; a Redisson fair waiter that queued since
  // listens on its own channel, not the lock's, and would sleep until its own retry. The head of a queue now is such
  // a waiter (one that queues after the delete finds the lock free): wake it as RedissonFairLock's unlock does.
  const head = await client.lindexBuffer(lockQueueKey(name), 0);
  if (head) await client.publish(fairLockChannel(name, head), UNLOCK_MESSAGE);
  return true;
}

/**
 * Telling a Redisson port's RLock waiters that the lock is free, beyond Redisson's channel, which the unlock script
 * itself published on. node-redisson listens on its own spelling of the channel where that differs (a name with a `{`
 * inside), or, with `eventAdapter: 'streams'`, reads the stream `redisson:events` instead of subscribing: its unlock
 * adds `<channel> <message>` there, trimmed to about 100 entries. LockLens adds to that stream only when it exists
 * (a streams fleet has made it with its first unlock and trimming never removes it): it never creates a key of its own.
 */
import type Redis from 'ioredis';
import { portLockChannel, rlockChannels } from './redissonNames';
import { UNLOCK_MESSAGE } from './scripts';

export const PORT_EVENT_STREAM = 'redisson:events';

/** Best effort, after the unlock itself succeeded: a waiter not told sleeps until the holder's TTL, as after a crash. */
export async function wakePortWaiters(client: Redis, name: Buffer): Promise<void> {
  try {
    for (const other of rlockChannels(name).slice(1)) await client.publish(other, UNLOCK_MESSAGE);
    if ((await client.type(PORT_EVENT_STREAM)) !== 'stream') return;
    await client.xadd(PORT_EVENT_STREAM, 'MAXLEN', '~', 100, '*', portLockChannel(name), UNLOCK_MESSAGE);
  } catch {
    // The stream's slot on another cluster master, an ACL without XADD, a connection lost after the unlock.
  }
}

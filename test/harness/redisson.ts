import Redis from 'ioredis';
import {
  FAIR_LOCK,
  FAIR_THREAD_WAIT_MS,
  READ_UNLOCK_MESSAGE,
  REDISSON_LOCK,
  RW_READ_LOCK,
  RW_READ_UNLOCK,
  RW_WRITE_LOCK,
  RW_WRITE_UNLOCK,
  UNLOCK_MESSAGE,
} from '../../src/core/redis/scripts';
import { lockQueueKey, lockTimeoutKey, rwKeyPrefix, rwLockChannel, rwTimeoutPrefix } from '../../src/core/redis/redissonNames';

/**
 * Redisson is Java and not installable here: these reproduce what a Redisson client writes, by running Redisson's own
 * Lua (RedissonLock, RedissonFairLock, RedissonReadLock, RedissonWriteLock) with its key names and `<uuid>:<thread>` fields.
 */
export const REDISSON_UUID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
export const OTHER_UUID = '6fa459ea-ee8a-3ca4-894e-db77e160355e';

export class FakeRedisson {
  constructor(readonly client: Redis) {}

  static connect(url: string): FakeRedisson {
    return new FakeRedisson(new Redis(url, { protocol: 2, maxRetriesPerRequest: 1 }));
  }

  /** RLock.lock() by thread `tid`; null: held, else the holder's PTTL. */
  lock(name: string, tid: number, leaseMs = 30_000, uuid = REDISSON_UUID): Promise<number | null> {
    return this.client.eval(REDISSON_LOCK, 1, name, leaseMs, `${uuid}:${tid}`) as Promise<number | null>;
  }

  /** RFairLock.lock() attempt: null held, else queued. */
  fairLock(name: string, tid: number, leaseMs = 30_000, uuid = REDISSON_UUID): Promise<number | null> {
    return this.client.eval(FAIR_LOCK, 3, name, lockQueueKey(Buffer.from(name)), lockTimeoutKey(Buffer.from(name)), leaseMs, `${uuid}:${tid}`, FAIR_THREAD_WAIT_MS, Date.now()) as Promise<number | null>;
  }

  /** RReadWriteLock.readLock().lock() attempt: null held, else the holder's PTTL. */
  readLock(name: string, tid: number, leaseMs = 30_000, uuid = REDISSON_UUID): Promise<number | null> {
    const field = `${uuid}:${tid}`;
    return this.client.eval(RW_READ_LOCK, 2, name, rwTimeoutPrefix(Buffer.from(name), field), leaseMs, field, `${field}:write`) as Promise<number | null>;
  }

  /** RReadWriteLock.writeLock().lock() attempt: null held, else the holder's PTTL. */
  writeLock(name: string, tid: number, leaseMs = 30_000, uuid = REDISSON_UUID): Promise<number | null> {
    return this.client.eval(RW_WRITE_LOCK, 1, name, leaseMs, `${uuid}:${tid}:write`) as Promise<number | null>;
  }

  /** readLock().unlock(): nil not held, 0 others still hold, 1 the lock ended (and its waiters were told). */
  readUnlock(name: string, tid: number, uuid = REDISSON_UUID): Promise<number | null> {
    const field = `${uuid}:${tid}`;
    const n = Buffer.from(name);
    return this.client.eval(RW_READ_UNLOCK, 4, name, rwLockChannel(n), rwTimeoutPrefix(n, field), rwKeyPrefix(n), UNLOCK_MESSAGE, field) as Promise<number | null>;
  }

  /** writeLock().unlock(): nil not held, 0 re-entered and still held, 1 released. */
  writeUnlock(name: string, tid: number, leaseMs = 30_000, uuid = REDISSON_UUID): Promise<number | null> {
    return this.client.eval(RW_WRITE_UNLOCK, 2, name, rwLockChannel(Buffer.from(name)), READ_UNLOCK_MESSAGE, leaseMs, `${uuid}:${tid}:write`) as Promise<number | null>;
  }

  dispose(): void {
    this.client.disconnect();
  }
}

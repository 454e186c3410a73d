import Redis from 'ioredis';
import { FAIR_LOCK, FAIR_THREAD_WAIT_MS, REDISSON_LOCK } from '../../src/core/redis/scripts';
import { lockQueueKey, lockTimeoutKey } from '../../src/core/redis/redissonNames';

/**
 * Redisson is Java and not installable here: these reproduce what a Redisson client writes, by running Redisson's own
 * Lua (RedissonLock, RedissonFairLock, RedissonReadLock) with its key names and `<uuid>:<thread>` fields.
 */
export const REDISSON_UUID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
export const OTHER_UUID = '6fa459ea-ee8a-3ca4-894e-db77e160355e';

/** RedissonReadLock.tryLockInnerAsync. */
const READ_LOCK = `
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'read');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('set', KEYS[2] .. ':1', 1);
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1);
  local key = KEYS[2] .. ':' .. ind;
  redis.call('set', key, 1);
  redis.call('pexpire', key, ARGV[1]);
  local remainTime = redis.call('pttl', KEYS[1]);
  redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1]));
  return nil;
end;
return redis.call('pttl', KEYS[1]);`;

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

  readLock(name: string, tid: number, leaseMs = 30_000, uuid = REDISSON_UUID): Promise<number | null> {
    const field = `${uuid}:${tid}`;
    const timeoutPrefix = `{${name}}:${field}:rwlock_timeout`;
    return this.client.eval(READ_LOCK, 2, name, timeoutPrefix, leaseMs, field, `${field}:write`) as Promise<number | null>;
  }

  dispose(): void {
    this.client.disconnect();
  }
}

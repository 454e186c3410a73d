/**
 * The Lua of the semaphore layouts, as their own clients run it, so that a permit LockLens takes or gives back is
 * counted by them exactly as one of theirs.
 */

/**
 * How redis-semaphore's scripts begin: the permits whose holder stopped refreshing dropped. KEYS[1] the sorted set;
 * ARGV limit, token, lockTimeout ms, now (the client's clock, as redis-semaphore scores it).
 */
const REDIS_SEMAPHORE_EXPIRED = `
local key = KEYS[1]
local now = tonumber(ARGV[4])
redis.call('zremrangebyscore', key, '-inf', now - tonumber(ARGV[3]))`;

/** The token scored now and the set's expiry pushed back a lockTimeout: a permit taken or kept. */
const REDIS_SEMAPHORE_HOLD = `
  redis.call('zadd', key, now, ARGV[2])
  redis.call('pexpire', key, ARGV[3])
  return 1
end
return 0`;

/** redis-semaphore's acquire (semaphore/acquire/lua.js): a permit taken if fewer than the limit are held. */
export const REDIS_SEMAPHORE_ACQUIRE = `${REDIS_SEMAPHORE_EXPIRED}
if redis.call('zcard', key) < tonumber(ARGV[1]) then${REDIS_SEMAPHORE_HOLD}`;

/** redis-semaphore's refresh (semaphore/refresh/lua.js): the same arguments; 0 when the token is no longer there. */
export const REDIS_SEMAPHORE_REFRESH = `${REDIS_SEMAPHORE_EXPIRED}
if redis.call('zscore', key, ARGV[2]) then${REDIS_SEMAPHORE_HOLD}`;

/**
 * RPermitExpirableSemaphore.tryReleaseAsync(permitId) for one permit: removes that id alone, gives its permit back to
 * the counter and publishes the count on the semaphore's channel, which wakes its waiters. KEYS the counter, the
 * channel, `{name}:timeout`; ARGV the id's bytes. 1 when the id was there.
 */
export const REDISSON_PERMIT_RELEASE = `
if tonumber(redis.call('zrem', KEYS[3], ARGV[1])) ~= 1 then return 0 end
local value = redis.call('incrby', KEYS[1], 1)
redis.call('publish', KEYS[2], value)
return 1`;

/**
 * Expired permit ids given back to the counter, told on the channel (RPermitExpirableSemaphore's scripts all begin so).
 * KEYS the counter, `{name}:timeout`, the channel; ARGV[3] now.
 */
const REDISSON_RECLAIM_EXPIRED = `
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1)
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds))
  local value = redis.call('incrby', KEYS[1], #expiredIds)
  if tonumber(value) > 0 then redis.call('publish', KEYS[3], value) end
end`;

/**
 * RPermitExpirableSemaphore.tryAcquireAsync for one permit: a permit is taken when the counter has one, the id scored
 * by when it expires. KEYS as REDISSON_RECLAIM_EXPIRED; ARGV the id's bytes, its expiry (epoch ms), now. 1 when taken.
 */
export const REDISSON_PERMIT_ACQUIRE = `${REDISSON_RECLAIM_EXPIRED}
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= 1 then
  redis.call('decrby', KEYS[1], 1)
  redis.call('zadd', KEYS[2], ARGV[2], ARGV[1])
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
  return 1
end
return 0`;

/** RPermitExpirableSemaphore.updateLeaseTimeAsync: the id's new expiry, if it still holds. ARGV as the acquire's. */
export const REDISSON_PERMIT_UPDATE_LEASE = `${REDISSON_RECLAIM_EXPIRED}
if redis.call('zscore', KEYS[2], ARGV[1]) ~= false then
  redis.call('zadd', KEYS[2], ARGV[2], ARGV[1])
  return 1
end
return 0`;

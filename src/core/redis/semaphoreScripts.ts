/**
 * The Lua of the semaphore layouts, as their own clients run it, so that a permit LockLens takes or gives back is
 * counted by them exactly as one of theirs.
 */

/**
 * redis-semaphore's acquire (semaphore/acquire/lua.js): drop the permits whose holder stopped refreshing, then take one
 * if fewer than the limit are held. KEYS[1] the sorted set; ARGV limit, token, lockTimeout ms, now (the client's clock,
 * as redis-semaphore scores it).
 */
export const REDIS_SEMAPHORE_ACQUIRE = `
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local now = tonumber(ARGV[4])
redis.call('zremrangebyscore', key, '-inf', now - tonumber(ARGV[3]))
if redis.call('zcard', key) < limit then
  redis.call('zadd', key, now, ARGV[2])
  redis.call('pexpire', key, ARGV[3])
  return 1
end
return 0`;

/** redis-semaphore's refresh (semaphore/refresh/lua.js): the same arguments; 0 when the token is no longer there. */
export const REDIS_SEMAPHORE_REFRESH = `
local key = KEYS[1]
local now = tonumber(ARGV[4])
redis.call('zremrangebyscore', key, '-inf', now - tonumber(ARGV[3]))
if redis.call('zscore', key, ARGV[2]) then
  redis.call('zadd', key, now, ARGV[2])
  redis.call('pexpire', key, ARGV[3])
  return 1
end
return 0`;

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

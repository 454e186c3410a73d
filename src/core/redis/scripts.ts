/**
 * The Lua each lock layout is taken, kept and released with. Redisson's are its own (RedissonLock.tryLockInnerAsync,
 * renewExpirationAsync, unlockInnerAsync, forceUnlockAsync) so a LockLens hold is indistinguishable from a Redisson
 * one and Redisson's waiters wake when it ends; the token ones are the classic compare-and-set recipe.
 */

/** KEYS[1] lock; ARGV[1] lease ms, ARGV[2] field. nil: taken (or re-entered); else the holder's PTTL. */
export const REDISSON_LOCK = `
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`;

/** KEYS[1] lock; ARGV[1] lease ms, ARGV[2] field. 1 while we hold it. */
export const REDISSON_RENEW = `
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;`;

/**
 * KEYS[1] lock, KEYS[2] channel; ARGV[1] unlock message (0), ARGV[2] lease ms, ARGV[3] field.
 * nil: not ours; 0: still held (re-entered); 1: released and waiters told.
 */
export const REDISSON_UNLOCK = `
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  return 0;
else
  redis.call('del', KEYS[1]);
  redis.call('publish', KEYS[2], ARGV[1]);
  return 1;
end;
return nil;`;

/**
 * A force-release guarded by what was shown: KEYS[1] lock, KEYS[2] channel; ARGV[1] field, ARGV[2] message,
 * ARGV[3] expected mode ('' for a plain lock). 1: deleted; 0: the field or mode is not there any more.
 */
export const REDISSON_FORCE_UNLOCK = `
if (redis.call('hexists', KEYS[1], ARGV[1]) == 0) then return 0; end;
if (ARGV[3] ~= '' and redis.call('hget', KEYS[1], 'mode') ~= ARGV[3]) then return 0; end;
redis.call('del', KEYS[1]);
redis.call('publish', KEYS[2], ARGV[2]);
return 1;`;

/** KEYS[1]; ARGV[1] token. 1: deleted. */
export const TOKEN_RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1]);
end;
return 0;`;

/** KEYS[1]; ARGV[1] token, ARGV[2] ms. 1: renewed. */
export const TOKEN_RENEW = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2]);
end;
return 0;`;

/** Redisson's unlock message (LockPubSub.UNLOCK_MESSAGE). */
export const UNLOCK_MESSAGE = '0';
/** Redisson's read/write lock unlock message (LockPubSub.READ_UNLOCK_MESSAGE), for readers woken by a writer's end. */
export const READ_UNLOCK_MESSAGE = '1';

/**
 * Drops waiters whose give-up time has passed, as every RedissonFairLock script starts, so that the head of the queue
 * is a live waiter. The Lua names of the queue, the timeouts and the current time are the script's own.
 */
function fairPurge(queue: string, timeouts: string, now: string): string {
  return `
while true do
  local firstThreadId2 = redis.call('lindex', ${queue}, 0);
  if firstThreadId2 == false then break; end;
  local timeout = tonumber(redis.call('zscore', ${timeouts}, firstThreadId2));
  if timeout == nil or timeout <= tonumber(${now}) then
    redis.call('zrem', ${timeouts}, firstThreadId2);
    redis.call('lpop', ${queue});
  else
    break;
  end;
end;`;
}

/**
 * RedissonFairLock.tryLockInnerAsync (wait variant). KEYS: lock, queue, timeouts. ARGV: lease ms, field, thread wait
 * ms (Redisson's 5 min default), now ms. nil: held; else ms until our turn might come (we are queued).
 */
export const FAIR_LOCK = `${fairPurge('KEYS[2]', 'KEYS[3]', 'ARGV[4]')}
if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
  redis.call('lpop', KEYS[2]);
  redis.call('zrem', KEYS[3], ARGV[2]);
  local keys = redis.call('zrange', KEYS[3], 0, -1);
  for i = 1, #keys, 1 do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);
  end;
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
local timeout = redis.call('zscore', KEYS[3], ARGV[2]);
if timeout ~= false then
  return timeout - tonumber(ARGV[3]) - tonumber(ARGV[4]);
end;
local lastThreadId = redis.call('lindex', KEYS[2], -1);
local ttl;
if lastThreadId ~= false and lastThreadId ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);
else
  ttl = redis.call('pttl', KEYS[1]);
end;
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2]);
end;
return ttl;`;

/** RedissonFairLock.acquireFailedAsync: leave the queue, giving those behind us our wait time back. KEYS: queue, timeouts. ARGV: field, thread wait ms. */
export const FAIR_LEAVE = `
local queue = redis.call('lrange', KEYS[1], 0, -1);
local i = 1;
while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1; end;
i = i + 1;
while i <= #queue do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i]);
  i = i + 1;
end;
redis.call('zrem', KEYS[2], ARGV[1]);
redis.call('lrem', KEYS[1], 0, ARGV[1]);
return 1;`;

/**
 * RedissonFairLock.unlockInnerAsync. KEYS: lock, queue, timeouts, channel. ARGV: message, lease ms, field, now ms.
 * nil: not ours; 0: still held (re-entered); 1: released, the head of the queue told on its own channel.
 */
export const FAIR_UNLOCK = `${fairPurge('KEYS[2]', 'KEYS[3]', 'ARGV[4]')}
if (redis.call('exists', KEYS[1]) == 0) then
  local nextThreadId = redis.call('lindex', KEYS[2], 0);
  if nextThreadId ~= false then
    redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]);
  end;
  return nil;
end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  return 0;
end;
redis.call('del', KEYS[1]);
local nextThreadId = redis.call('lindex', KEYS[2], 0);
if nextThreadId ~= false then
  redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]);
end;
return 1;`;

/** Redisson's default wait of a fair-lock waiter before others may drop it (threadWaitTime, 5 min). */
export const FAIR_THREAD_WAIT_MS = 300_000;

/**
 * A fair lock's force-release guarded by the field shown, as RedissonFairLock.forceUnlockAsync: KEYS lock, queue,
 * timeouts, channel; ARGV field, message, now ms. Waiters past their give-up time are dropped first, so the waiter woken
 * (on its own channel) is the first live one now, not a dead one that would leave the rest asleep until their retry.
 * 1: deleted; 0: not held by that field.
 */
export const FAIR_FORCE_UNLOCK = `
if (redis.call('hexists', KEYS[1], ARGV[1]) == 0) then return 0; end;
${fairPurge('KEYS[2]', 'KEYS[3]', 'ARGV[3]')}
redis.call('del', KEYS[1]);
local nextThreadId = redis.call('lindex', KEYS[2], 0);
if nextThreadId ~= false then
  redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[2]);
end;
return 1;`;

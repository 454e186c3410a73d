/**
 * The Lua each lock layout is taken, kept and released with. Redisson's are its own (RedissonLock, RedissonFairLock,
 * RedissonReadLock, RedissonWriteLock: tryLockInnerAsync, renewExpirationAsync, unlockInnerAsync, forceUnlockAsync) so
 * a LockLens hold is indistinguishable from a Redisson one and Redisson's waiters wake when it ends; the token ones are
 * the classic compare-and-set recipe.
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

// --- Redisson RReadWriteLock: one hash `mode` = read|write, readers `<uuid>:<thread>`, a writer `<uuid>:<thread>:write`,
// each read hold with its own timeout key; unlocks published on `redisson_rwlock:{name}` (RedissonReadLock,
// RedissonWriteLock). A writer's renewal is REDISSON_RENEW with its `:write` field.

/**
 * RedissonReadLock.tryLockInnerAsync. KEYS: lock, the reader's timeout key prefix (`{name}:<field>:rwlock_timeout`).
 * ARGV: lease ms, reader field, the same thread's writer field. nil: held (shared, re-entered, or inside our own write
 * hold); else the holder's PTTL.
 */
export const RW_READ_LOCK = `
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

/** RedissonWriteLock.tryLockInnerAsync. KEYS: lock. ARGV: lease ms, writer field. nil: held (or re-entered); else the holder's PTTL. */
export const RW_WRITE_LOCK = `
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'write');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'write') then
  if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    local currentExpire = redis.call('pttl', KEYS[1]);
    redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]);
    return nil;
  end;
end;
return redis.call('pttl', KEYS[1]);`;

/**
 * How both of Redisson's read/write unlocks begin (KEYS[1] lock, KEYS[2] channel, ARGV[1] message): a lock that is
 * gone already is said released (1), and its waiters told. `mode` stays the scripts' local.
 */
const RW_UNLOCK_GONE = `
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('publish', KEYS[2], ARGV[1]);
  return 1;
end;`;

/**
 * RedissonWriteLock.unlockInnerAsync. KEYS: lock, channel. ARGV: message (Redisson sends READ_UNLOCK_MESSAGE here, which
 * wakes every waiter, not one), lease ms, writer field. nil: not ours; 0: still held (re-entered); 1: our write hold
 * ended (the hash deleted and its waiters told, or left in read mode for the same thread's read holds), or the lock
 * was gone already.
 */
export const RW_WRITE_UNLOCK = `${RW_UNLOCK_GONE}
if (mode == 'write') then
  local lockExists = redis.call('hexists', KEYS[1], ARGV[3]);
  if (lockExists == 0) then
    return nil;
  else
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
    if (counter > 0) then
      redis.call('pexpire', KEYS[1], ARGV[2]);
      return 0;
    else
      redis.call('hdel', KEYS[1], ARGV[3]);
      if (redis.call('hlen', KEYS[1]) == 1) then
        redis.call('del', KEYS[1]);
        redis.call('publish', KEYS[2], ARGV[1]);
      else
        redis.call('hset', KEYS[1], 'mode', 'read');
      end;
      return 1;
    end;
  end;
end;
return nil;`;

/**
 * The loop RedissonReadLock's unlock and renewal share: for every field of the hash KEYS[1] that has a count (every
 * read hold and the writer; not `mode`), each of its timeout keys `<prefix>:<field>:rwlock_timeout:<count…1>`, with
 * `body` given that key as a Lua expression. Redisson's own text, with `counter` the scripts' local.
 */
function eachReadTimeout(prefix: string, body: (timeoutKey: string) => string): string {
  return `local keys = redis.call('hkeys', KEYS[1]);
  for n, key in ipairs(keys) do
    counter = tonumber(redis.call('hget', KEYS[1], key));
    if type(counter) == 'number' then
      for i=counter, 1, -1 do
        ${body(`${prefix} .. ':' .. key .. ':rwlock_timeout:' .. i`)}
      end;
    end;
  end;`;
}

/**
 * RedissonReadLock.unlockInnerAsync. KEYS: lock, channel, the reader's timeout key prefix, the timeout keys' common
 * prefix (`{name}`). ARGV: message (UNLOCK_MESSAGE), reader field. nil: not ours; 0: released, others still hold
 * (the hash kept alive as long as their longest timeout); 1: the last hold ended, the hash deleted and waiters told.
 */
export const RW_READ_UNLOCK = `${RW_UNLOCK_GONE}
local lockExists = redis.call('hexists', KEYS[1], ARGV[2]);
if (lockExists == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1);
if (counter == 0) then
  redis.call('hdel', KEYS[1], ARGV[2]);
end;
redis.call('del', KEYS[3] .. ':' .. (counter+1));
if (redis.call('hlen', KEYS[1]) > 1) then
  local maxRemainTime = -3;
  ${eachReadTimeout('KEYS[4]', (key) => `local remainTime = redis.call('pttl', ${key});
        maxRemainTime = math.max(remainTime, maxRemainTime);`)}
  if maxRemainTime > 0 then
    redis.call('pexpire', KEYS[1], maxRemainTime);
    return 0;
  end;
  if mode == 'write' then
    return 0;
  end;
end;
redis.call('del', KEYS[1]);
redis.call('publish', KEYS[2], ARGV[1]);
return 1;`;

/**
 * RedissonReadLock.renewExpirationAsync. KEYS: lock, the timeout keys' common prefix (`{name}`). ARGV: lease ms, reader
 * field. 1 while we hold a read: the hash and every reader's timeout keys renewed; 0: our field is gone.
 */
export const RW_READ_RENEW = `
local counter = redis.call('hget', KEYS[1], ARGV[2]);
if (counter ~= false) then
  redis.call('pexpire', KEYS[1], ARGV[1]);
  if (redis.call('hlen', KEYS[1]) > 1) then
    ${eachReadTimeout('KEYS[2]', (key) => `redis.call('pexpire', ${key}, ARGV[1]);`)}
  end;
  return 1;
end;
return 0;`;

/** Redisson's unlock message (LockPubSub.UNLOCK_MESSAGE). */
export const UNLOCK_MESSAGE = '0';
/**
 * Redisson's read/write lock unlock message (LockPubSub.READ_UNLOCK_MESSAGE): a writer's unlock and forceUnlock send it,
 * and it wakes every waiter of the lock (readers may all enter), where UNLOCK_MESSAGE wakes one.
 */
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

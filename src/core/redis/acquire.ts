/**
 * Taking a lock from LockLens so that it excludes the services that use the same name: a name that is a Redisson lock
 * now is taken with Redisson's own scripts and field format (its waiters wake when we release); a read/write lock (or
 * a free name, asked for with a mode) with RedissonReadLock's and RedissonWriteLock's; a semaphore's permit with its
 * client's scripts (redis-semaphore's, or RPermitExpirableSemaphore's: see semaphores.ts); any other name with the token
 * recipe redis-py, redlock, Spring and the classic article share (SET NX PX, compare-and-delete), on a majority of the
 * instances when several are configured (redlock). Each recipe is a module of acquire/; this one picks it by what the
 * name holds now, and for a name that holds nothing by `AcquireOptions.layout` (else the descriptor's default).
 */
import type Redis from 'ioredis';
import type { AcquireOptions } from '../backend';
import { LockLensError, throwIfAborted } from '../errors';
import { layoutById } from '../freeNameLayout';
import { checkedPermitLimit } from '../permitCount';
import { displayKey } from '../keys';
import { acquireFair } from './acquire/fairLock';
import type { RenewingHold } from './acquire/hold';
import type { AcquireContext } from './acquire/context';
import { acquireReadWrite } from './acquire/readWriteLock';
import { acquireRedisSemaphore } from './acquire/redisSemaphore';
import { acquireRedissonPermit } from './acquire/redissonPermitSemaphore';
import { acquireRedisson } from './acquire/redissonLock';
import { acquireToken } from './acquire/tokenLock';
import { storeError } from './keyspaceReader';
import { redissonLockField, redissonRwShape } from './recognize';
import { REDIS_LAYOUTS, REDLOCK_LAYOUTS } from './layouts';
import { lockQueueKey } from './redissonNames';
import { redissonSemaphoreKind } from './semaphoreReads';
import { SEMAPHORE_CONVENTIONS, isIntegerValue, isRedisSemaphoreKey } from './semaphores';

type Layout = 'free' | 'token' | 'redisson' | 'redisson-fair' | 'redisson-rw' | 'redis-semaphore' | 'redisson-permits';

/** What a name is now, for a sentence: "… is a token lock". */
const LAYOUT_NAMES: Record<Exclude<Layout, 'free' | 'redisson-rw'>, string> = {
  token: 'a token lock (SET NX PX: redis-py, redlock, the classic recipe)',
  redisson: 'a Redisson lock (RLock)',
  'redisson-fair': 'a Redisson fair lock (RFairLock)',
  'redis-semaphore': 'a redis-semaphore Semaphore (npm)',
  'redisson-permits': 'a Redisson RPermitExpirableSemaphore',
};

async function layoutOf(client: Redis, name: Buffer, layout?: string): Promise<Layout> {
  const [type, queueLen] = await Promise.all([client.type(name), client.llen(lockQueueKey(name))]);
  if (queueLen > 0 && (type === 'hash' || type === 'none')) return 'redisson-fair';
  if (type === 'none') return 'free';
  if (type === 'string') {
    const semaphore = await redissonSemaphoreKind(client, name);
    // With every permit free an RPermitExpirableSemaphore is its counter alone: only the layout asked for tells it.
    if (semaphore === 'permits' || (layout === SEMAPHORE_CONVENTIONS.redissonPermitSemaphore && isIntegerValue((await client.getBuffer(name)) ?? undefined))) return 'redisson-permits';
    if (semaphore === 'counter') {
      throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is a Redisson RSemaphore, whose holders Redis does not record: LockLens shows its permits left but does not take one`);
    }
    return 'token';
  }
  if (type === 'zset' && isRedisSemaphoreKey(name)) return 'redis-semaphore';
  if (type === 'hash') {
    const size = await client.hlen(name);
    // A read/write lock has one field per reader: many readers are normal, and its `mode` field says what it is.
    const mode = await client.hget(name, 'mode');
    if (mode === 'read' || mode === 'write') return 'redisson-rw';
    if (size <= 16) {
      const flat = (await client.callBuffer('HGETALL', name)) as Buffer[];
      const fields: [Buffer, Buffer][] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) fields.push([flat[i], flat[i + 1]]);
      if (fields.length === 0) return 'free';
      if (redissonLockField(fields, await client.pttl(name))) return 'redisson';
      if (redissonRwShape(fields)) return 'redisson-rw';
    }
  }
  throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} holds a Redis ${type} that is not a lock layout LockLens knows: it will not overwrite it`);
}

/**
 * A free name is taken as a redis-semaphore permit when a limit or that layout is asked for; redis-semaphore's clients
 * look for `semaphore:<key>`, so a name without that prefix would be a semaphore none of them sees.
 */
function wantsSemaphore(name: Buffer, options: AcquireOptions): boolean {
  if (options.permitLimit === undefined && options.layout !== SEMAPHORE_CONVENTIONS.redisSemaphore) return false;
  if (!isRedisSemaphoreKey(name)) {
    throw new LockLensError('INVALID_ARGUMENT', `redis-semaphore keeps Semaphore(client, 'KEY', limit) at semaphore:KEY: take ${displayKey(name)}'s permit as semaphore:${displayKey(name)}`);
  }
  return true;
}

/** The limit every redis-semaphore call states, which the store does not keep. */
function permitLimitOf(name: Buffer, options: AcquireOptions): number {
  const limit = options.permitLimit;
  if (limit === undefined) throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is ${LAYOUT_NAMES['redis-semaphore']}, whose limit only its clients know: say how many permits it has`);
  return checkedPermitLimit(limit);
}

export async function acquire(ctx: AcquireContext, nameBytes: Uint8Array, options: AcquireOptions): Promise<RenewingHold> {
  const name = Buffer.from(nameBytes);
  if (!(options.ttlSeconds > 0)) throw new LockLensError('INVALID_ARGUMENT', 'the TTL must be positive');
  const mode = options.mode;
  if (mode !== undefined && mode !== 'read' && mode !== 'write') throw new LockLensError('INVALID_ARGUMENT', `the mode is read or write, not '${String(mode)}'`);
  throwIfAborted(options.signal);
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000));
  try {
    if (ctx.clients.length > 1) {
      if (options.layout !== undefined) layoutById(REDLOCK_LAYOUTS, options.layout);
      if (options.permitLimit !== undefined) throw new LockLensError('INVALID_ARGUMENT', `LockLens takes a redis-semaphore permit on one Redis, not on ${ctx.clients.length} independent instances`);
      if (mode) {
        throw new LockLensError('INVALID_ARGUMENT', `a Redisson read/write lock lives on one Redis: ${displayKey(name)} cannot be taken for ${mode} on ${ctx.clients.length} independent instances`);
      }
      return await acquireToken(ctx.clients, name, ttlMs, options);
    }
    const layout = await layoutOf(ctx.clients[0], name, options.layout);
    const semaphore = layout === 'redis-semaphore' || layout === 'redisson-permits' || (layout === 'free' && wantsSemaphore(name, options));
    if (semaphore && mode) throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is a semaphore: take a permit without a read or write mode`);
    // Redisson keeps the limit (free plus held): a permit is taken while the counter has one, whatever --permits says.
    if (layout === 'redisson-permits') return await acquireRedissonPermit(ctx.clients[0], name, ttlMs, options);
    if (semaphore) return await acquireRedisSemaphore(ctx.clients[0], name, permitLimitOf(name, options), ttlMs, options);
    // No layout given (a caller that does not choose one: the CLI and VS Code always do): the token recipe, as before
    // layouts could be chosen.
    if (layout === 'free') return await acquireFree(ctx, name, ttlMs, options, freeLayout(options.layout) ?? (mode ? 'redisson-rw' : 'token'));
    if (mode) {
      if (layout !== 'redisson-rw') {
        throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is ${LAYOUT_NAMES[layout]}, not a read/write lock: take it without a read or write mode`);
      }
      return await acquireReadWrite(ctx, name, ttlMs, options, mode);
    }
    switch (layout) {
      case 'token':
        return await acquireToken(ctx.clients, name, ttlMs, options);
      case 'redisson-rw':
        throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is a Redisson read/write lock: choose read or write to take it`);
      case 'redisson':
        return await acquireRedisson(ctx, name, ttlMs, options);
      case 'redisson-fair':
        return await acquireFair(ctx, name, ttlMs, options);
    }
  } catch (e) {
    // The name changed layout under us: a token client took it between our look and our Redisson script (a free
    // name), or while we waited for a Redisson holder, and the script met a string. Look again, and take the name in
    // what it holds now.
    if (e instanceof Error && e.message.startsWith('WRONGTYPE') && !options.signal?.aborted) return acquire(ctx, nameBytes, options);
    throw e instanceof LockLensError ? e : storeError(e);
  }
}

/** The descriptor's layout asked for (`--layout`), checked; a semaphore's layouts are taken before (see acquire). */
function freeLayout(asked: string | undefined): string | undefined {
  return asked === undefined ? undefined : layoutById(REDIS_LAYOUTS, asked).id;
}

/** A name that holds nothing, taken in the layout asked for (see the descriptor's freeNameLayouts). */
function acquireFree(ctx: AcquireContext, name: Buffer, ttlMs: number, options: AcquireOptions, layout: string): Promise<RenewingHold> {
  if (options.mode && layout !== 'redisson-rw') {
    throw new LockLensError('INVALID_ARGUMENT', `the layout ${layout} has no read/write form: ${displayKey(name)} is taken for ${options.mode} as redisson-rw`);
  }
  switch (layout) {
    case 'redisson':
      return acquireRedisson(ctx, name, ttlMs, options);
    case 'redisson-fair':
      return acquireFair(ctx, name, ttlMs, options);
    case 'redisson-rw':
      if (!options.mode) throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is free: a Redisson read/write lock is taken for reading or writing (a mode)`);
      return acquireReadWrite(ctx, name, ttlMs, options, options.mode);
    default:
      return acquireToken(ctx.clients, name, ttlMs, options);
  }
}

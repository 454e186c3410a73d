/**
 * How every kind of Redisson lock is waited for, as Redisson's own lock() does: run the lock script, and until it says
 * held, sleep until an unlock message on the lock's channel or the holder's PTTL.
 */
import type Redis from 'ioredis';
import type { AcquireOptions } from '../../backend';
import type { Disposable } from '../../emitter';
import { LockLensError, abortError, throwIfAborted } from '../../errors';
import { displayKey } from '../../keys';
import { sleep } from '../../sleep';
import type { AcquireContext } from './context';
import type { RenewingHold } from './hold';
import { RETRY_MS, validUntil } from './timing';

/** The longest a Redisson waiter sleeps between tries when no unlock message comes (a holder that died). */
const REDISSON_RETRY_MAX_MS = 1000;

/** How far the lock script of an attempt that did not end in a hold got, for what there is to undo. */
type Outcome = 'taken' | 'refused' | 'unknown';

/** One kind of Redisson lock: its scripts, its channel, its hold. */
export interface RedissonWay<H extends RenewingHold> {
  /** The field we hold with, told in onQueue. */
  readonly field: string;
  /** Where the lock's unlocks are published (an RLock's by Redisson and by node-redisson, when they spell it apart). */
  readonly channels: readonly Buffer[];
  /** The lock script, once: null when held; else the holder's PTTL (or the wait the script asks for). */
  lock(): Promise<number | null>;
  /** Members ahead of us after a refusal: our place in a fair queue, else 1 (the holder). */
  ahead(): Promise<number>;
  /** With tryOnly: whether to run the lock script at all (Redisson's fair tryLock() without waiting never queues). */
  mayTry?(): Promise<boolean>;
  /** Leaves nothing of ours behind when the attempt does not end in a hold. */
  undo(outcome: Outcome): Promise<void>;
  hold(until: number): H;
}

export async function waitRedisson<H extends RenewingHold>(ctx: AcquireContext, name: Buffer, ttlMs: number, options: AcquireOptions, way: RedissonWay<H>): Promise<H> {
  const client = ctx.clients[0];
  let outcome: Outcome = 'refused';
  /** nil when taken, with the time its lock script was sent (see validUntil); else the holder's PTTL. */
  const tryLock = async (): Promise<{ held: true; until: number } | { held: false; ttl: number }> => {
    const sentAt = Date.now();
    outcome = 'unknown';
    const ttl = await way.lock();
    outcome = ttl === null ? 'taken' : 'refused';
    return ttl === null ? { held: true, until: validUntil(sentAt, ttlMs) } : { held: false, ttl };
  };

  let wake: { promise: Promise<void>; resolve: () => void } | undefined;
  const renewWake = () => {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    wake = { promise, resolve };
  };
  renewWake();
  let subscriptions: Disposable[] | undefined;
  let announced: number | undefined;
  try {
    for (;;) {
      throwIfAborted(options.signal);
      if (options.tryOnly && way.mayTry) {
        if (await way.mayTry()) {
          const tried = await tryLock();
          if (tried.held) return way.hold(tried.until);
        }
        throw await lockedError(client, name);
      }
      const tried = await tryLock();
      if (tried.held) {
        if (options.signal?.aborted) throw abortError(options.signal);
        if (announced !== 0) options.onQueue?.({ key: Buffer.from(way.field), ahead: 0, fencingToken: null });
        return way.hold(tried.until);
      }
      if (options.tryOnly) throw await lockedError(client, name);
      const ahead = await way.ahead();
      if (announced !== ahead) {
        announced = ahead;
        options.onQueue?.({ key: Buffer.from(way.field), ahead, fencingToken: null });
      }
      if (!subscriptions) {
        const sub = await ctx.subscriber();
        subscriptions = [];
        for (const channel of way.channels) subscriptions.push(await sub.subscribe(channel, () => wake?.resolve()));
        continue; // a release between our try and the subscription would otherwise be missed
      }
      await sleep(Math.max(RETRY_MS, Math.min(tried.ttl > 0 ? tried.ttl : RETRY_MS, REDISSON_RETRY_MAX_MS)), options.signal, { wake: wake?.promise });
      renewWake();
    }
  } catch (e) {
    await way.undo(outcome);
    throw e;
  } finally {
    for (const s of subscriptions ?? []) s.dispose();
  }
}

async function lockedError(client: Redis, name: Buffer): Promise<LockLensError> {
  // A read/write lock's `mode` field is no holder.
  const flat = (((await client.callBuffer('HKEYS', name).catch(() => [])) as Buffer[]) ?? []).filter((f) => f.toString('latin1') !== 'mode');
  const owner = flat.length ? flat.map((f) => displayKey(f)).join(', ') : 'another client';
  return new LockLensError('LOCKED', `${displayKey(name)} is held by ${owner}`);
}

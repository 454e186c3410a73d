/**
 * Taking a lock from LockLens so that it excludes the services that use the same name: a name that is a Redisson lock
 * now is taken with Redisson's own scripts and field format (its waiters wake when we release); any other name with
 * the token recipe redis-py, redlock, Spring and the classic article share (SET NX PX, compare-and-delete), on a
 * majority of the instances when several are configured (redlock). A hold renews itself every TTL/3 and says at once
 * when a renewal finds it gone: a holder is never silently assumed.
 */
import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import type { AcquireOptions, LockHold, QueuePosition } from '../backend';
import { Emitter, type Disposable, type Event } from '../emitter';
import { LockLensError, abortError, errorMessage, throwIfAborted } from '../errors';
import { displayKey } from '../keys';
import { sleep } from '../sleep';
import { storeError } from './keyspaceReader';
import { redissonLockField, redissonRwShape } from './recognize';
import { fairLockChannel, lockChannel, lockQueueKey, lockTimeoutKey } from './redissonNames';
import {
  FAIR_LEAVE,
  FAIR_LOCK,
  FAIR_THREAD_WAIT_MS,
  FAIR_UNLOCK,
  REDISSON_LOCK,
  REDISSON_RENEW,
  REDISSON_UNLOCK,
  TOKEN_RELEASE,
  TOKEN_RENEW,
  UNLOCK_MESSAGE,
} from './scripts';
import type { Subscriber } from './subscriber';

export interface AcquireContext {
  /** One client per independent instance; the first is the one Redisson locks live on. */
  readonly clients: readonly Redis[];
  readonly subscriber: () => Promise<Subscriber>;
  /** A fresh Redisson-style field `<uuid>:<n>` for this hold. */
  readonly newField: () => string;
}

/** How often a waiter tries again when nothing wakes it sooner (redis-py polls every 0.1 s). */
const RETRY_MS = 100;
/** How soon a renewal that failed (an error, not a refusal) is tried again. */
const RENEW_RETRY_MS = 250;
/** The longest a Redisson waiter sleeps between tries when no unlock message comes (a holder that died). */
const REDISSON_RETRY_MAX_MS = 1000;

type Layout = 'redisson' | 'redisson-fair' | 'token';

async function layoutOf(client: Redis, name: Buffer): Promise<Layout> {
  const [type, queueLen] = await Promise.all([client.type(name), client.llen(lockQueueKey(name))]);
  if (queueLen > 0 && (type === 'hash' || type === 'none')) return 'redisson-fair';
  if (type === 'none' || type === 'string') return 'token';
  if (type === 'hash') {
    const size = await client.hlen(name);
    if (size <= 16) {
      const flat = (await client.callBuffer('HGETALL', name)) as Buffer[];
      const fields: [Buffer, Buffer][] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) fields.push([flat[i], flat[i + 1]]);
      if (fields.length === 0) return 'token';
      if (redissonLockField(fields)) return 'redisson';
      if (redissonRwShape(fields)) {
        throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is a Redisson read/write lock: LockLens does not take those (take it from the service's own RReadWriteLock)`);
      }
    }
  }
  throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} holds a Redis ${type} that is not a lock layout LockLens knows: it will not overwrite it`);
}

export async function acquire(ctx: AcquireContext, nameBytes: Uint8Array, options: AcquireOptions): Promise<RenewingHold> {
  const name = Buffer.from(nameBytes);
  if (!(options.ttlSeconds > 0)) throw new LockLensError('INVALID_ARGUMENT', 'the TTL must be positive');
  throwIfAborted(options.signal);
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000));
  try {
    const layout = ctx.clients.length > 1 ? 'token' : await layoutOf(ctx.clients[0], name);
    if (layout === 'token') return await acquireToken(ctx, name, ttlMs, options);
    return await acquireRedisson(ctx, name, ttlMs, options, layout === 'redisson-fair');
  } catch (e) {
    throw e instanceof LockLensError ? e : storeError(e);
  }
}

// --- the token recipe (redis-py, redlock, Spring, the classic article) ---

/** Redlock's allowance for clock drift between us and the servers: 1% of the TTL plus 2 ms. */
function driftMs(ttlMs: number): number {
  return Math.round(ttlMs * 0.01) + 2;
}

/**
 * Until when a PX of `ttlMs` set by a command sent at `sentAt` is certainly still in force: the server started the TTL
 * when it ran the command, which was after we sent it, so counting from the send (less the drift) never overestimates.
 */
function validUntil(sentAt: number, ttlMs: number): number {
  return sentAt + ttlMs - driftMs(ttlMs);
}


function quorumOf(n: number): number {
  return Math.floor(n / 2) + 1;
}

async function settleAll<T>(promises: Promise<T>[]): Promise<(T | Error)[]> {
  return Promise.all(promises.map((p) => p.catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))))));
}

async function releaseToken(clients: readonly Redis[], name: Buffer, token: string): Promise<number> {
  const results = await settleAll(clients.map((c) => c.eval(TOKEN_RELEASE, 1, name, token) as Promise<number>));
  return results.filter((r) => r === 1).length;
}

async function acquireToken(ctx: AcquireContext, name: Buffer, ttlMs: number, options: AcquireOptions): Promise<RenewingHold> {
  const token = randomBytes(16).toString('hex');
  const clients = ctx.clients;
  const quorum = quorumOf(clients.length);
  let announced: number | undefined;
  const announce = (p: QueuePosition) => {
    if (announced === p.ahead) return;
    announced = p.ahead;
    options.onQueue?.(p);
  };
  for (;;) {
    throwIfAborted(options.signal);
    const started = Date.now();
    const results = await settleAll(clients.map((c) => c.set(name, token, 'PX', ttlMs, 'NX')));
    const agree = results.filter((r) => r === 'OK').length;
    const failures = results.filter((r): r is Error => r instanceof Error);
    // Redlock: held only with a majority, within what is left of the TTL after the round trip and clock drift.
    const until = validUntil(started, ttlMs);
    if (agree >= quorum && until > Date.now()) {
      if (options.signal?.aborted) {
        await releaseToken(clients, name, token);
        throw abortError(options.signal);
      }
      announce({ key: name, ahead: 0, fencingToken: null });
      return new TokenHold(clients, name, token, ttlMs, until);
    }
    // Not held: undo it everywhere, also where the SET failed, since a command that timed out here may still have
    // run on the server (redlock's rule). Compare-and-delete on our own token never touches anyone else's.
    if (agree > 0 || failures.length > 0) await releaseToken(clients, name, token);
    if (failures.length > clients.length - quorum) throw storeError(failures[0]);
    if (options.tryOnly) {
      const holder = await clients[0].getBuffer(name).catch(() => null);
      throw new LockLensError('LOCKED', `${displayKey(name)} is held by ${holder ? displayKey(holder) : 'another client'}`);
    }
    announce({ key: name, ahead: 1, fencingToken: null });
    await sleep(RETRY_MS, options.signal);
  }
}

export abstract class RenewingHold implements LockHold {
  readonly fencingToken = null;
  readonly revision = null;
  private readonly lostEmitter = new Emitter<LockLensError>();
  readonly onDidLose: Event<LockLensError> = this.lostEmitter.event;
  private lostError: LockLensError | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Fires when the TTL of the last confirmed renewal runs out: the hold cannot be vouched for after that. */
  private expiryTimer: NodeJS.Timeout | undefined;
  private lastFailure: unknown;
  private isEnded = false;

  constructor(
    readonly name: Buffer,
    readonly key: Buffer,
    readonly owner: string,
    protected readonly ttlMs: number,
    /** See validUntil: from the acquiring command's send time. */
    until: number,
  ) {
    this.extend(until);
    this.schedule();
  }

  get lost(): LockLensError | undefined {
    return this.lostError;
  }

  /** Released or lost: nothing keeps it alive any more. */
  get ended(): boolean {
    return this.isEnded;
  }

  /**
   * The connection it was held through is closing: it cannot be renewed or released from here any more, so it is
   * lost now (its renewal stops) rather than after a whole TTL of failed renewals. The key expires by its TTL.
   */
  abandon(error: LockLensError): void {
    this.lose(error);
  }

  /** true: still ours and renewed; false: gone or changed. Throws when the store could not be asked. */
  protected abstract renew(): Promise<boolean>;
  /** true: released by us; false: it was not ours any more. */
  protected abstract unlock(): Promise<boolean>;

  /** Every TTL/3 while renewals succeed; sooner after one failed, so that a passing fault gets several more tries before the TTL runs out. */
  private schedule(afterFailure = false): void {
    const every = Math.max(50, Math.floor(this.ttlMs / 3));
    this.timer = setTimeout(() => void this.tick(), afterFailure ? Math.min(every, RENEW_RETRY_MS) : every);
  }

  /**
   * Re-arms the loss deadline. It runs on its own timer, not after a renewal settles: a renewal can hang for the whole
   * command timeout (a frozen server, a dead link), and the key may expire, and be taken by another client, meanwhile.
   */
  private extend(until: number): void {
    clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(() => this.expire(), Math.max(0, until - Date.now()));
  }

  private expire(): void {
    if (this.isEnded) return;
    const why = this.lastFailure === undefined ? 'Redis did not answer' : errorMessage(this.lastFailure);
    this.lose(new LockLensError('LOCK_LOST', `lost ${displayKey(this.name)}: could not renew it before its TTL ran out (${why})`, { cause: this.lastFailure }));
    // A renewal may still land late and keep the key ours for another TTL, blocking everyone for nothing: delete it if
    // it is still ours (compare-and-delete, so never someone else's), queued behind that renewal on the connection.
    void this.unlock().catch(() => undefined);
  }

  private async tick(): Promise<void> {
    if (this.isEnded) return;
    const sentAt = Date.now();
    try {
      if (!(await this.renew())) {
        return this.lose(new LockLensError('LOCK_LOST', `lost ${displayKey(this.name)}: the key was deleted or taken by someone else`));
      }
      if (!this.isEnded) this.extend(validUntil(sentAt, this.ttlMs));
    } catch (e) {
      this.lastFailure = e;
      if (!this.isEnded) this.schedule(true);
      return;
    }
    if (!this.isEnded) this.schedule();
  }

  protected lose(error: LockLensError): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.stopTimers();
    this.lostError = error;
    this.lostEmitter.fire(error);
  }

  private stopTimers(): void {
    clearTimeout(this.timer);
    clearTimeout(this.expiryTimer);
  }

  async release(): Promise<boolean> {
    if (this.isEnded) return false;
    this.isEnded = true;
    this.stopTimers();
    try {
      return await this.unlock();
    } catch (e) {
      throw storeError(e);
    } finally {
      this.lostEmitter.dispose();
    }
  }

  dispose(): void {
    void this.release().catch(() => undefined);
  }
}

class TokenHold extends RenewingHold {
  constructor(
    private readonly clients: readonly Redis[],
    name: Buffer,
    private readonly token: string,
    ttlMs: number,
    until: number,
  ) {
    super(name, name, token, ttlMs, until);
  }

  protected async renew(): Promise<boolean> {
    const results = await settleAll(this.clients.map((c) => c.eval(TOKEN_RENEW, 1, this.name, this.token, this.ttlMs) as Promise<number>));
    const renewed = results.filter((r) => r === 1).length;
    const refused = results.filter((r) => r === 0).length;
    const quorum = quorumOf(this.clients.length);
    if (renewed >= quorum) return true;
    // Gone on enough instances that a majority can no longer be ours: lost now, not after a TTL.
    if (refused > this.clients.length - quorum) return false;
    throw results.find((r) => r instanceof Error) ?? new Error('no majority renewed');
  }

  protected async unlock(): Promise<boolean> {
    return (await releaseToken(this.clients, this.name, this.token)) >= quorumOf(this.clients.length);
  }
}

// --- Redisson RLock / RFairLock ---

async function acquireRedisson(ctx: AcquireContext, name: Buffer, ttlMs: number, options: AcquireOptions, fair: boolean): Promise<RenewingHold> {
  const client = ctx.clients[0];
  const field = ctx.newField();
  const queue = lockQueueKey(name);
  const timeouts = lockTimeoutKey(name);
  /** nil when taken, with the time its lock script was sent (see validUntil); else the holder's PTTL. */
  const tryLock = async (): Promise<{ held: true; until: number } | { held: false; ttl: number }> => {
    const sentAt = Date.now();
    const ttl = fair
      ? ((await client.eval(FAIR_LOCK, 3, name, queue, timeouts, ttlMs, field, FAIR_THREAD_WAIT_MS, sentAt)) as number | null)
      : ((await client.eval(REDISSON_LOCK, 1, name, ttlMs, field)) as number | null);
    return ttl === null ? { held: true, until: validUntil(sentAt, ttlMs) } : { held: false, ttl };
  };
  const hold = (until: number) => new RedissonHold(client, name, field, ttlMs, fair, until);
  /**
   * Leaves nothing of ours behind when we do not end up holding: our place in a fair queue, and the lock itself if a
   * lock script that failed here (a timeout) ran on the server anyway. Both scripts act on our own fresh field only.
   */
  const undo = async () => {
    if (fair) await client.eval(FAIR_LEAVE, 2, queue, timeouts, field, FAIR_THREAD_WAIT_MS).catch(() => undefined);
    await unlockRedisson(client, name, field, ttlMs, fair).catch(() => undefined);
  };

  let wake: { promise: Promise<void>; resolve: () => void } | undefined;
  const renewWake = () => {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    wake = { promise, resolve };
  };
  renewWake();
  let subscription: Disposable | undefined;
  let announced: number | undefined;
  try {
    for (;;) {
      throwIfAborted(options.signal);
      if (options.tryOnly && fair) {
        // Redisson's tryLock() without waiting never joins the queue: only a free lock with nobody waiting is taken.
        const [exists, waiting] = await Promise.all([client.exists(name), client.llen(queue)]);
        if (exists === 0 && waiting === 0) {
          const tried = await tryLock();
          if (tried.held) return hold(tried.until);
        }
        throw await lockedError(client, name);
      }
      const tried = await tryLock();
      if (tried.held) {
        if (options.signal?.aborted) throw abortError(options.signal);
        if (announced !== 0) options.onQueue?.({ key: Buffer.from(field), ahead: 0, fencingToken: null });
        return hold(tried.until);
      }
      if (options.tryOnly) throw await lockedError(client, name);
      const ahead = fair ? await positionOf(client, queue, field) : 1;
      if (announced !== ahead) {
        announced = ahead;
        options.onQueue?.({ key: Buffer.from(field), ahead, fencingToken: null });
      }
      if (!subscription) {
        // Redisson wakes RLock waiters on the lock's channel and each fair waiter on its own.
        const sub = await ctx.subscriber();
        subscription = await sub.subscribe(fair ? fairLockChannel(name, Buffer.from(field)) : lockChannel(name), () => wake?.resolve());
        continue; // a release between our try and the subscription would otherwise be missed
      }
      await sleep(Math.max(RETRY_MS, Math.min(tried.ttl > 0 ? tried.ttl : RETRY_MS, REDISSON_RETRY_MAX_MS)), options.signal, { wake: wake?.promise });
      renewWake();
    }
  } catch (e) {
    await undo();
    throw e;
  } finally {
    subscription?.dispose();
  }
}

async function positionOf(client: Redis, queue: Buffer, field: string): Promise<number> {
  const list = (await client.lrange(queue, 0, -1)) as string[];
  const i = list.indexOf(field);
  return i < 0 ? 1 : i + 1;
}

async function lockedError(client: Redis, name: Buffer): Promise<LockLensError> {
  const flat = ((await client.callBuffer('HKEYS', name).catch(() => [])) as Buffer[]) ?? [];
  const owner = flat.length ? flat.map((f) => displayKey(f)).join(', ') : 'another client';
  return new LockLensError('LOCKED', `${displayKey(name)} is held by ${owner}`);
}

class RedissonHold extends RenewingHold {
  constructor(
    private readonly client: Redis,
    name: Buffer,
    private readonly field: string,
    ttlMs: number,
    private readonly fair: boolean,
    until: number,
  ) {
    super(name, Buffer.from(field), field, ttlMs, until);
  }

  protected async renew(): Promise<boolean> {
    return (await this.client.eval(REDISSON_RENEW, 1, this.name, this.ttlMs, this.field)) === 1;
  }

  protected unlock(): Promise<boolean> {
    return unlockRedisson(this.client, this.name, this.field, this.ttlMs, this.fair);
  }
}

/** Redisson's unlock for our field: true when it ended our hold (and told the waiters), false when it was not ours. */
async function unlockRedisson(client: Redis, name: Buffer, field: string, ttlMs: number, fair: boolean): Promise<boolean> {
  const result = fair
    ? await client.eval(FAIR_UNLOCK, 4, name, lockQueueKey(name), lockTimeoutKey(name), lockChannel(name), UNLOCK_MESSAGE, ttlMs, field, Date.now())
    : await client.eval(REDISSON_UNLOCK, 2, name, lockChannel(name), UNLOCK_MESSAGE, ttlMs, field);
  return result === 1;
}

/**
 * Taking a lock from LockLens so that it excludes the services that use the same name: a name that is a Redisson lock
 * now is taken with Redisson's own scripts and field format (its waiters wake when we release); a read/write lock (or
 * a free name, asked for with a mode) with RedissonReadLock's and RedissonWriteLock's; any other name with the token
 * recipe redis-py, redlock, Spring and the classic article share (SET NX PX, compare-and-delete), on a majority of the
 * instances when several are configured (redlock). A hold renews itself every TTL/3 and says at once when a renewal
 * finds it gone: a holder is never silently assumed.
 */
import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import type { AcquireOptions, LockHold, LockMode, QueuePosition } from '../backend';
import { Emitter, type Disposable, type Event } from '../emitter';
import { LockLensError, abortError, errorMessage, throwIfAborted } from '../errors';
import { displayKey, keyId } from '../keys';
import { sleep } from '../sleep';
import { storeError } from './keyspaceReader';
import { redissonLockField, redissonRwShape } from './recognize';
import { fairLockChannel, lockChannel, lockQueueKey, lockTimeoutKey, rwKeyPrefix, rwLockChannel, rwTimeoutPrefix } from './redissonNames';
import {
  FAIR_LEAVE,
  FAIR_LOCK,
  FAIR_THREAD_WAIT_MS,
  FAIR_UNLOCK,
  REDISSON_LOCK,
  REDISSON_RENEW,
  REDISSON_UNLOCK,
  READ_UNLOCK_MESSAGE,
  RW_READ_LOCK,
  RW_READ_RENEW,
  RW_READ_UNLOCK,
  RW_WRITE_LOCK,
  RW_WRITE_UNLOCK,
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
  /** The read/write holds taken through this connection, whose Redisson thread a new one on the same name re-enters. */
  readonly readWriteHolds: ReadWriteHolds;
}

/** How often a waiter tries again when nothing wakes it sooner (redis-py polls every 0.1 s). */
const RETRY_MS = 100;
/** How soon a renewal that failed (an error, not a refusal) is tried again. */
const RENEW_RETRY_MS = 250;
/** The longest a Redisson waiter sleeps between tries when no unlock message comes (a holder that died). */
const REDISSON_RETRY_MAX_MS = 1000;

type Layout = 'free' | 'token' | 'redisson' | 'redisson-fair' | 'redisson-rw';

/** What a name is now, for a sentence: "… is a token lock". */
const LAYOUT_NAMES: Record<Exclude<Layout, 'free' | 'redisson-rw'>, string> = {
  token: 'a token lock (SET NX PX: redis-py, redlock, the classic recipe)',
  redisson: 'a Redisson lock (RLock)',
  'redisson-fair': 'a Redisson fair lock (RFairLock)',
};

async function layoutOf(client: Redis, name: Buffer): Promise<Layout> {
  const [type, queueLen] = await Promise.all([client.type(name), client.llen(lockQueueKey(name))]);
  if (queueLen > 0 && (type === 'hash' || type === 'none')) return 'redisson-fair';
  if (type === 'none') return 'free';
  if (type === 'string') return 'token';
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
      if (redissonLockField(fields)) return 'redisson';
      if (redissonRwShape(fields)) return 'redisson-rw';
    }
  }
  throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} holds a Redis ${type} that is not a lock layout LockLens knows: it will not overwrite it`);
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
      if (mode) {
        throw new LockLensError('INVALID_ARGUMENT', `a Redisson read/write lock lives on one Redis: ${displayKey(name)} cannot be taken for ${mode} on ${ctx.clients.length} independent instances`);
      }
      return await acquireToken(ctx, name, ttlMs, options);
    }
    const layout = await layoutOf(ctx.clients[0], name);
    if (mode) {
      if (layout !== 'free' && layout !== 'redisson-rw') {
        throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is ${LAYOUT_NAMES[layout]}, not a read/write lock: take it without a read or write mode`);
      }
      return await acquireReadWrite(ctx, name, ttlMs, options, mode);
    }
    switch (layout) {
      case 'free':
      case 'token':
        return await acquireToken(ctx, name, ttlMs, options);
      case 'redisson-rw':
        throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is a Redisson read/write lock: choose read or write to take it`);
      default:
        return await acquireRedisson(ctx, name, ttlMs, options, layout === 'redisson-fair');
    }
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

// --- Redisson RLock / RFairLock / RReadWriteLock ---

/** How far the lock script of an attempt that did not end in a hold got, for what there is to undo. */
type Outcome = 'taken' | 'refused' | 'unknown';

/**
 * One kind of Redisson lock: its scripts, its channel, its hold. The waiting is the same for every kind (waitRedisson):
 * run the lock script, and until it says held, sleep until an unlock message on the channel or the holder's PTTL,
 * as Redisson's own lock() does.
 */
interface RedissonWay<H extends RenewingHold> {
  /** The field we hold with, told in onQueue. */
  readonly field: string;
  /** Where the lock's unlocks are published. */
  readonly channel: Buffer;
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

async function waitRedisson<H extends RenewingHold>(ctx: AcquireContext, name: Buffer, ttlMs: number, options: AcquireOptions, way: RedissonWay<H>): Promise<H> {
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
  let subscription: Disposable | undefined;
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
      if (!subscription) {
        const sub = await ctx.subscriber();
        subscription = await sub.subscribe(way.channel, () => wake?.resolve());
        continue; // a release between our try and the subscription would otherwise be missed
      }
      await sleep(Math.max(RETRY_MS, Math.min(tried.ttl > 0 ? tried.ttl : RETRY_MS, REDISSON_RETRY_MAX_MS)), options.signal, { wake: wake?.promise });
      renewWake();
    }
  } catch (e) {
    await way.undo(outcome);
    throw e;
  } finally {
    subscription?.dispose();
  }
}

async function acquireRedisson(ctx: AcquireContext, name: Buffer, ttlMs: number, options: AcquireOptions, fair: boolean): Promise<RenewingHold> {
  const client = ctx.clients[0];
  const field = ctx.newField();
  const queue = lockQueueKey(name);
  const timeouts = lockTimeoutKey(name);
  return waitRedisson(ctx, name, ttlMs, options, {
    field,
    // Redisson wakes RLock waiters on the lock's channel and each fair waiter on its own.
    channel: fair ? fairLockChannel(name, Buffer.from(field)) : lockChannel(name),
    lock: async () =>
      (fair
        ? await client.eval(FAIR_LOCK, 3, name, queue, timeouts, ttlMs, field, FAIR_THREAD_WAIT_MS, Date.now())
        : await client.eval(REDISSON_LOCK, 1, name, ttlMs, field)) as number | null,
    ahead: () => (fair ? positionOf(client, queue, field) : Promise.resolve(1)),
    ...(fair && {
      mayTry: async () => {
        // Only a free lock with nobody waiting is taken.
        const [exists, waiting] = await Promise.all([client.exists(name), client.llen(queue)]);
        return exists === 0 && waiting === 0;
      },
    }),
    /**
     * Our place in a fair queue, and the lock itself if a lock script that failed here (a timeout) ran on the server
     * anyway. Both scripts act on our own fresh field only.
     */
    undo: async () => {
      if (fair) await client.eval(FAIR_LEAVE, 2, queue, timeouts, field, FAIR_THREAD_WAIT_MS).catch(() => undefined);
      await unlockRedisson(client, name, field, ttlMs, fair).catch(() => undefined);
    },
    hold: (until) => new RedissonHold(client, name, field, ttlMs, fair, until),
  });
}

/**
 * The read/write holds taken through one connection, by lock name. Each hold is its own Redisson thread (as every
 * RLock acquire is): holds do not share a hash count, so one ending, being lost or expiring never changes another.
 * Two of ours on one name can still exclude each other (a writer and anything else): such an acquire would wait for
 * ourselves, and is refused instead.
 */
export class ReadWriteHolds {
  private readonly byName = new Map<string, ReadWriteHold[]>();

  /** Our holds on `name` that have not ended. */
  of(name: Buffer): readonly ReadWriteHold[] {
    const id = keyId(name);
    const live = (this.byName.get(id) ?? []).filter((h) => !h.ended);
    if (live.length) this.byName.set(id, live);
    else this.byName.delete(id);
    return live;
  }

  add(hold: ReadWriteHold): void {
    this.byName.set(keyId(hold.name), [...this.of(hold.name), hold]);
  }
}

/**
 * A read hold's lease, whatever TTL was asked: Redisson's default watchdog (lockWatchdogTimeout). Every reader's
 * renewal sets every reader's timeout to its own lease (RedissonReadLock), so readers with different leases cut each
 * other short, and a writer could get in while a long-lease reader believes it reads; LockLens readers therefore all
 * use the lease Redisson's readers use.
 */
export const READ_LEASE_MS = 30_000;

const rwField = (thread: string, mode: LockMode): string => (mode === 'read' ? thread : `${thread}:write`);

/** What RW_GUARD answers when the name holds something other than a read/write lock (never a PTTL: those are >= -2). */
const NOT_READ_WRITE = -10;
/**
 * Runs before Redisson's read and write lock scripts, which take a hash without a `mode` field for a free name: an
 * RLock or a fair lock that took the name after we looked would get our `mode` written into it (two holders). Only
 * refuses, so Redisson's own clients see nothing different.
 */
const RW_GUARD = `local t = redis.call('type', KEYS[1])['ok']; if t ~= 'none' and (t ~= 'hash' or redis.call('hexists', KEYS[1], 'mode') == 0) then return ${NOT_READ_WRITE} end; `;

async function acquireReadWrite(ctx: AcquireContext, name: Buffer, askedTtlMs: number, options: AcquireOptions, mode: LockMode): Promise<RenewingHold> {
  const client = ctx.clients[0];
  const ours = ctx.readWriteHolds.of(name);
  const conflicting = ours.find((h) => h.mode === 'write' || mode === 'write');
  if (conflicting) {
    throw new LockLensError(
      'INVALID_ARGUMENT',
      `${displayKey(name)} is held for ${conflicting.mode === 'write' ? 'writing' : 'reading'} through this connection: taking it for ${mode === 'write' ? 'writing' : 'reading'} would wait for that hold; release it first`,
    );
  }
  const ttlMs = mode === 'read' ? READ_LEASE_MS : askedTtlMs;
  const thread = ctx.newField();
  const reader = rwField(thread, 'read');
  const writer = rwField(thread, 'write');
  const hold = await waitRedisson(ctx, name, ttlMs, options, {
    field: rwField(thread, mode),
    channel: rwLockChannel(name),
    lock: async () => {
      const result = (
        mode === 'read'
          ? await client.eval(RW_GUARD + RW_READ_LOCK, 2, name, rwTimeoutPrefix(name, reader), ttlMs, reader, writer)
          : await client.eval(RW_GUARD + RW_WRITE_LOCK, 1, name, ttlMs, writer)
      ) as number | null;
      if (result === NOT_READ_WRITE) throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} stopped being a read/write lock while we waited (another kind of lock took the name)`);
      return result;
    },
    ahead: () => Promise.resolve(1),
    /**
     * A hold we took and then gave up (cancelled in that moment), or a lock script that failed here (a timeout) and
     * may have run on the server, is unlocked: the thread is this hold's alone, so nobody else's count is taken. A
     * refused attempt left nothing.
     */
    undo: async (outcome) => {
      if (outcome === 'taken' || outcome === 'unknown') await unlockReadWrite(client, name, thread, mode, ttlMs).catch(() => undefined);
    },
    hold: (until) => new ReadWriteHold(client, name, thread, mode, ttlMs, until),
  });
  ctx.readWriteHolds.add(hold);
  return hold;
}

async function positionOf(client: Redis, queue: Buffer, field: string): Promise<number> {
  const list = (await client.lrange(queue, 0, -1)) as string[];
  const i = list.indexOf(field);
  return i < 0 ? 1 : i + 1;
}

async function lockedError(client: Redis, name: Buffer): Promise<LockLensError> {
  // A read/write lock's `mode` field is no holder.
  const flat = (((await client.callBuffer('HKEYS', name).catch(() => [])) as Buffer[]) ?? []).filter((f) => f.toString('latin1') !== 'mode');
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
  if (fair) {
    return (await client.eval(FAIR_UNLOCK, 4, name, lockQueueKey(name), lockTimeoutKey(name), lockChannel(name), UNLOCK_MESSAGE, ttlMs, field, Date.now())) === 1;
  }
  if ((await client.eval(REDISSON_UNLOCK, 2, name, lockChannel(name), UNLOCK_MESSAGE, ttlMs, field)) !== 1) return false;
  // A fair lock nobody waited for looked like an RLock when we took it; a Redisson fair waiter that queued since
  // listens on its own channel, not the lock's, and would sleep until its own retry. The head of a queue now is such
  // a waiter (one that queues after the delete finds the lock free): wake it as RedissonFairLock's unlock does.
  const head = await client.lindexBuffer(lockQueueKey(name), 0);
  if (head) await client.publish(fairLockChannel(name, head), UNLOCK_MESSAGE);
  return true;
}

/** A read or write hold on a Redisson read/write lock, through thread `<uuid>:<n>`: its field is the thread (read) or `<thread>:write`. */
class ReadWriteHold extends RenewingHold {
  constructor(
    private readonly client: Redis,
    name: Buffer,
    readonly thread: string,
    readonly mode: LockMode,
    ttlMs: number,
    until: number,
  ) {
    super(name, Buffer.from(rwField(thread, mode)), rwField(thread, mode), ttlMs, until);
  }

  /** A reader renews the hash and every reader's timeout keys (RedissonReadLock); a writer as RedissonLock does, with its `:write` field. */
  protected async renew(): Promise<boolean> {
    const result =
      this.mode === 'read'
        ? await this.client.eval(RW_READ_RENEW, 2, this.name, rwKeyPrefix(this.name), this.ttlMs, this.thread)
        : await this.client.eval(REDISSON_RENEW, 1, this.name, this.ttlMs, this.owner);
    return result === 1;
  }

  protected unlock(): Promise<boolean> {
    return unlockReadWrite(this.client, this.name, this.thread, this.mode, this.ttlMs);
  }
}

/**
 * Redisson's read or write unlock for our thread: true when it ended our hold or one count of it (0: our thread still
 * holds), false when it was not ours. As in Redisson, unlocking a lock that is gone altogether publishes and says 1.
 * A writer's end is published with READ_UNLOCK_MESSAGE (every waiter wakes: readers may all enter), a reader's with
 * UNLOCK_MESSAGE, as RedissonWriteLock and RedissonReadLock do.
 */
async function unlockReadWrite(client: Redis, name: Buffer, thread: string, mode: LockMode, ttlMs: number): Promise<boolean> {
  const result =
    mode === 'read'
      ? await client.eval(RW_READ_UNLOCK, 4, name, rwLockChannel(name), rwTimeoutPrefix(name, thread), rwKeyPrefix(name), UNLOCK_MESSAGE, thread)
      : await client.eval(RW_WRITE_UNLOCK, 2, name, rwLockChannel(name), READ_UNLOCK_MESSAGE, ttlMs, rwField(thread, 'write'));
  return result === 0 || result === 1;
}

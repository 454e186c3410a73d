/**
 * Which Redis keys are semaphores, and whose permits they hold: pure functions over one read, as recognize.ts is for
 * locks. The layouts and how each is told from other data (a bare counter or a sorted set is no semaphore by itself):
 *
 * - redis-semaphore's `Semaphore` and `MultiSemaphore` (npm): a sorted set `semaphore:<key>` of random identifiers
 *   scored by the epoch ms of their last acquire or refresh, the whole key expiring `lockTimeout` after the last. Told
 *   by that name, a PTTL (every acquire sets one) and every score a plausible epoch ms. The limit is an argument of
 *   every call, never stored. A MultiSemaphore holder's permits are `<identifier>_<i>`, one entry each.
 * - Redisson `RPermitExpirableSemaphore`: a string counter of free permits under the name and a sorted set
 *   `{name}:timeout` of the permit ids held, scored by when each expires. Told by that sorted set beside an integer.
 * - Redisson `RSemaphore`: a bare integer of free permits; who holds them is nowhere in Redis. An integer is also the
 *   value of many a `SET name 1 NX PX` token lock, so it is read as a semaphore only once a Redisson client has been
 *   seen waiting on its channel `redisson_sc:{name}` (PUBSUB NUMSUB > 0), and from then on by the same connection
 *   while it holds an integer (SemaphoreCounters); otherwise it stays what it was, a token lock.
 */
import { hasAnyPrefix, keyId } from '../keys';
import type { LockMember, LockState } from '../lockState';
import { redissonPrefixName, rwKeyPrefix } from './redissonNames';

/** What a semaphore's recognition reads of a key (recognize.ts's KeyRecord, which imports this module). */
export interface SemaphoreRecord {
  readonly key: Buffer;
  readonly type: string;
  readonly pttl: number;
  readonly value?: Buffer;
  /** A sorted set's members and scores, when it is named as a redis-semaphore's and has at most MAX_SEMAPHORE_ENTRIES. */
  readonly entries?: readonly (readonly [Buffer, number])[];
  /** An integer string's RPermitExpirableSemaphore permit ids and their expiry (epoch ms), from `{name}:timeout`. */
  readonly permitIds?: readonly (readonly [Buffer, number])[];
  /** How many clients listen on an integer string's Redisson semaphore channel (PUBSUB NUMSUB). */
  readonly semaphoreWaiters?: number;
  /** This connection saw it as an RSemaphore before, and it has held an integer since (see SemaphoreCounters). */
  readonly seenAsSemaphore?: boolean;
}

/** A TTL to count down (recognize.ts's TtlSource). */
interface PermitTtl {
  readonly id: string;
  readonly ms: number;
  readonly keys: readonly Buffer[];
  readonly deadline?: number;
  readonly stallFraction?: number;
}

/**
 * redis-semaphore refreshes a permit when 80% of its lockTimeout has passed (refreshInterval's default), with a fifth
 * left: a holder is late only when less than a tenth is left, not below the half that tells a Redisson watchdog late.
 */
const REDIS_SEMAPHORE_STALL_FRACTION = 0.1;

export const SEMAPHORE_CONVENTIONS = {
  redisSemaphore: 'redis-semaphore',
  redisMultiSemaphore: 'redis-multi-semaphore',
  redissonPermitSemaphore: 'redisson-permit-semaphore',
} as const;

/** Where redis-semaphore keeps `new Semaphore(client, key, limit)`: `semaphore:<key>`. */
export const REDIS_SEMAPHORE_PREFIX = Buffer.from('semaphore:');
/** Entries of a semaphore's sorted set read whole; a larger set is not a semaphore anyone waits on. */
export const MAX_SEMAPHORE_ENTRIES = 256;
/** RPermitExpirableSemaphore's score for a permit taken without a lease time (`nonExpirableTimeout`). */
export const NON_EXPIRABLE = 922337203685477;

const INTEGER_VALUE = /^-?\d{1,15}$/;
const MULTI_PERMIT = /^(.+)_(\d+)$/s;
/** 2001-09-09: a redis-semaphore score before it is a counter or a rank, not an acquire time. */
const EPOCH_MS_FLOOR = 1e12;
const DAY_MS = 86_400_000;

/** RPermitExpirableSemaphore's permit ids: `suffixName(name, "timeout")`, `{name}:timeout` (or `name:timeout`). */
export const permitTimeoutKey = (name: Uint8Array): Buffer => Buffer.concat([rwKeyPrefix(name), Buffer.from(':timeout')]);
/** The channel Redisson's semaphores publish released permits on, and their waiters listen to. */
export const semaphoreChannel = (name: Uint8Array): Buffer => redissonPrefixName('redisson_sc', name);

/** Whether a key is named as redis-semaphore names its sorted sets (the reader reads only these sorted sets whole). */
export function isRedisSemaphoreKey(key: Uint8Array): boolean {
  const k = Buffer.from(key);
  return k.length > REDIS_SEMAPHORE_PREFIX.length && k.subarray(0, REDIS_SEMAPHORE_PREFIX.length).equals(REDIS_SEMAPHORE_PREFIX);
}

/** An integer string: what an RSemaphore's or an RPermitExpirableSemaphore's counter holds. */
export function isIntegerValue(value: Buffer | undefined): boolean {
  // Most strings are tokens: their first byte tells them apart without decoding them.
  if (value === undefined || value.length === 0 || value.length > 16) return false;
  const first = value[0];
  if (first !== 0x2d && (first < 0x30 || first > 0x39)) return false;
  return INTEGER_VALUE.test(value.toString('latin1'));
}

/** The id a permit's expiry is counted down under: it cannot be a key's (NUL, a tag, then the permit). */
export const permitTtlId = (name: Uint8Array, permit: Uint8Array): string => `${keyId(name)}\u0000permit\u0000${keyId(permit)}`;

function permitMember(name: Buffer, permit: Buffer, owner: string, convention: string, expiresAt: number | undefined, now: number, ttls: Map<string, PermitTtl>, stallFraction?: number): LockMember {
  let lease = '';
  if (expiresAt !== undefined) {
    lease = permitTtlId(name, permit);
    ttls.set(lease, { id: lease, ms: Math.max(0, expiresAt - now), keys: [name], deadline: expiresAt, ...(stallFraction ? { stallFraction } : {}) });
  }
  return {
    key: permit,
    convention,
    owner,
    expiresWith: lease ? 'ttl' : 'nothing',
    lease,
    token: null,
    holds: null,
    valuePreview: Buffer.alloc(0),
    valueSize: 0,
  };
}

function semaphore(record: SemaphoreRecord, holders: LockMember[], permits: NonNullable<LockState['permits']>): LockState {
  const [first, ...rest] = holders;
  return { id: keyId(record.key), name: record.key, kind: 'semaphore', holder: first ?? null, sharedWith: rest, waiters: [], permits };
}

/**
 * A redis-semaphore sorted set, or undefined. Each permit expires `lockTimeout` after its score; the timeout is not
 * stored, but the key's PTTL was set to it at the newest score, so it is the key's expiry less that score.
 */
export function redisSemaphoreLock(record: SemaphoreRecord, ttls: Map<string, PermitTtl>, now: number): LockState | undefined {
  const entries = record.entries;
  if (record.type !== 'zset' || !entries?.length || !isRedisSemaphoreKey(record.key) || record.pttl < 0) return undefined;
  if (!entries.every(([, score]) => Number.isInteger(score) && score > EPOCH_MS_FLOOR && score < now + DAY_MS)) return undefined;
  const newest = Math.max(...entries.map(([, score]) => score));
  const lockTimeout = Math.max(0, now + record.pttl - newest);
  // By token, not by score: every refresh moves a holder's score, and the rows would change places with it.
  const holders = [...entries]
    .sort((a, b) => Buffer.compare(a[0], b[0]))
    .map(([id, score]) => {
      const multi = MULTI_PERMIT.exec(id.toString('latin1'));
      const convention = multi ? SEMAPHORE_CONVENTIONS.redisMultiSemaphore : SEMAPHORE_CONVENTIONS.redisSemaphore;
      const owner = multi ? id.subarray(0, Buffer.byteLength(multi[1], 'latin1')).toString('utf8') : id.toString('utf8');
      return permitMember(record.key, id, owner, convention, score + lockTimeout, now, ttls, REDIS_SEMAPHORE_STALL_FRACTION);
    });
  return semaphore(record, holders, { limit: null, free: null, holdersRecorded: true });
}

/**
 * A Redisson semaphore's counter, or undefined: an RPermitExpirableSemaphore when its permit ids were read beside it
 * (`permitIds`), an RSemaphore when a Redisson client waits on its channel (`semaphoreWaiters`).
 */
export function redissonSemaphoreLock(record: SemaphoreRecord, ttls: Map<string, PermitTtl>, now: number): LockState | undefined {
  if (record.type !== 'string' || !isIntegerValue(record.value)) return undefined;
  const free = Number(record.value!.toString('latin1'));
  if (record.permitIds?.length) {
    const holders = record.permitIds.map(([id, expiresAt]) =>
      permitMember(record.key, id, id.toString('hex'), SEMAPHORE_CONVENTIONS.redissonPermitSemaphore, expiresAt === NON_EXPIRABLE ? undefined : expiresAt, now, ttls),
    );
    return semaphore(record, holders, { limit: Math.max(0, free) + holders.length, free, holdersRecorded: true });
  }
  if ((record.semaphoreWaiters ?? 0) > 0 || record.seenAsSemaphore) return semaphore(record, [], { limit: null, free, holdersRecorded: false });
  return undefined;
}

/** Parses ZRANGE … WITHSCORES (as bytes) into [member, score] pairs, leaving out any whose score is not a number. */
export function parseScored(pairs: readonly Buffer[]): [Buffer, number][] {
  const out: [Buffer, number][] = [];
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const score = Number(pairs[i + 1].toString('latin1'));
    if (Number.isFinite(score)) out.push([pairs[i], score]);
  }
  return out;
}

/**
 * The names a connection has seen as RSemaphore counters, so that one stays a semaphore between its waiters (it is
 * told by them alone) while it holds an integer. A read forgets the names under its prefixes (or among the names it
 * read) that are no counter in it: deleted, or something else now.
 */
export class SemaphoreCounters {
  private readonly names = new Map<string, Buffer>();

  /** The records, those of names seen as counters marked so (the same array when there are none). */
  mark<R extends SemaphoreRecord>(records: R[]): R[] {
    if (this.names.size === 0) return records;
    return records.map((r) => (this.names.has(keyId(r.key)) ? { ...r, seenAsSemaphore: true } : r));
  }

  /** Folds in what a read recognised: of every name under `prefixes`, or of `names` only. */
  note(locks: readonly LockState[], read: { readonly prefixes: readonly Uint8Array[] } | { readonly names: readonly Uint8Array[] }): void {
    const within = 'names' in read ? new Set(read.names.map((n) => keyId(n))) : undefined;
    for (const [id, name] of this.names) {
      if (within ? within.has(id) : 'prefixes' in read && hasAnyPrefix(name, read.prefixes)) this.names.delete(id);
    }
    for (const lock of locks) if (lock.permits?.holdersRecorded === false) this.names.set(lock.id, lock.name);
  }
}

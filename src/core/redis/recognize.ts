/**
 * Which Redis keys are locks, and whose: pure functions over what one read of the keyspace returned, so every layout
 * (Redisson's hashes and fair queues, ShedLock's strings, the token recipe used by redis-py, redlock and Spring) is
 * tested without a server. A key that does not look like a lock is left out, never guessed at.
 */
import { displayKey, hasAnyPrefix, keyId } from '../keys';
import { byId, type LockMember, type LockState } from '../lockState';
import { PORT_FIELD, REDISSON_FIELD, REDISSON_WRITE_FIELD, RW_TIMEOUT_SUFFIX, UNLOCK_LATCH, redissonNameFromPrefixed } from './redissonNames';
import { SEMAPHORE_CONVENTIONS, parseScored, redisSemaphoreLock, redissonSemaphoreLock, type SemaphoreRecord } from './semaphores';

/** Hashes with more fields than this are never read whole: no lock layout has more than a handful. */
export const MAX_LOCK_HASH_FIELDS = 256;
/** Strings longer than this are data, not lock tokens (a token is a uuid; ShedLock's value is under 200 bytes). */
export const MAX_TOKEN_BYTES = 1024;

export type KeyType = 'string' | 'hash' | 'list' | 'set' | 'zset' | 'stream' | 'none' | (string & {});

/** One key as read: what the read found, with nothing when the key changed type or vanished in between. */
export interface KeyRecord extends SemaphoreRecord {
  readonly key: Buffer;
  readonly type: KeyType;
  /** PTTL in ms: -1 no expiry, -2 gone. */
  readonly pttl: number;
  /** Strings up to MAX_TOKEN_BYTES. */
  readonly value?: Buffer;
  readonly valueSize?: number;
  /** Hashes of at most MAX_LOCK_HASH_FIELDS fields, in HGETALL order. */
  readonly fields?: readonly (readonly [Buffer, Buffer])[];
  readonly fieldCount?: number;
}

/** A Redisson fair lock's waiters: the LIST in order, and the ZSET of their give-up times. */
export interface FairQueue {
  /** The lock's name (the hash's key). */
  readonly name: Buffer;
  readonly waiters: readonly Buffer[];
  /** keyId(field) → epoch ms. */
  readonly deadlines: ReadonlyMap<string, number>;
}

/** A TTL to sample: a key's PTTL, or a waiter's time left before it gives up. */
export interface TtlSource {
  readonly id: string;
  /** Milliseconds left; -1: never expires. */
  readonly ms: number;
  readonly keys: readonly Buffer[];
  /** A fair-lock waiter's give-up time (epoch ms): its TTL counts down to it, no key to ask. */
  readonly deadline?: number;
  /**
   * Where the key lives, by node label (host:port): the instances that agree on a redlock member, the master that
   * holds it in a cluster. Absent: the only instance. Set by the merge of per-node reads, never by `recognize`.
   */
  readonly nodes?: readonly string[];
  /** Sample the PTTL only while the key still holds this value (a redlock token: another token's TTL is not ours). */
  readonly value?: Buffer;
  /** Below this share of its TTL left its holder is late renewing, where its client renews late (see semaphores.ts). */
  readonly stallFraction?: number;
}

export interface Recognized {
  /** Sorted by name bytes. */
  readonly locks: LockState[];
  readonly ttls: Map<string, TtlSource>;
}

export const CONVENTIONS = {
  redissonLock: 'redisson-lock',
  /** An RLock written by a port whose thread id is not a number (node-redisson): its channel is spelled its own way. */
  redissonPortLock: 'redisson-port-lock',
  redissonFairLock: 'redisson-fair-lock',
  redissonRwLock: 'redisson-rwlock',
  shedlock: 'shedlock',
  token: 'redis-token',
  ...SEMAPHORE_CONVENTIONS,
} as const;

export type RedisConvention = (typeof CONVENTIONS)[keyof typeof CONVENTIONS];

/** The id a key's PTTL is sampled under: the key itself, losslessly. */
export const keyTtlId = (key: Uint8Array): string => keyId(key);

/** A waiter's give-up time, under an id that cannot be a key's (NUL then a tag, then the field). */
export const waiterTtlId = (name: Uint8Array, field: Uint8Array): string => `${keyId(name)}\u0000wait\u0000${keyId(field)}`;

const SHEDLOCK_VALUE = /^ADDED:[^@]*@(.+)$/s;
const UUID_TAIL = /:[0-9a-fA-F-]{36}$/;

/** ShedLock's `ADDED:<iso time>@<host>:<uuid>` (older versions: `ADDED:<time>@<host>`): the host, or undefined. */
export function shedlockHost(value: Buffer): string | undefined {
  // Most strings are tokens: one that does not start as `ADDED:` does is not decoded.
  if (value[0] !== 0x41) return undefined;
  const m = SHEDLOCK_VALUE.exec(value.toString('latin1'));
  if (!m) return undefined;
  const tail = value.subarray(value.length - Buffer.byteLength(m[1], 'latin1'));
  return displayKey(tail).replace(UUID_TAIL, '');
}

const INTEGER = /^[1-9]\d*$/;

function fieldText(f: Buffer): string {
  return f.toString('latin1');
}

export interface RLockField {
  readonly field: Buffer;
  readonly holds: number;
  readonly convention: typeof CONVENTIONS.redissonLock | typeof CONVENTIONS.redissonPortLock;
}

/**
 * An RLock's hash, told by its structure, or undefined. Exactly one field: the lock script adds a field only to a
 * missing key, and re-entry counts on that same field, so an RLock never has two. The field is `<client uuid>:<thread>`
 * and its value a positive integer, the hold count. A numeric thread is Redisson's (and Go ports', whose goroutine ids
 * are numbers). Any other thread (node-redisson's second uuid, or the id its caller chose) is taken for a lock only
 * when the hash expires (`pttl` ≥ 0), since every port's lock script sets PEXPIRE with the field: a hash of counters
 * (HINCRBY `page:views` with `2024-01:17` or `user:42` → count) lacks the uuid, the single field or the expiry.
 * Redisson's channel cannot be seen by a read (nobody listens while nobody waits), so it is no part of the test.
 */
export function redissonLockField(fields: readonly (readonly [Buffer, Buffer])[], pttl: number): RLockField | undefined {
  if (fields.length !== 1) return undefined;
  const [f, v] = fields[0];
  if (!INTEGER.test(v.toString('latin1'))) return undefined;
  const holds = Number(v.toString('latin1'));
  const name = fieldText(f);
  if (REDISSON_FIELD.test(name)) return { field: f, holds, convention: CONVENTIONS.redissonLock };
  if (PORT_FIELD.test(name) && pttl >= 0) return { field: f, holds, convention: CONVENTIONS.redissonPortLock };
  return undefined;
}

export interface RwShape {
  readonly mode: 'read' | 'write';
  readonly readers: { field: Buffer; holds: number }[];
  readonly writers: { field: Buffer; holds: number }[];
}

/** Redisson's RReadWriteLock hash: `mode` plus reader and writer fields with counts; undefined if any field differs. */
export function redissonRwShape(fields: readonly (readonly [Buffer, Buffer])[]): RwShape | undefined {
  let mode: 'read' | 'write' | undefined;
  const readers: { field: Buffer; holds: number }[] = [];
  const writers: { field: Buffer; holds: number }[] = [];
  for (const [f, v] of fields) {
    const name = fieldText(f);
    const value = v.toString('latin1');
    if (name === 'mode') {
      if (value !== 'read' && value !== 'write') return undefined;
      mode = value;
    } else if (REDISSON_WRITE_FIELD.test(name) && INTEGER.test(value)) {
      writers.push({ field: f, holds: Number(value) });
    } else if (REDISSON_FIELD.test(name) && INTEGER.test(value)) {
      readers.push({ field: f, holds: Number(value) });
    } else {
      return undefined;
    }
  }
  if (!mode || readers.length + writers.length === 0) return undefined;
  if (mode === 'read' && writers.length > 0) return undefined;
  if (mode === 'write' && writers.length !== 1) return undefined;
  const byField = (a: { field: Buffer }, b: { field: Buffer }) => Buffer.compare(a.field, b.field);
  return { mode, readers: readers.sort(byField), writers };
}

function fieldMember(field: Buffer, convention: string, lease: string, holds: number | null, mode?: 'read' | 'write', deadline?: number): LockMember {
  const preview = holds === null ? Buffer.alloc(0) : Buffer.from(String(holds));
  return {
    key: field,
    convention,
    owner: displayKey(field),
    expiresWith: lease ? 'ttl' : 'nothing',
    lease,
    token: null,
    holds,
    ...(mode ? { mode } : {}),
    ...(deadline !== undefined ? { deadline } : {}),
    valuePreview: preview,
    valueSize: preview.length,
  };
}

function waitersOf(queue: FairQueue | undefined, name: Buffer, ttls: Map<string, TtlSource>, now: number): LockMember[] {
  if (!queue) return [];
  return queue.waiters.map((field) => {
    const deadline = queue.deadlines.get(keyId(field));
    let lease = '';
    if (deadline !== undefined) {
      lease = waiterTtlId(name, field);
      ttls.set(lease, { id: lease, ms: Math.max(0, deadline - now), keys: [field], deadline });
    }
    return fieldMember(field, CONVENTIONS.redissonFairLock, lease, null, undefined, deadline);
  });
}

function keyLease(record: KeyRecord, ttls: Map<string, TtlSource>): string {
  // No expiry: the member says so with '' and is held forever if its owner died.
  if (record.pttl === -1) return '';
  const id = keyTtlId(record.key);
  ttls.set(id, { id, ms: Math.max(0, record.pttl), keys: [record.key] });
  return id;
}

function hashLock(record: KeyRecord, queue: FairQueue | undefined, ttls: Map<string, TtlSource>, now: number): LockState | undefined {
  const fields = record.fields;
  if (!fields || fields.length === 0) return undefined;
  const id = keyId(record.key);
  const lock = redissonLockField(fields, record.pttl);
  if (lock) {
    const convention = queue ? CONVENTIONS.redissonFairLock : lock.convention;
    const lease = keyLease(record, ttls);
    return {
      id,
      name: record.key,
      kind: 'queue',
      holder: fieldMember(lock.field, convention, lease, lock.holds),
      waiters: waitersOf(queue, record.key, ttls, now).filter((w) => !w.key.equals(lock.field)),
    };
  }
  const rw = redissonRwShape(fields);
  if (rw) {
    const lease = keyLease(record, ttls);
    const readers = rw.readers.map((r) => fieldMember(r.field, CONVENTIONS.redissonRwLock, lease, r.holds, 'read'));
    if (rw.mode === 'write') {
      const writer = fieldMember(rw.writers[0].field, CONVENTIONS.redissonRwLock, lease, rw.writers[0].holds, 'write');
      // Read holds beside a write hold are the writer's own thread re-entering for reading.
      return { id, name: record.key, kind: 'readwrite', holder: writer, ...(readers.length ? { sharedWith: readers } : {}), waiters: [] };
    }
    const [first, ...rest] = readers;
    return { id, name: record.key, kind: 'readwrite', holder: first, sharedWith: rest, waiters: [] };
  }
  return undefined;
}

const UNLOCK_LATCH_ID = keyId(UNLOCK_LATCH);

/** `id`: the key's keyId, which its name tests read (one char per byte, as the bytes). */
function stringLock(record: KeyRecord, id: string, ttls: Map<string, TtlSource>): LockState | undefined {
  const value = record.value;
  if (!value || (record.valueSize ?? value.length) > MAX_TOKEN_BYTES) return undefined;
  // A read lock's per-hold timeout belongs to its read/write lock's hash; an unlock's latch, to the unlock that set it.
  if (RW_TIMEOUT_SUFFIX.test(id) || id.startsWith(UNLOCK_LATCH_ID)) return undefined;
  const host = shedlockHost(value);
  const lease = keyLease(record, ttls);
  const member: LockMember = {
    key: record.key,
    convention: host !== undefined ? CONVENTIONS.shedlock : CONVENTIONS.token,
    owner: host ?? displayKey(value),
    expiresWith: lease ? 'ttl' : 'nothing',
    lease,
    token: null,
    holds: null,
    valuePreview: value,
    valueSize: record.valueSize ?? value.length,
  };
  return { id, name: record.key, kind: 'single', holder: member, waiters: [] };
}

/**
 * The locks among `records` (the keys under the watched prefixes) and `queues` (Redisson fair queues found for lock
 * names under those prefixes, whose LIST and ZSET live outside them). `prefixes` limits which queue-only locks (a free
 * fair lock with waiters) are shown.
 */
export function recognize(
  records: readonly KeyRecord[],
  queues: ReadonlyMap<string, FairQueue>,
  prefixes: readonly Uint8Array[],
  now: number,
): Recognized {
  const ttls = new Map<string, TtlSource>();
  const locks = new Map<string, LockState>();
  const present = new Set<string>();
  for (const record of records) {
    const id = keyId(record.key);
    if (queues.size && record.type !== 'none') present.add(id);
    if (locks.has(id)) continue;
    let lock: LockState | undefined;
    if (record.type === 'hash') lock = hashLock(record, queues.get(id), ttls, now);
    else if (record.type === 'string') lock = redissonSemaphoreLock(record, ttls, now) ?? stringLock(record, id, ttls);
    else if (record.type === 'zset') lock = redisSemaphoreLock(record, ttls, now);
    if (lock) locks.set(id, lock);
  }
  for (const [id, queue] of queues) {
    if (locks.has(id) || queue.waiters.length === 0) continue;
    if (!hasAnyPrefix(queue.name, prefixes)) continue;
    // A hash key under the prefix that is not a lock shadows its queue: only a missing hash means "free with waiters".
    if (present.has(id)) continue;
    locks.set(id, { id, name: queue.name, kind: 'queue', holder: null, waiters: waitersOf(queue, queue.name, ttls, now) });
  }
  // By id, which sorts as the name's bytes do (one char per byte) without a call into C++ per comparison.
  const sorted = [...locks.values()].sort(byId);
  return { locks: sorted, ttls };
}

/** Parses the reply pairs of a fair queue's ZSET (ZRANGE … WITHSCORES as bytes) into keyId(field) → ms. */
export function parseDeadlines(pairs: readonly Buffer[]): Map<string, number> {
  return new Map(parseScored(pairs).map(([field, ms]) => [keyId(field), ms]));
}

/** The lock name a Redisson fair queue LIST belongs to (`redisson_lock_queue:{name}`). */
export function queueOwnerName(queueKey: Uint8Array): Buffer | undefined {
  return redissonNameFromPrefixed('redisson_lock_queue', queueKey);
}

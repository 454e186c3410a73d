/**
 * The key and channel names Redisson derives from a lock name. Redisson wraps the name in a hash tag `{…}` so that,
 * in a cluster, the lock and its queue land in one slot; a name that already has a `{` is used as it is
 * (`RedissonObject.prefixName` / `suffixName`). Pure bytes: lock names need not be UTF-8.
 */

const OPEN = 0x7b; // {
const CLOSE = 0x7d; // }

function hasBrace(name: Uint8Array): boolean {
  return Buffer.from(name).includes(OPEN);
}

/** `prefixName(prefix, name)`: `prefix:{name}`, or `prefix:name` when the name has a `{` already. */
export function redissonPrefixName(prefix: string, name: Uint8Array): Buffer {
  const n = Buffer.from(name);
  return hasBrace(n)
    ? Buffer.concat([Buffer.from(`${prefix}:`), n])
    : Buffer.concat([Buffer.from(`${prefix}:{`), n, Buffer.from('}')]);
}

/**
 * What a read/write lock's timeout keys start with, `{name}` (or the name itself when it has a `{`): RedissonReadLock's
 * `getKeyPrefix`, the `suffixName` of the name without its suffix. Its scripts build every reader's timeout key from it.
 */
export function rwKeyPrefix(name: Uint8Array): Buffer {
  const n = Buffer.from(name);
  return hasBrace(n) ? n : Buffer.concat([Buffer.from('{'), n, Buffer.from('}')]);
}

/**
 * A reader's timeout keys `{name}:<uuid>:<thread>:rwlock_timeout:<n>` without the `:<n>`: getReadWriteTimeoutNamePrefix,
 * `suffixName(name, field) + ':rwlock_timeout'` (suffixName is `{name}:suffix`, or `name:suffix` when the name has a `{`).
 */
export function rwTimeoutPrefix(name: Uint8Array, readerField: string): Buffer {
  return Buffer.concat([rwKeyPrefix(name), Buffer.from(`:${readerField}:rwlock_timeout`)]);
}

/** The inverse of `redissonPrefixName`, or undefined when `key` does not start with `prefix:`. */
export function redissonNameFromPrefixed(prefix: string, key: Uint8Array): Buffer | undefined {
  const head = Buffer.from(`${prefix}:`);
  const k = Buffer.from(key);
  if (k.length <= head.length || !k.subarray(0, head.length).equals(head)) return undefined;
  const rest = k.subarray(head.length);
  // `{name}` with no other brace inside was wrapped by Redisson; anything else is the name as given.
  if (rest[0] === OPEN && rest[rest.length - 1] === CLOSE) {
    const inner = rest.subarray(1, rest.length - 1);
    if (!inner.includes(OPEN) && !inner.includes(CLOSE)) return Buffer.from(inner);
  }
  return Buffer.from(rest);
}

export const lockQueueKey = (name: Uint8Array): Buffer => redissonPrefixName('redisson_lock_queue', name);
export const lockTimeoutKey = (name: Uint8Array): Buffer => redissonPrefixName('redisson_lock_timeout', name);
export const lockChannel = (name: Uint8Array): Buffer => redissonPrefixName('redisson_lock__channel', name);

/**
 * node-redisson's RLock channel: its prefixName wraps the name unless the name *starts* with `{` (Redisson's: unless it
 * has one anywhere), so for a name such as `lock:{orders}:42` the two clients listen on different channels.
 */
export function portLockChannel(name: Uint8Array): Buffer {
  const n = Buffer.from(name);
  const wrapped = n[0] === OPEN ? n : Buffer.concat([Buffer.from('{'), n, Buffer.from('}')]);
  return Buffer.concat([Buffer.from('redisson_lock__channel:'), wrapped]);
}

/**
 * Where an RLock's unlock is told: Redisson's channel, and node-redisson's where its spelling differs. Whoever waits
 * (either client, or LockLens) listens on one of them; a message on the other wakes nobody and costs nothing.
 */
export function rlockChannels(name: Uint8Array): Buffer[] {
  const ours = lockChannel(name);
  const port = portLockChannel(name);
  return ours.equals(port) ? [ours] : [ours, port];
}
export const rwLockChannel = (name: Uint8Array): Buffer => redissonPrefixName('redisson_rwlock', name);

/** A fair lock wakes only the head of its queue: `redisson_lock__channel:{name}:<field>`. */
export function fairLockChannel(name: Uint8Array, field: Uint8Array): Buffer {
  return Buffer.concat([lockChannel(name), Buffer.from(':'), Buffer.from(field)]);
}

/** `<uuid>:<thread>` (RLock, a reader) or `<uuid>:<thread>:write` (a writer). */
export const REDISSON_FIELD = /^[0-9a-f-]{36}:\d+$/;
/**
 * A port's RLock field: `<client uuid>:<thread id>` where the thread id is not Redisson's number: node-redisson writes a
 * second uuid (one per RLock object), or the client id its caller chose. Any visible ASCII but `:` (which would make it
 * a read/write lock's `:write` field), at most 128 bytes.
 */
export const PORT_FIELD = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[!-9;-~]{1,128}$/;
export const REDISSON_WRITE_FIELD = /^[0-9a-f-]{36}:\d+:write$/;
/**
 * What an unlock leaves for a few milliseconds so that a retried unlock is answered the same (recent Redisson
 * versions, node-redisson): `redisson_unlock_latch:{name}:<request id>`, a string that is no lock.
 */
export const UNLOCK_LATCH = Buffer.from('redisson_unlock_latch:');
/** The per-read-hold timeout strings of a read/write lock: `{name}:<uuid>:<thread>:rwlock_timeout:<n>`. */
export const RW_TIMEOUT_SUFFIX = /:[0-9a-f-]{36}:\d+:rwlock_timeout:\d+$/;

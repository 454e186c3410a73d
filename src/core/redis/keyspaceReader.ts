/**
 * Reads the keys under the watched prefixes the way RedisInsight does: SCAN in pages (never KEYS, which blocks the
 * server), then a few pipelined round trips per page. Sizes are checked before contents so a huge hash or string under
 * a prefix costs one HLEN or STRLEN, not megabytes. A key may change or vanish between SCAN and the read: whatever a
 * command then answers (nil, WRONGTYPE) just drops that key from this read.
 */
import type Redis from 'ioredis';
import { LockLensError, errorMessage } from '../errors';
import { hasPrefix, keyId } from '../keys';
import { MAX_LOCK_HASH_FIELDS, MAX_TOKEN_BYTES, parseDeadlines, queueOwnerName, recognize, type FairQueue, type KeyRecord, type Recognized } from './recognize';
import { lockQueueKey, lockTimeoutKey } from './redissonNames';

const SCAN_COUNT = 1000;
/** Waiters shown per fair lock: a queue longer than this is shown cut. */
const MAX_WAITERS = 256;

export interface ReadOptions {
  /** Test seam: runs after each SCAN page, before its keys are read. */
  readonly afterScanPage?: (keys: readonly Buffer[]) => Promise<void>;
}

/** `*?[]\` escaped so the prefix matches itself in a SCAN MATCH pattern, then `*`. */
export function globPrefix(prefix: Uint8Array): Buffer {
  const out: number[] = [];
  for (const b of prefix) {
    if (b === 0x2a || b === 0x3f || b === 0x5b || b === 0x5d || b === 0x5c) out.push(0x5c);
    out.push(b);
  }
  out.push(0x2a);
  return Buffer.from(out);
}

export async function scanKeys(client: Redis, match: Buffer, onPage: (keys: Buffer[]) => Promise<void>, type?: string): Promise<void> {
  let cursor = '0';
  do {
    const args: (string | Buffer | number)[] = ['MATCH', match, 'COUNT', SCAN_COUNT];
    if (type) args.push('TYPE', type);
    const [next, keys] = (await (client.scanBuffer as (...a: unknown[]) => Promise<[Buffer, Buffer[]]>)(cursor, ...args));
    cursor = next.toString();
    if (keys.length) await onPage(keys);
  } while (cursor !== '0');
}

type Reply = [Error | null, unknown];

async function exec(pipeline: ReturnType<Redis['pipeline']>): Promise<Reply[]> {
  const replies = (await pipeline.exec()) as Reply[] | null;
  if (!replies) throw new LockLensError('STORE', 'the Redis pipeline was aborted');
  // A connection error fails every command alike: that is the read failing, not one key.
  const fatal = replies.find(([e]) => e && !/^(WRONGTYPE|ERR)/.test(e.message));
  if (fatal?.[0]) throw storeError(fatal[0]);
  return replies;
}

export function storeError(e: unknown): LockLensError {
  if (e instanceof LockLensError) return e;
  const message = errorMessage(e);
  if (/NOPERM/.test(message)) return new LockLensError('PERMISSION', `Redis refused: ${message}`, { cause: e });
  if (/Connection is closed|Stream isn't writeable|ECONNRESET|ECONNREFUSED|EPIPE/i.test(message)) {
    return new LockLensError('UNREACHABLE', `lost the connection to Redis (${message})`, { cause: e });
  }
  if (/timed? ?out/i.test(message)) return new LockLensError('TIMEOUT', `Redis did not answer in time (${message})`, { cause: e });
  return new LockLensError('STORE', `Redis: ${message}`, { cause: e });
}

function ok<T>(reply: Reply | undefined): T | undefined {
  return reply && !reply[0] ? (reply[1] as T) : undefined;
}

/** TYPE, PTTL and size, then the contents of what is small enough to be a lock. */
export async function readKeys(client: Redis, keys: readonly Buffer[]): Promise<KeyRecord[]> {
  if (keys.length === 0) return [];
  const first = client.pipeline();
  for (const k of keys) {
    first.type(k);
    first.pttl(k);
  }
  const meta = await exec(first);
  const second = client.pipeline();
  // Every key keeps its record (a list at a lock's name is still "something there"); only hashes and strings are sized.
  const records: KeyRecord[] = keys.map((key, i) => ({ key, type: ok<string>(meta[2 * i]) ?? 'none', pttl: ok<number>(meta[2 * i + 1]) ?? -2 }));
  const sized: number[] = [];
  records.forEach((r, i) => {
    if (r.type === 'hash') second.hlen(r.key);
    else if (r.type === 'string') second.strlen(r.key);
    else return;
    sized.push(i);
  });
  if (sized.length === 0) return records;
  const sizes = await exec(second);
  const third = client.pipeline();
  const reads: number[] = [];
  sized.forEach((index, j) => {
    const size = ok<number>(sizes[j]);
    const r = records[index];
    if (size === undefined) return;
    records[index] = r.type === 'hash' ? { ...r, fieldCount: size } : { ...r, valueSize: size };
    if (size === 0) return;
    if (r.type === 'hash' && size <= MAX_LOCK_HASH_FIELDS) third.callBuffer('HGETALL', r.key);
    else if (r.type === 'string' && size <= MAX_TOKEN_BYTES) third.getBuffer(r.key);
    else return;
    reads.push(index);
  });
  const contents = reads.length ? await exec(third) : [];
  reads.forEach((index, j) => {
    const reply = ok<unknown>(contents[j]);
    const rec = records[index];
    if (rec.type === 'hash' && Array.isArray(reply)) {
      const flat = reply as Buffer[];
      const fields: [Buffer, Buffer][] = [];
      for (let k = 0; k + 1 < flat.length; k += 2) fields.push([flat[k], flat[k + 1]]);
      records[index] = { ...rec, fields, fieldCount: fields.length };
    } else if (rec.type === 'string' && Buffer.isBuffer(reply)) {
      records[index] = { ...rec, value: reply, valueSize: reply.length };
    }
  });
  return records;
}

/** The waiters (LIST, in order) and their deadlines (ZSET) of the fair locks named. */
export async function readFairQueues(client: Redis, names: readonly Buffer[]): Promise<Map<string, FairQueue>> {
  const out = new Map<string, FairQueue>();
  if (names.length === 0) return out;
  const p = client.pipeline();
  for (const name of names) {
    p.lrangeBuffer(lockQueueKey(name), 0, MAX_WAITERS - 1);
    p.callBuffer('ZRANGE', lockTimeoutKey(name), 0, MAX_WAITERS * 2, 'WITHSCORES');
  }
  const replies = await exec(p);
  names.forEach((name, i) => {
    const waiters = ok<Buffer[]>(replies[2 * i]);
    if (!Array.isArray(waiters) || waiters.length === 0) return;
    const pairs = ok<Buffer[]>(replies[2 * i + 1]);
    out.set(keyId(name), { name, waiters, deadlines: parseDeadlines(Array.isArray(pairs) ? pairs : []) });
  });
  return out;
}

export interface RawSnapshot {
  readonly records: KeyRecord[];
  readonly queues: Map<string, FairQueue>;
}

/** Every key under `prefixes` read, and the fair queues of lock names under them. */
export async function readSnapshot(client: Redis, prefixes: readonly Uint8Array[], options: ReadOptions = {}): Promise<RawSnapshot> {
  try {
    const seen = new Set<string>();
    const records: KeyRecord[] = [];
    for (const prefix of prefixes) {
      await scanKeys(client, globPrefix(prefix), async (page) => {
        const fresh = page.filter((k) => {
          const id = keyId(k);
          if (seen.has(id)) return false;
          seen.add(id);
          return true;
        });
        await options.afterScanPage?.(fresh);
        records.push(...(await readKeys(client, fresh)));
      });
    }
    // Fair queues live outside the prefixes (`redisson_lock_queue:{name}`): one SCAN for all of them.
    const queueNames: Buffer[] = [];
    if (prefixes.length) {
      await scanKeys(client, Buffer.from('redisson_lock_queue:*'), async (page) => {
        for (const k of page) {
          const name = queueOwnerName(k);
          if (name && prefixes.some((p) => hasPrefix(name, p))) queueNames.push(name);
        }
      }, 'list');
    }
    const queues = await readFairQueues(client, queueNames);
    return { records, queues };
  } catch (e) {
    throw storeError(e);
  }
}

/** Reads the named locks again (a notification said they changed): the keys, and their fair queues. */
export async function readLocks(client: Redis, names: readonly Buffer[]): Promise<RawSnapshot> {
  try {
    const [records, queues] = await Promise.all([readKeys(client, names), readFairQueues(client, names)]);
    return { records, queues };
  } catch (e) {
    throw storeError(e);
  }
}

export function recognizeSnapshot(raw: RawSnapshot, prefixes: readonly Uint8Array[], now = Date.now()): Recognized {
  return recognize(raw.records, raw.queues, prefixes, now);
}

/**
 * Reads the keys under the watched prefixes the way RedisInsight does: SCAN in pages (never KEYS, which blocks the
 * server), then the page's keys (keyContents.ts: a script per batch, or pipelined round trips). A key may change or
 * vanish between SCAN and the read: whatever a command then answers (nil, WRONGTYPE, MOVED) just drops that key from
 * this read.
 *
 * SCAN walks every key of the server whatever its MATCH, so a read costs in proportion to the whole keyspace: one walk
 * per prefix, and nothing else. A Redisson fair lock's waiters (`redisson_lock_queue:{name}`, outside the prefixes) are
 * read along with its hash, in the same pipeline; only a fair lock whose hash is gone while waiters remain (free, for a
 * moment) needs a walk of its own (`queueScan`), which a watch runs rarely (see liveWatch.ts).
 */
import type Redis from 'ioredis';
import { LockLensError, errorMessage } from '../errors';
import { hasAnyPrefix, keyId, normalizePrefixes } from '../keys';
import type { SemaphoreCounters } from './semaphores';
import { ok, readKeyContents, type Reply } from './keyContents';
import { parseDeadlines, queueOwnerName, recognize, type FairQueue, type KeyRecord, type Recognized } from './recognize';
import type { ReadCost } from './pollPacing';
import { lockQueueKey, lockTimeoutKey } from './redissonNames';
import { readSemaphoreParts } from './semaphoreReads';

/** Keys SCAN looks at per call: few round trips, each still a short step for the server (well under a millisecond). */
export const SCAN_COUNT = 1000;
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

async function exec(pipeline: ReturnType<Redis['pipeline']>): Promise<Reply[]> {
  const replies = (await pipeline.exec()) as Reply[] | null;
  if (!replies) throw new LockLensError('STORE', 'the Redis pipeline was aborted');
  // A connection error fails every command alike: that is the read failing, not one key.
  // MOVED/ASK: a cluster key that is not (or no longer) on this master, like a key that vanished.
  const fatal = replies.find(([e]) => e && !/^(WRONGTYPE|ERR|MOVED|ASK)/.test(e.message));
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

/**
 * Each key's type, PTTL, size and small contents (keyContents.ts). With `queues`, a one-field hash (what a Redisson
 * lock is) has its fair queue read into `queues`, in the same round trip as the semaphore probes of integer strings.
 */
export async function readKeys(client: Redis, keys: readonly Buffer[], queues?: Map<string, FairQueue>): Promise<KeyRecord[]> {
  const records = await readKeyContents(client, keys, exec);
  const fair: Buffer[] = [];
  if (queues) for (const r of records) if (r.type === 'hash' && r.fieldCount === 1) fair.push(r.key);
  const [found] = await Promise.all([readFairQueues(client, fair), readSemaphoreParts(client, records, exec)]);
  for (const [id, q] of found) queues?.set(id, q);
  return records;
}

function queueCommands(p: ReturnType<Redis['pipeline']>, name: Buffer): void {
  p.lrangeBuffer(lockQueueKey(name), 0, MAX_WAITERS - 1);
  p.callBuffer('ZRANGE', lockTimeoutKey(name), 0, MAX_WAITERS * 2, 'WITHSCORES');
}

function parseQueues(names: readonly Buffer[], replies: readonly Reply[], out: Map<string, FairQueue>): void {
  names.forEach((name, i) => {
    const waiters = ok<Buffer[]>(replies[2 * i]);
    if (!Array.isArray(waiters) || waiters.length === 0) return;
    const pairs = ok<Buffer[]>(replies[2 * i + 1]);
    out.set(keyId(name), { name, waiters, deadlines: parseDeadlines(Array.isArray(pairs) ? pairs : []) });
  });
}

/** The waiters (LIST, in order) and their deadlines (ZSET) of the fair locks named. */
export async function readFairQueues(client: Redis, names: readonly Buffer[]): Promise<Map<string, FairQueue>> {
  const out = new Map<string, FairQueue>();
  if (names.length === 0) return out;
  const p = client.pipeline();
  for (const name of names) queueCommands(p, name);
  parseQueues(names, await exec(p), out);
  return out;
}

export interface RawSnapshot {
  readonly records: KeyRecord[];
  readonly queues: Map<string, FairQueue>;
  /** What the read cost this node (full reads only). */
  readonly cost?: ReadCost;
}

/** What a full read looks at besides the keys under the prefixes. */
export interface ReadPlan {
  /**
   * Also walk the keyspace for `redisson_lock_queue:*`, to find fair locks that are free with waiters (their hash
   * gone). A second walk of every key: a one-off listing does it, a watch only now and then.
   */
  readonly queueScan?: boolean;
  /** Names whose fair queues are read whatever SCAN finds: free fair locks seen before, names an unlock message gave. */
  readonly queueNames?: readonly Buffer[];
}

/**
 * Every key under `prefixes` read, and the fair queues of the Redisson locks among them (read with them); with
 * `plan.queueScan`, those of free fair locks under the prefixes too.
 */
export async function readSnapshot(client: Redis, prefixes: readonly Uint8Array[], options: ReadOptions = {}, plan: ReadPlan = { queueScan: true }): Promise<RawSnapshot> {
  try {
    const started = performance.now();
    // O(1), sent beside the first SCAN: how many keys the walks below go through, for the status (refused: unknown).
    const dbsize = client.dbsize().catch(() => undefined);
    const seen = new Set<string>();
    const records: KeyRecord[] = [];
    const queues = new Map<string, FairQueue>();
    // One walk per prefix, none for a prefix that a shorter one already covers.
    for (const prefix of prefixes.length ? normalizePrefixes(prefixes) : []) {
      await scanKeys(client, globPrefix(prefix), async (page) => {
        const fresh = page.filter((k) => {
          const id = keyId(k);
          if (seen.has(id)) return false;
          seen.add(id);
          return true;
        });
        await options.afterScanPage?.(fresh);
        records.push(...(await readKeys(client, fresh, queues)));
      });
    }
    const known = (plan.queueNames ?? []).filter((n) => !seen.has(keyId(n)) && hasAnyPrefix(n, prefixes));
    for (const [id, q] of await readFairQueues(client, known)) queues.set(id, q);
    const keys = await dbsize;
    const ms = performance.now() - started;
    if (plan.queueScan && prefixes.length) {
      // Fair queues live outside the prefixes (`redisson_lock_queue:{name}`): one SCAN for all of them.
      const queueNames: Buffer[] = [];
      await scanKeys(client, Buffer.from('redisson_lock_queue:*'), async (page) => {
        for (const k of page) {
          const name = queueOwnerName(k);
          if (name && !seen.has(keyId(name)) && !queues.has(keyId(name)) && hasAnyPrefix(name, prefixes)) queueNames.push(name);
        }
      }, 'list');
      for (const [id, q] of await readFairQueues(client, queueNames)) queues.set(id, q);
    }
    const cost: ReadCost = { keys, ms, totalMs: performance.now() - started };
    return { records, queues, cost };
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

export function recognizeSnapshot(raw: RawSnapshot, prefixes: readonly Uint8Array[], now = Date.now(), counters?: SemaphoreCounters): Recognized {
  return recognize(counters ? counters.mark(raw.records) : raw.records, raw.queues, prefixes, now);
}

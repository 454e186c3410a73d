/**
 * What a read learns of each key: its type, PTTL, size, and the contents of what is small enough to be a lock.
 *
 * One Lua script per batch of keys does it all on the server: a listing of 100,000 keys is then a thousand commands,
 * not half a million, and the client's per-command cost (ioredis builds and settles each one) was most of the time.
 * Each script reads a short batch, so the server is not held for long at a time. A server that refuses the script
 * (an ACL without scripting, EVAL renamed away, Redis before 7, which knows no shebang flags) is read as before: TYPE
 * and PTTL, then the size, then the contents, in pipelined round trips. Sizes are checked before contents either way,
 * so a huge hash or string costs one HLEN or STRLEN, not megabytes.
 */
import type Redis from 'ioredis';
import { ReplyError } from 'ioredis';
import { LockLensError } from '../errors';
import { MAX_LOCK_HASH_FIELDS, MAX_TOKEN_BYTES, type KeyRecord } from './recognize';
import { isRedisSemaphoreKey, MAX_SEMAPHORE_ENTRIES, parseScored, REDIS_SEMAPHORE_PREFIX } from './semaphores';

type Pipeline = ReturnType<Redis['pipeline']>;
export type Reply = [Error | null, unknown];

/** Keys per script: a batch holds the server about as long as a SCAN step does (BENCHMARKS, "Redis listing"). */
export const KEYS_PER_SCRIPT = 100;

const semaphorePrefix = REDIS_SEMAPHORE_PREFIX.toString('latin1');

/**
 * Per key in ARGV: type, PTTL, size (nil for types not sized) and contents (nil when empty or too big). Flagged
 * `no-writes` (it runs on a replica, and when the server is out of memory) and `allow-cross-slot-keys` (a cluster
 * master's keys of a SCAN page lie in many slots; every one is on this node).
 */
const READ_KEYS = `#!lua flags=no-writes,allow-cross-slot-keys
local out = {}
for _, k in ipairs(ARGV) do
  local t = redis.call('TYPE', k)['ok']
  local size, content = false, false
  if t == 'string' then
    size = redis.call('STRLEN', k)
    if size > 0 and size <= ${MAX_TOKEN_BYTES} then content = redis.call('GET', k) end
  elseif t == 'hash' then
    size = redis.call('HLEN', k)
    if size > 0 and size <= ${MAX_LOCK_HASH_FIELDS} then content = redis.call('HGETALL', k) end
  elseif t == 'zset' and #k > ${semaphorePrefix.length} and string.sub(k, 1, ${semaphorePrefix.length}) == '${semaphorePrefix}' then
    size = redis.call('ZCARD', k)
    if size > 0 and size <= ${MAX_SEMAPHORE_ENTRIES} then content = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES') end
  end
  out[#out + 1] = t
  out[#out + 1] = redis.call('PTTL', k)
  out[#out + 1] = size
  out[#out + 1] = content
end
return out`;

/**
 * Refusals that hold for the connection's life: it runs no script of ours, so it stops trying. Anything else (a key
 * whose slot moved away mid-read, a busy server) sends that batch alone by pipelines.
 */
const NEVER_SCRIPTED = /NOPERM|unknown command|compiling|shebang/i;
const unscripted = new WeakSet<Redis>();

/** The record of one key from what was read of it; `size` and `content` are absent when not read or refused. */
function recordOf(key: Buffer, type: string, pttl: number, size: unknown, content: unknown): KeyRecord {
  const sized = typeof size === 'number';
  if (type === 'string') {
    if (Buffer.isBuffer(content)) return { key, type, pttl, value: content, valueSize: content.length };
    return sized ? { key, type, pttl, valueSize: size } : { key, type, pttl };
  }
  if (type === 'hash') {
    if (Array.isArray(content)) {
      const flat = content as Buffer[];
      const fields: [Buffer, Buffer][] = [];
      for (let k = 0; k + 1 < flat.length; k += 2) fields.push([flat[k], flat[k + 1]]);
      return { key, type, pttl, fields, fieldCount: fields.length };
    }
    return sized ? { key, type, pttl, fieldCount: size } : { key, type, pttl };
  }
  if (type === 'zset' && Array.isArray(content)) return { key, type, pttl, entries: parseScored(content as Buffer[]) };
  return { key, type, pttl };
}

export function ok<T>(reply: Reply | undefined): T | undefined {
  return reply && !reply[0] ? (reply[1] as T) : undefined;
}

/** How the pipelines size and read a type, as the script does. */
interface TypeReads {
  readonly size: (p: Pipeline, key: Buffer) => void;
  readonly contents: (p: Pipeline, key: Buffer) => void;
  readonly max: number;
}

const READS: Readonly<Record<string, TypeReads>> = {
  string: { size: (p, k) => p.strlen(k), contents: (p, k) => p.getBuffer(k), max: MAX_TOKEN_BYTES },
  hash: { size: (p, k) => p.hlen(k), contents: (p, k) => p.callBuffer('HGETALL', k), max: MAX_LOCK_HASH_FIELDS },
  // No other sorted set is read: only those named as redis-semaphore's.
  zset: { size: (p, k) => p.zcard(k), contents: (p, k) => p.callBuffer('ZRANGE', k, 0, -1, 'WITHSCORES'), max: MAX_SEMAPHORE_ENTRIES },
};

function readsOf(type: string, key: Buffer): TypeReads | undefined {
  return type === 'zset' && !isRedisSemaphoreKey(key) ? undefined : READS[type];
}

/** TYPE and PTTL, then the sizes, then the contents: three round trips, each pipelined. */
async function readByPipelines(client: Redis, keys: readonly Buffer[], exec: (p: Pipeline) => Promise<Reply[]>): Promise<KeyRecord[]> {
  const first = client.pipeline();
  for (const k of keys) {
    first.type(k);
    first.pttl(k);
  }
  const meta = await exec(first);
  // A key that changed type or vanished between the round trips answers an error: it keeps what was read before.
  const types = keys.map((_, i) => ok<string>(meta[2 * i]) ?? 'none');
  const sizes: unknown[] = [];
  const contents: unknown[] = [];
  const sized = keys.flatMap((k, i) => (readsOf(types[i], k) ? [i] : []));
  if (sized.length) {
    const second = client.pipeline();
    for (const i of sized) readsOf(types[i], keys[i])!.size(second, keys[i]);
    const sizeReplies = await exec(second);
    sized.forEach((i, j) => (sizes[i] = ok<number>(sizeReplies[j])));
    const read = sized.filter((i) => typeof sizes[i] === 'number' && (sizes[i] as number) > 0 && (sizes[i] as number) <= readsOf(types[i], keys[i])!.max);
    if (read.length) {
      const third = client.pipeline();
      for (const i of read) readsOf(types[i], keys[i])!.contents(third, keys[i]);
      const contentReplies = await exec(third);
      read.forEach((i, j) => (contents[i] = ok<unknown>(contentReplies[j])));
    }
  }
  return keys.map((key, i) => recordOf(key, types[i], ok<number>(meta[2 * i + 1]) ?? -2, sizes[i], contents[i]));
}

/** Each key's record, in the order of `keys`. `exec` runs a pipeline, throwing when the read itself failed. */
export async function readKeyContents(client: Redis, keys: readonly Buffer[], exec: (p: Pipeline) => Promise<Reply[]>): Promise<KeyRecord[]> {
  if (keys.length === 0) return [];
  if (unscripted.has(client)) return readByPipelines(client, keys, exec);
  const p = client.pipeline();
  const batches: Buffer[][] = [];
  for (let i = 0; i < keys.length; i += KEYS_PER_SCRIPT) {
    const batch = keys.slice(i, i + KEYS_PER_SCRIPT);
    batches.push(batch);
    p.callBuffer('EVAL', READ_KEYS, 0, ...batch);
  }
  const replies = await runScripts(p);
  const records: KeyRecord[] = [];
  for (const [b, batch] of batches.entries()) {
    const [error, reply] = replies[b];
    if (error || !Array.isArray(reply)) {
      if (NEVER_SCRIPTED.test(String(error?.message))) unscripted.add(client);
      records.push(...(await readByPipelines(client, batch, exec)));
      continue;
    }
    const flat = reply as unknown[];
    batch.forEach((key, i) => records.push(recordOf(key, String(flat[4 * i]), Number(flat[4 * i + 1]), flat[4 * i + 2], flat[4 * i + 3])));
  }
  return records;
}

/** The scripts' replies; a refusal is the server's answer (a ReplyError), anything else fails the read. */
async function runScripts(p: Pipeline): Promise<Reply[]> {
  const replies = (await p.exec()) as Reply[] | null;
  if (!replies) throw new LockLensError('STORE', 'the Redis pipeline was aborted');
  const failed = replies.find(([e]) => e && !(e instanceof ReplyError));
  if (failed) throw failed[0];
  return replies;
}

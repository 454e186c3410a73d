/**
 * What a read of the keyspace asks besides a key itself, for semaphores (semaphores.ts says how each is told; the
 * sorted sets named as redis-semaphore's are read with the keys, keyContents.ts): an integer string has its
 * RPermitExpirableSemaphore permit ids and its Redisson channel's listeners asked for, in one more round trip only
 * when a read found integers.
 */
import type Redis from 'ioredis';
import type { Reply } from './keyContents';
import type { KeyRecord } from './recognize';
import { MAX_SEMAPHORE_ENTRIES, isIntegerValue, parseScored, permitTimeoutKey, semaphoreChannel } from './semaphores';

type Pipeline = ReturnType<Redis['pipeline']>;

/** The records, the integer strings among them with their permit ids and their channel's listeners. */
export async function readSemaphoreParts(client: Redis, records: KeyRecord[], exec: (p: Pipeline) => Promise<Reply[]>): Promise<KeyRecord[]> {
  const counters = records.flatMap((r, i) => (r.type === 'string' && isIntegerValue(r.value) ? [i] : []));
  if (counters.length === 0) return records;
  const p = client.pipeline();
  for (const i of counters) p.callBuffer('ZRANGE', permitTimeoutKey(records[i].key), 0, MAX_SEMAPHORE_ENTRIES - 1, 'WITHSCORES');
  // One NUMSUB for every channel (it answers channel, count, … in order): integer tokens cost one command less each.
  p.call('PUBSUB', 'NUMSUB', ...counters.map((i) => semaphoreChannel(records[i].key)));
  const replies = await exec(p);
  const [subsError, subs] = replies[counters.length];
  counters.forEach((index, j) => {
    const [idsError, ids] = replies[j];
    const permitIds = !idsError && Array.isArray(ids) ? parseScored(ids as Buffer[]) : [];
    const listeners = !subsError && Array.isArray(subs) ? Number(subs[2 * j + 1]) : 0;
    if (permitIds.length || listeners > 0) records[index] = { ...records[index], ...(permitIds.length ? { permitIds } : {}), ...(listeners > 0 ? { semaphoreWaiters: listeners } : {}) };
  });
  return records;
}

/**
 * Which Redisson semaphore a string is the counter of, by the same signs a read goes by (see semaphores.ts): `permits`
 * (RPermitExpirableSemaphore: its ids beside it), `counter` (RSemaphore: a client waits on its channel), or neither.
 */
export async function redissonSemaphoreKind(client: Redis, name: Buffer): Promise<'permits' | 'counter' | undefined> {
  const [ids, subs] = await Promise.all([client.exists(permitTimeoutKey(name)), client.call('PUBSUB', 'NUMSUB', semaphoreChannel(name)) as Promise<[unknown, number]>]);
  if (ids > 0) return 'permits';
  return Number(subs[1]) > 0 ? 'counter' : undefined;
}

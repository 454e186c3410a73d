/**
 * A hold on a Redisson read/write lock (RReadWriteLock) and the holds of one connection: renewed and released with
 * RedissonReadLock's and RedissonWriteLock's scripts.
 */
import type Redis from 'ioredis';
import type { LockMode } from '../../backend';
import { keyId } from '../../keys';
import { rwKeyPrefix, rwLockChannel, rwTimeoutPrefix } from '../redissonNames';
import { READ_UNLOCK_MESSAGE, REDISSON_RENEW, RW_READ_RENEW, RW_READ_UNLOCK, RW_WRITE_UNLOCK, UNLOCK_MESSAGE } from '../scripts';
import { RenewingHold } from './hold';

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

export const rwField = (thread: string, mode: LockMode): string => (mode === 'read' ? thread : `${thread}:write`);

/** A read or write hold on a Redisson read/write lock, through thread `<uuid>:<n>`: its field is the thread (read) or `<thread>:write`. */
export class ReadWriteHold extends RenewingHold {
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
export async function unlockReadWrite(client: Redis, name: Buffer, thread: string, mode: LockMode, ttlMs: number): Promise<boolean> {
  const result =
    mode === 'read'
      ? await client.eval(RW_READ_UNLOCK, 4, name, rwLockChannel(name), rwTimeoutPrefix(name, thread), rwKeyPrefix(name), UNLOCK_MESSAGE, thread)
      : await client.eval(RW_WRITE_UNLOCK, 2, name, rwLockChannel(name), READ_UNLOCK_MESSAGE, ttlMs, rwField(thread, 'write'));
  return result === 0 || result === 1;
}

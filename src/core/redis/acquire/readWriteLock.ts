/**
 * Redisson's read/write lock (RReadWriteLock), taken with RedissonReadLock's and RedissonWriteLock's scripts: many
 * readers or one writer on one hash, whose `mode` field says which.
 */
import type { AcquireOptions, LockMode } from '../../backend';
import { LockLensError } from '../../errors';
import { displayKey } from '../../keys';
import { rwLockChannel, rwTimeoutPrefix } from '../redissonNames';
import { RW_READ_LOCK, RW_WRITE_LOCK } from '../scripts';
import type { AcquireContext } from './context';
import type { RenewingHold } from './hold';
import { READ_LEASE_MS, ReadWriteHold, rwField, unlockReadWrite } from './readWriteHold';
import { waitRedisson } from './redissonWait';

/** What RW_GUARD answers when the name holds something other than a read/write lock (never a PTTL: those are >= -2). */
const NOT_READ_WRITE = -10;
/**
 * Runs before Redisson's read and write lock scripts, which take a hash without a `mode` field for a free name: an
 * RLock or a fair lock that took the name after we looked would get our `mode` written into it (two holders). Only
 * refuses, so Redisson's own clients see nothing different.
 */
const RW_GUARD = `local t = redis.call('type', KEYS[1])['ok']; if t ~= 'none' and (t ~= 'hash' or redis.call('hexists', KEYS[1], 'mode') == 0) then return ${NOT_READ_WRITE} end; `;

export async function acquireReadWrite(ctx: AcquireContext, name: Buffer, askedTtlMs: number, options: AcquireOptions, mode: LockMode): Promise<RenewingHold> {
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
    channels: [rwLockChannel(name)],
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

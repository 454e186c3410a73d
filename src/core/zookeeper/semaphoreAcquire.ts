/**
 * Taking one permit of a kazoo Semaphore from LockLens, by kazoo's own protocol (kazoo/recipe/lock.py, Semaphore), so
 * that kazoo's clients and LockLens count each other's permits: take the semaphore's Lock (`path-__lock__`, joined as
 * any kazoo Lock by acquire.ts), count the leases under the path, create an ephemeral lease `<uuid4 hex>` if fewer than
 * the limit, else wait for the leases to change while still holding the Lock; then let go of the Lock. The limit is
 * the one kazoo stores in the path's data: a different `permitLimit` is refused, as kazoo refuses a different
 * `max_leases`; a path that does not exist yet is created with `permitLimit` as its data, as kazoo creates it.
 *
 * The permit is held as any lock from acquire.ts is (ZooKeeperHold): its lease goes with the hold's session, and its
 * deletion by someone else (a force release) is the loss of the permit.
 */
import { randomUUID } from 'node:crypto';
import * as zookeeper from 'node-zookeeper-client';
import type { AcquireOptions } from '../backend';
import { LockLensError, abortError, throwIfAborted } from '../errors';
import { displayKey } from '../keys';
import { sleep } from '../sleep';
import { acquire, contenderData, ZooKeeperHold, type Acquiring } from './acquire';
import { zkCode, type ZkClient } from './client';
import { joinPath, parseContender, splitPath } from './conventions';
import { zxidNumber } from './lockOfChildren';
import { CURATOR_LEASES, KAZOO_SEMAPHORE_LOCK, kazooLimit } from './semaphores';

/** With no event, a waiter for a permit still counts the leases again this often (a watch lost in a reconnect, say). */
const RECOUNT_MS = 30_000;

/**
 * Takes a permit of a kazoo Semaphore where a permit limit is given or kazoo's Lock beside the path says it is one,
 * else the lock (acquire.ts). A Curator InterProcessSemaphoreV2 is refused: its permits are not taken from LockLens.
 */
export async function acquireLockOrPermit(acquiring: Acquiring, options: AcquireOptions): Promise<ZooKeeperHold> {
  let permit: boolean;
  try {
    permit = await takesPermit(acquiring.session, acquiring.name, options);
  } catch (e) {
    if (!acquiring.shared) void acquiring.session.close();
    throw e;
  }
  return (permit ? acquirePermit : acquire)(acquiring, options);
}

async function takesPermit(client: ZkClient, name: string, options: AcquireOptions): Promise<boolean> {
  if (await client.exists(joinPath(name, CURATOR_LEASES))) {
    throw new LockLensError('INVALID_ARGUMENT', `${displayKey(Buffer.from(name))} is a Curator InterProcessSemaphoreV2: LockLens takes permits of kazoo's Semaphore only`);
  }
  return options.permitLimit !== undefined || (await client.exists(name + KAZOO_SEMAPHORE_LOCK)) !== null;
}

/** The semaphore's limit: the one stored, else `asked`, which creates the path if it is not there (as kazoo does). */
async function limitOf(session: ZkClient, name: string, asked: number | undefined): Promise<number> {
  const what = displayKey(Buffer.from(name));
  if (asked !== undefined && !(Number.isSafeInteger(asked) && asked > 0)) throw new LockLensError('INVALID_ARGUMENT', `a semaphore's permit limit is a positive whole number, not ${asked}`);
  for (;;) {
    const read = await session.data(name);
    if (read) {
      const stored = kazooLimit(read.data);
      if (stored !== null && asked !== undefined && stored !== asked) {
        throw new LockLensError('INVALID_ARGUMENT', `${what} is a kazoo Semaphore of ${stored} permits, not ${asked} (kazoo refuses a different max_leases too)`);
      }
      const limit = stored ?? asked;
      if (limit === undefined) throw new LockLensError('INVALID_ARGUMENT', `${what} records no permit limit: say how many permits the semaphore has`);
      const children = (await session.children(name)) ?? [];
      if (children.some((c) => parseContender(c))) throw new LockLensError('INVALID_ARGUMENT', `${what} is a lock, not a semaphore: take it without a permit limit`);
      return limit;
    }
    if (asked === undefined) throw new LockLensError('INVALID_ARGUMENT', `${what} does not exist: say how many permits the semaphore has`);
    const { parent } = splitPath(name);
    if (parent !== '/') await session.mkdirp(parent);
    try {
      await session.create(name, Buffer.from(String(asked)), zookeeper.CreateMode.PERSISTENT);
      return asked;
    } catch (e) {
      // Created by another client meanwhile: its limit is read and checked as any stored one.
      if (zkCode(e) !== zookeeper.Exception.NODE_EXISTS) throw e;
    }
  }
}

/** Creates our lease; if the create's answer is lost (a reconnect), the lease may exist anyway and is looked for. */
async function createLease(session: ZkClient, path: string): Promise<void> {
  try {
    await session.create(path, contenderData(), zookeeper.CreateMode.EPHEMERAL);
  } catch (e) {
    if (!(await session.exists(path).catch(() => null))) throw e;
  }
}

async function acquirePermit({ name, session, shared }: Acquiring, options: AcquireOptions): Promise<ZooKeeperHold> {
  const lease = joinPath(name, randomUUID().replace(/-/g, ''));
  let created = false;
  try {
    if (options.mode !== undefined) throw new LockLensError('INVALID_ARGUMENT', `${displayKey(Buffer.from(name))} is a semaphore: take a permit without a read or write mode`);
    const limit = await limitOf(session, name, options.permitLimit);
    // Waiting for the Lock is waiting behind those ahead in it; holding it, for a permit to be given back.
    const lock = await acquire({ name: name + KAZOO_SEMAPHORE_LOCK, session, shared: true }, {
      ttlSeconds: options.ttlSeconds,
      signal: options.signal,
      tryOnly: options.tryOnly,
      onQueue: (position) => options.onQueue?.({ ...position, ahead: position.ahead + 1 }),
    });
    try {
      for (;;) {
        throwIfAborted(options.signal);
        let wake!: () => void;
        const woken = new Promise<void>((resolve) => (wake = resolve));
        const leases = (await session.children(name, () => wake())) ?? [];
        if (leases.length < limit) {
          await createLease(session, lease);
          created = true;
          break;
        }
        if (options.tryOnly) throw new LockLensError('LOCKED', `${displayKey(Buffer.from(name))} has all ${limit} permits taken`);
        options.onQueue?.({ key: lock.key, ahead: 1, fencingToken: lock.fencingToken });
        const lost = lock.onDidLose(() => wake());
        const reconnected = session.onDidChangeState((state) => state !== 'disconnected' && wake());
        try {
          await sleep(RECOUNT_MS, options.signal, { wake: woken });
        } finally {
          lost.dispose();
          reconnected.dispose();
        }
        if (lock.lost) throw lock.lost;
        if (session.state === 'expired') throw new LockLensError('UNREACHABLE', `ZooKeeper expired the session waiting for a permit of ${displayKey(Buffer.from(name))}`);
      }
    } finally {
      await lock.release().catch(() => undefined);
    }
    const stat = await session.exists(lease);
    if (!stat) throw new LockLensError('LOCK_LOST', `${displayKey(Buffer.from(lease))} was deleted as soon as it was created`);
    const fencingToken = zxidNumber(stat.czxid);
    options.onQueue?.({ key: Buffer.from(lease), ahead: 0, fencingToken });
    if (options.signal?.aborted) throw abortError(options.signal);
    return new ZooKeeperHold(session, Buffer.from(name), lease, fencingToken, shared);
  } catch (e) {
    // Nothing of ours is left behind: the lease goes with the session anyway, the delete only makes it prompt.
    if (created) await session.remove(lease).catch(() => undefined);
    if (!shared) void session.close();
    throw e;
  }
}

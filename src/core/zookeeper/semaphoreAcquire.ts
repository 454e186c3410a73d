/**
 * Taking one permit of a semaphore from LockLens by its clients' own protocol, so that they and LockLens count each
 * other's permits. Both layouts take the semaphore's lock (joined as any lock by acquire.ts, in its clients' names),
 * look at the leases while holding it, wait holding it while there is no permit, and let go of it once they have one:
 *
 * - kazoo's Semaphore (kazoo/recipe/lock.py): the lock is a kazoo Lock at `path-__lock__`; a lease `<uuid4 hex>` is
 *   created, ephemeral, only while fewer than the limit are there. The limit is the one kazoo stores in the path's
 *   data: a different `permitLimit` is refused, as kazoo refuses a different `max_leases`, and a path that does not
 *   exist yet is created with `permitLimit` as its data, as kazoo creates it.
 * - Curator's InterProcessSemaphoreV2: the lock is an InterProcessMutex at `path/locks`; the lease
 *   `leases/_c_<uuid>-lease-<seq>` is created first, and it is a permit once there are no more leases than the limit.
 *   The limit is each client's argument, so `permitLimit` is required and must be theirs.
 *
 * The permit is held as any lock from acquire.ts is (ZooKeeperHold): its lease goes with the hold's session, and its
 * deletion by someone else (a force release) is the loss of the permit.
 */
import { randomUUID } from 'node:crypto';
import * as zookeeper from 'node-zookeeper-client';
import type { AcquireOptions } from '../backend';
import { LockLensError, abortError, throwIfAborted } from '../errors';
import { displayKey } from '../keys';
import { checkedPermitLimit } from '../permitCount';
import { sleep } from '../sleep';
import { acquire, contenderData, createContender, ZooKeeperHold, type Acquiring } from './acquire';
import { zkCode, type ZkClient } from './client';
import { joinPath, parseContender, splitPath, type Convention } from './conventions';
import { zxidNumber } from './lockOfChildren';
import { CURATOR_LEASES, CURATOR_LOCKS, KAZOO_SEMAPHORE_LOCK, kazooLimit } from './semaphores';

/** With no event, a waiter for a permit still counts the leases again this often (a watch lost in a reconnect, say). */
const RECOUNT_MS = 30_000;

/** The semaphore's limit: the one stored, else `asked`, which creates the path if it is not there (as kazoo does). */
async function limitOf(session: ZkClient, name: string, asked: number | undefined): Promise<number> {
  const what = displayKey(Buffer.from(name));
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

/**
 * Takes a permit where the path is a semaphore (kazoo's Lock beside it, Curator's `leases/` under it) or a permit limit
 * is given (kazoo's layout for a new path, unless `layout` names Curator's), else the lock (acquire.ts).
 */
export async function acquireLockOrPermit(acquiring: Acquiring, options: AcquireOptions): Promise<ZooKeeperHold> {
  let layout: PermitLayout | undefined;
  try {
    layout = await permitLayout(acquiring, options);
  } catch (e) {
    if (!acquiring.shared) void acquiring.session.close();
    throw e;
  }
  return layout ? takePermit(acquiring, options, layout) : acquire(acquiring, options);
}

/** How one layout takes a permit (see the file's comment). */
interface PermitLayout {
  /** The semaphore's lock, and the layout it is taken in when nobody holds it. */
  readonly lock: string;
  readonly lockLayout: Convention;
  /** The znode whose children are the leases. */
  readonly leases: string;
  /** Under the lock, before looking at the leases (Curator makes its lease first). */
  readonly begin?: () => Promise<void>;
  /** Given the leases now: true once ours is a permit; false, wait for them to change. */
  readonly take: (leases: readonly string[]) => Promise<boolean>;
  /** Our lease, once made. */
  readonly made: () => string | undefined;
  readonly limit: number;
}

async function permitLayout({ name, session }: Acquiring, options: AcquireOptions): Promise<PermitLayout | undefined> {
  const curator = options.layout === 'curator-semaphore' || (await session.exists(joinPath(name, CURATOR_LEASES))) !== null;
  if (!curator && options.permitLimit === undefined && !(await session.exists(name + KAZOO_SEMAPHORE_LOCK))) return undefined;
  if (options.mode !== undefined) throw new LockLensError('INVALID_ARGUMENT', `${displayKey(Buffer.from(name))} is a semaphore: take a permit without a read or write mode`);
  if (options.permitLimit !== undefined) checkedPermitLimit(options.permitLimit);
  return curator ? curatorPermit(session, name, options.permitLimit) : kazooPermit(session, name, await limitOf(session, name, options.permitLimit));
}

function kazooPermit(session: ZkClient, name: string, limit: number): PermitLayout {
  const lease = joinPath(name, randomUUID().replace(/-/g, ''));
  let made: string | undefined;
  return {
    lock: name + KAZOO_SEMAPHORE_LOCK,
    lockLayout: 'kazoo-lock',
    leases: name,
    limit,
    take: async (leases) => {
      if (leases.length >= limit) return false;
      await createLease(session, lease);
      made = lease;
      return true;
    },
    made: () => made,
  };
}

function curatorPermit(session: ZkClient, name: string, limit: number | undefined): PermitLayout {
  if (limit === undefined) {
    throw new LockLensError('INVALID_ARGUMENT', `${displayKey(Buffer.from(name))} is a Curator InterProcessSemaphoreV2, whose limit is its clients' maxLeases: say how many permits it has`);
  }
  const leases = joinPath(name, CURATOR_LEASES);
  let made: string | undefined;
  return {
    lock: joinPath(name, CURATOR_LOCKS),
    lockLayout: 'curator-mutex',
    leases,
    limit,
    // Curator's `lease-` in its protected mode (ZooKeeper appends the sequence).
    begin: async () => void (made = await createContender(session, leases, `_c_${randomUUID()}-lease-`)),
    take: async (children) => {
      if (!children.some((c) => made?.endsWith(`/${c}`))) throw new LockLensError('LOCK_LOST', `${displayKey(Buffer.from(made ?? leases))} was deleted while it waited for a permit`);
      return children.length <= limit;
    },
    made: () => made,
  };
}

async function takePermit({ name, session, shared }: Acquiring, options: AcquireOptions, layout: PermitLayout): Promise<ZooKeeperHold> {
  try {
    // Waiting for the lock is waiting behind those ahead in it; holding it, for a permit to be given back.
    const lock = await acquire({ name: layout.lock, session, shared: true }, {
      ttlSeconds: options.ttlSeconds,
      signal: options.signal,
      tryOnly: options.tryOnly,
      layout: layout.lockLayout,
      onQueue: (position) => options.onQueue?.({ ...position, ahead: position.ahead + 1 }),
    });
    try {
      await layout.begin?.();
      for (;;) {
        throwIfAborted(options.signal);
        let wake!: () => void;
        const woken = new Promise<void>((resolve) => (wake = resolve));
        if (await layout.take((await session.children(layout.leases, () => wake())) ?? [])) break;
        if (options.tryOnly) throw new LockLensError('LOCKED', `${displayKey(Buffer.from(name))} has all ${layout.limit} permits taken`);
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
    const lease = layout.made()!;
    const stat = await session.exists(lease);
    if (!stat) throw new LockLensError('LOCK_LOST', `${displayKey(Buffer.from(lease))} was deleted as soon as it was created`);
    const fencingToken = zxidNumber(stat.czxid);
    options.onQueue?.({ key: Buffer.from(lease), ahead: 0, fencingToken });
    if (options.signal?.aborted) throw abortError(options.signal);
    return new ZooKeeperHold(session, Buffer.from(name), lease, fencingToken, shared);
  } catch (e) {
    // Nothing of ours is left behind: the lease goes with the session anyway, the delete only makes it prompt.
    const lease = layout.made();
    if (lease) await session.remove(lease).catch(() => undefined);
    if (!shared) void session.close();
    throw e;
  }
}

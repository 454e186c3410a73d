/**
 * Semaphores in ZooKeeper: N permits, each an ephemeral lease node, taken under a lock so that two clients never both
 * take the last permit. Two layouts, each read as one lock of kind 'semaphore' at the semaphore's path P:
 *
 * - kazoo's Semaphore: leases `P/<uuid4 hex>` (the client's identifier as data), the limit (`max_leases`) as decimal
 *   text in P's own data, and a kazoo Lock at the sibling `P-__lock__` (not a child: kazoo's `path + "-__lock__"`).
 *   The Lock's holder counts P's children and creates its lease if fewer than the limit, else waits for them to
 *   change, still holding the Lock; the other contenders wait for the Lock. So the Lock's contenders, in sequence
 *   order, are the semaphore's waiters.
 * - Curator's InterProcessSemaphoreV2: leases `P/leases/_c_<uuid>-lease-<seq>` and an InterProcessMutex at `P/locks`,
 *   whose contenders are the waiters. Its limit is an argument of every client's call (or a SharedCount elsewhere):
 *   not in the store, so shown as unknown.
 *
 * The mutex's holder makes its lease while it holds the mutex. kazoo makes it only under the limit and lets go of the
 * mutex at once: that lease is a permit, and its maker no longer a waiter. Curator makes it first and then waits while
 * there are more leases than its limit: that lease is not a permit yet, and its maker still waits. A lease is the
 * mutex holder's when its session is the holder's and it was created after the holder's node.
 */
import { compareText } from '../../shared/compareText';
import { keptText } from '../keptBytes';
import { keyId } from '../keys';
import type { LockMember, LockState, Permits } from '../lockState';
import { bySequence, joinPath, parseContender, splitPath, type Convention } from './conventions';
import { contenderMember, type ContenderNode } from './lockOfChildren';

/** What kazoo appends to a semaphore's path for the path of its Lock. */
export const KAZOO_SEMAPHORE_LOCK = '-__lock__';
/** The children of a Curator InterProcessSemaphoreV2's path. */
export const CURATOR_LEASES = 'leases';
export const CURATOR_LOCKS = 'locks';

const KAZOO_LEASE = /^[0-9a-f]{32}$/;

/** A kazoo lease's name: `uuid.uuid4().hex`. */
export function isKazooLease(name: string): boolean {
  return KAZOO_LEASE.test(name);
}

/** The limit kazoo stores in the semaphore's node (`int(data)`), or null where the data is no number. */
export function kazooLimit(data: Buffer | undefined): number | null {
  const text = data?.toString('utf8').trim() ?? '';
  return /^[+-]?\d+$/.test(text) ? Number(text) : null;
}

/** The names whose locks a change under `path` may change: itself, and the semaphore it may be part of, with its parts. */
export function semaphoreRelated(path: string): string[] {
  const { parent, child } = splitPath(path);
  const names = [path, path + KAZOO_SEMAPHORE_LOCK, joinPath(path, CURATOR_LEASES), joinPath(path, CURATOR_LOCKS)];
  if (path.endsWith(KAZOO_SEMAPHORE_LOCK)) names.push(path.slice(0, -KAZOO_SEMAPHORE_LOCK.length));
  if (child === CURATOR_LEASES || child === CURATOR_LOCKS) names.push(parent, joinPath(parent, CURATOR_LEASES), joinPath(parent, CURATOR_LOCKS));
  return names;
}

interface Sequenced {
  readonly name: string;
  readonly sequence: number;
  readonly node: ContenderNode;
}

/** The mutex's contenders in the order it serves them. */
function inLine(nodes: Iterable<ContenderNode>): Sequenced[] {
  return [...nodes].flatMap((node) => {
    const parsed = parseContender(node.name);
    return parsed ? [{ name: node.name, sequence: parsed.sequence, node }] : [];
  }).sort(bySequence);
}

function byCreation(a: ContenderNode, b: ContenderNode): number {
  return a.czxid < b.czxid ? -1 : a.czxid > b.czxid ? 1 : compareText(a.name, b.name);
}

/** Whether `lease` was made by the mutex's holder `head` while it held it (see the file's comment). */
function madeUnder(head: Sequenced | undefined, lease: ContenderNode): boolean {
  return head !== undefined && head.node.ephemeralOwner !== 0n && lease.ephemeralOwner === head.node.ephemeralOwner && lease.czxid > head.node.czxid;
}

function semaphore(path: string, holders: readonly LockMember[], waiters: readonly LockMember[], limit: number | null): LockState | undefined {
  if (holders.length === 0 && waiters.length === 0) return undefined;
  const name = keptText(path);
  const permits: Permits = { limit, free: limit === null ? null : Math.max(0, limit - holders.length), holdersRecorded: true };
  return { id: keyId(name), name, kind: 'semaphore', holder: holders[0] ?? null, sharedWith: holders.slice(1), waiters, permits };
}

/**
 * kazoo's Semaphore at `path`: `data` is the path's own data, `leases` its children that are leases, `lockNodes` the
 * children of its Lock (`path-__lock__`). Holders in the order they took their permits; undefined when nobody holds
 * or waits.
 */
export function kazooSemaphoreOf(path: string, data: Buffer | undefined, leases: Iterable<ContenderNode>, lockNodes: Iterable<ContenderNode>): LockState | undefined {
  const convention: Convention = 'kazoo-semaphore';
  const line = inLine(lockNodes);
  const held = [...leases].filter((l) => isKazooLease(l.name)).sort(byCreation);
  const waiting = held.some((l) => madeUnder(line[0], l)) ? line.slice(1) : line;
  const lockPath = path + KAZOO_SEMAPHORE_LOCK;
  return semaphore(
    path,
    held.map((l) => contenderMember(path, l, convention)),
    waiting.map((c) => contenderMember(lockPath, c.node, convention)),
    kazooLimit(data),
  );
}

/**
 * Curator's InterProcessSemaphoreV2 at `path`: `leases` the children of its `leases/`, `lockNodes` those of its
 * `locks/`. Holders in lease sequence order; undefined when nobody holds or waits.
 */
export function curatorSemaphoreOf(path: string, leases: Iterable<ContenderNode>, lockNodes: Iterable<ContenderNode>): LockState | undefined {
  const convention: Convention = 'curator-semaphore';
  const line = inLine(lockNodes);
  const held = inLine(leases).filter((l) => parseContender(l.name)?.convention === convention && !madeUnder(line[0], l.node));
  return semaphore(
    path,
    held.map((l) => contenderMember(joinPath(path, CURATOR_LEASES), l.node, convention)),
    line.map((c) => contenderMember(joinPath(path, CURATOR_LOCKS), c.node, convention)),
    null,
  );
}

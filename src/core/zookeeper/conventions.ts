/**
 * Which lock recipe a znode belongs to, by its name alone (see the ZooKeeper section of the shared lock-backends doc).
 * A lock is a parent znode; its contenders are ephemeral sequential children whose names say the library:
 *
 * - `curator-mutex`: `_c_<uuid>-lock-<seq>`, Curator's InterProcessMutex (and LeaderSelector, which uses one).
 * - `curator-read` / `curator-write`: `_c_<uuid>-__READ__<seq>` / `_c_<uuid>-__WRIT__<seq>`, InterProcessReadWriteLock.
 * - `curator-latch`: `_c_<uuid>-latch-<seq>`, LeaderLatch: an election, the lowest is the leader.
 * - `kazoo-lock` / `kazoo-rlock`: `<uuid4 hex>__lock__<seq>` / `…__rlock__<seq>`: kazoo's Lock, WriteLock (the same
 *   `__lock__` node) and ReadLock; kazoo's Election is a Lock too.
 * - `zk-recipe`: the recipe of ZooKeeper's documentation, `[<guid>-]lock-<seq>`, and ZooKeeper's own
 *   zookeeper-recipes-lock WriteLock, `x-<session id>-<seq>`.
 * - `curator-semaphore`: `_c_<uuid>-lease-<seq>`, a lease of Curator's InterProcessSemaphoreV2 (under its `leases/`).
 * - `kazoo-semaphore`: a lease of kazoo's Semaphore, `<uuid4 hex>` without a sequence: told by where it is, not by its
 *   name alone (semaphores.ts).
 *
 * `<seq>` is the ten-digit counter ZooKeeper appends (`%010d` of a signed int, so `-` after it wraps).
 */
import { compareText } from '../../shared/compareText';
import type { LockKind } from '../lockState';

export const CONVENTIONS = [
  'curator-mutex',
  'curator-read',
  'curator-write',
  'curator-latch',
  'curator-semaphore',
  'kazoo-lock',
  'kazoo-rlock',
  'kazoo-semaphore',
  'zk-recipe',
] as const;

export type Convention = (typeof CONVENTIONS)[number];

/** The library family a convention's nodes are created by: an acquire joins a lock in its family's layout. */
export type Family = 'curator' | 'kazoo' | 'recipe';

export interface ContenderName {
  readonly convention: Convention;
  /** The sequence ZooKeeper appended, as a number (it is a 32-bit int). */
  readonly sequence: number;
  /** Shares the lock with other readers (a read node of a read/write lock). */
  readonly read: boolean;
}

// `%010d` pads to ten characters, the sign included: -1 is `-000000001`, the lowest int `-2147483648`.
const SEQ = '(-?\\d{10}|-\\d{9})';
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const CURATOR = new RegExp(`^_c_${UUID}-(lock-|latch-|lease-|__READ__|__WRIT__)${SEQ}$`);
// kazoo matches `(__lock__|__rlock__)<seq>` at the end of any name (its `_contenders_re`), whatever comes before.
const KAZOO = new RegExp(`(__lock__|__rlock__)${SEQ}$`);
const RECIPE = new RegExp(`^(?:.*-)?lock-${SEQ}$`);
const ZK_WRITE_LOCK = new RegExp(`^x-\\d+-${SEQ}$`);

const CURATOR_KINDS: Record<string, Convention> = {
  'lock-': 'curator-mutex',
  'latch-': 'curator-latch',
  'lease-': 'curator-semaphore',
  __READ__: 'curator-read',
  __WRIT__: 'curator-write',
};

/** The recipe a child's name follows, or undefined for a znode that is no lock contender. */
export function parseContender(name: string): ContenderName | undefined {
  let m = CURATOR.exec(name);
  if (m) {
    const convention = CURATOR_KINDS[m[1]];
    return { convention, sequence: Number(m[2]), read: convention === 'curator-read' };
  }
  m = KAZOO.exec(name);
  if (m) return { convention: m[1] === '__rlock__' ? 'kazoo-rlock' : 'kazoo-lock', sequence: Number(m[2]), read: m[1] === '__rlock__' };
  m = RECIPE.exec(name) ?? ZK_WRITE_LOCK.exec(name);
  if (m) return { convention: 'zk-recipe', sequence: Number(m[1]), read: false };
  return undefined;
}

export function familyOf(convention: Convention): Family {
  return convention.startsWith('curator-') ? 'curator' : convention.startsWith('kazoo-') ? 'kazoo' : 'recipe';
}

/**
 * A lock's kind from its contenders: an election if any is a leader latch, a read/write lock if any reads or is a
 * Curator read/write node, else a queue (a plain mutex: the lowest holds, the others wait in sequence order). A
 * semaphore's kind is said by its layout (semaphores.ts), not by its nodes.
 */
export function kindOf(conventions: Iterable<Convention>): LockKind {
  let kind: LockKind = 'queue';
  for (const c of conventions) {
    if (c === 'curator-latch') return 'election';
    if (c === 'curator-read' || c === 'curator-write' || c === 'kazoo-rlock') kind = 'readwrite';
  }
  return kind;
}

/** Sequence order, as every recipe serves it; the name breaks ties (nodes of two parents' counters never meet). */
export function bySequence<T extends { readonly sequence: number; readonly name: string }>(a: T, b: T): number {
  return a.sequence - b.sequence || compareText(a.name, b.name);
}

/**
 * How many contenders are served at once from the head of a sorted queue: the readers before the first exclusive
 * contender (Curator's readLockPredicate, kazoo's ReadLock), else only the head.
 */
export function holdersAtHead(contenders: readonly { readonly read: boolean }[]): number {
  if (contenders.length === 0) return 0;
  if (!contenders[0].read) return 1;
  const firstExclusive = contenders.findIndex((c) => !c.read);
  return firstExclusive < 0 ? contenders.length : firstExclusive;
}

/**
 * The contender a new one at `index` waits for, or -1 when it holds: a reader waits for the last exclusive contender
 * ahead of it; anything else for the one just ahead (only the node ahead is watched: no herd when the holder leaves).
 */
export function predecessorIndex(contenders: readonly { readonly read: boolean }[], index: number): number {
  if (!contenders[index].read) return index - 1;
  for (let i = index - 1; i >= 0; i--) if (!contenders[i].read) return i;
  return -1;
}

/** The name prefix a new contender is created with (ZooKeeper appends the sequence), for a family and a side. */
export function contenderPrefix(family: Family, id: string, read: boolean | undefined): string {
  switch (family) {
    case 'curator':
      // Curator's ProtectedUtils: `_c_<uuid>-`, then the lock's name.
      return `_c_${id}-${read === undefined ? 'lock-' : read ? '__READ__' : '__WRIT__'}`;
    case 'kazoo':
      return `${id.replace(/-/g, '')}${read ? '__rlock__' : '__lock__'}`;
    case 'recipe':
      return `${id}-lock-`;
  }
}

/** Parent path and child name of a znode path. */
export function splitPath(path: string): { parent: string; child: string } {
  const slash = path.lastIndexOf('/');
  return { parent: slash <= 0 ? '/' : path.slice(0, slash), child: path.slice(slash + 1) };
}

export function joinPath(parent: string, child: string): string {
  return parent === '/' ? `/${child}` : `${parent}/${child}`;
}

/** Whether `path` is `root` or below it. */
export function isUnder(path: string, root: string): boolean {
  return root === '/' || path === root || path.startsWith(`${root}/`);
}

/**
 * What LockLens knows of the znodes under the watched paths: every znode that is not a contender (its children may be
 * locks, or parents of locks) and, per lock parent, its contenders with their data and Stat; a semaphore's leases are
 * contenders too, and its lock's contenders its waiters (semaphores.ts). Read once for a listing;
 * for a watch, every read also sets ZooKeeper's one-shot watches (children of every parent, data of every contender,
 * existence of a path not there yet), and each event re-reads only what it names, setting the watch again.
 */
import { LockLensError } from '../errors';
import { displayKey, isUtf8 } from '../keys';
import type { LockState } from '../lockState';
import type { Watcher, ZkClient } from './client';
import { isUnder, joinPath, parseContender, splitPath } from './conventions';
import { lockOfChildren, type ContenderNode } from './lockOfChildren';
import { CURATOR_LEASES, CURATOR_LOCKS, KAZOO_SEMAPHORE_LOCK, curatorSemaphoreOf, isKazooLease, kazooSemaphoreOf, semaphoreRelated } from './semaphores';

/** Checks and normalises a watched prefix: a znode path, everything below it. */
export function rootOf(prefix: Uint8Array): string {
  const text = Buffer.from(prefix).toString('utf8');
  const bad = (why: string) => new LockLensError('INVALID_ARGUMENT', `'${displayKey(prefix)}' is not a ZooKeeper path: ${why}`);
  if (!isUtf8(prefix)) throw bad('ZooKeeper paths are UTF-8');
  if (text === '' || text === '/') return '/';
  if (!text.startsWith('/')) throw bad('paths start with /');
  const path = text.replace(/\/+$/, '');
  if (path.split('/').slice(1).some((s) => s === '' || s === '.' || s === '..')) throw bad("it has an empty, '.' or '..' segment");
  return path;
}

/** Roots with none below another (a path under a watched one is read with it). */
export function distinctRoots(roots: readonly string[]): string[] {
  const sorted = [...new Set(roots)].sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const r of sorted) if (!kept.some((k) => isUnder(r, k))) kept.push(r);
  return kept;
}

/** ZooKeeper's own znodes (quotas, the dynamic config): never a user's lock. */
function isSystem(parent: string, child: string): boolean {
  return parent === '/' && child === 'zookeeper';
}

export class ZnodeTree {
  /** Every known znode that is no contender, with the names of its children that are no contenders either. */
  private readonly dirs = new Map<string, Set<string>>();
  /** Per lock parent: its contenders by child name. */
  private readonly contenders = new Map<string, Map<string, ContenderNode>>();
  /** Per kazoo semaphore: its node's data, where kazoo keeps the limit. */
  private readonly semaphoreData = new Map<string, Buffer>();
  /**
   * Beside each root, the path of the kazoo Lock it has if it is a kazoo Semaphore, where no root covers it: watching
   * a semaphore's own path shows its waiters too. Read as roots are, but never a lock of its own.
   */
  private readonly companions: readonly string[];

  constructor(
    private readonly client: () => ZkClient,
    readonly roots: readonly string[],
    /** Set on every read when watching; absent for a one-time listing. */
    private readonly watcher?: Watcher,
  ) {
    this.companions = roots.filter((r) => r !== '/').map((r) => r + KAZOO_SEMAPHORE_LOCK).filter((c) => !roots.some((r) => isUnder(c, r)));
  }

  /** Forgets everything and reads every root again; the lock parents it found. */
  async readAll(): Promise<void> {
    this.dirs.clear();
    this.contenders.clear();
    this.semaphoreData.clear();
    const touched = new Set<string>();
    // Companions first: a root read before its companion would not know it for a semaphore.
    await Promise.all(this.companions.map((companion) => this.readDir(companion, touched)));
    await Promise.all(this.roots.map((root) => this.readDir(root, touched)));
  }

  /** Every lock known now. */
  locks(): LockState[] {
    return [...new Set([...this.contenders.keys()].map((parent) => this.lockOf(parent)))].flatMap((name) => this.lockAt(name) ?? []);
  }

  /**
   * The lock named `name` (a parent of contenders, or a semaphore's path), if it has members; undefined too for a
   * parent whose contenders are part of a semaphore.
   */
  lockAt(name: string): LockState | undefined {
    if (this.lockOf(name) !== name || this.companions.includes(name)) return undefined;
    const nodes = (path: string) => this.contenders.get(path)?.values() ?? [];
    if (this.isKazooSemaphore(name)) return kazooSemaphoreOf(name, this.semaphoreData.get(name), nodes(name), nodes(name + KAZOO_SEMAPHORE_LOCK));
    if (this.isCuratorSemaphore(name)) return curatorSemaphoreOf(name, nodes(joinPath(name, CURATOR_LEASES)), nodes(joinPath(name, CURATOR_LOCKS)));
    const contenders = this.contenders.get(name);
    return contenders ? lockOfChildren(name, contenders.values()) : undefined;
  }

  /** The names of the locks that reads which touched these parents may have changed (lockAt each: undefined is gone). */
  lockNames(touched: Iterable<string>): string[] {
    return [...new Set([...touched].flatMap(semaphoreRelated))];
  }

  /** A kazoo Semaphore's path: its Lock, `path-__lock__`, is its sibling. */
  private isKazooSemaphore(path: string): boolean {
    const { parent, child } = splitPath(path);
    if (path === '/') return false;
    return this.dirs.get(parent)?.has(child + KAZOO_SEMAPHORE_LOCK) ?? (this.roots.includes(path) && this.dirs.has(path + KAZOO_SEMAPHORE_LOCK));
  }

  /** A Curator InterProcessSemaphoreV2's path: it has `leases/`. */
  private isCuratorSemaphore(path: string): boolean {
    return this.dirs.get(path)?.has(CURATOR_LEASES) ?? false;
  }

  /** The lock a parent's contenders are members of: the semaphore they are the leases or the lock of, else itself. */
  private lockOf(parent: string): string {
    if (parent.endsWith(KAZOO_SEMAPHORE_LOCK)) {
      const semaphore = parent.slice(0, -KAZOO_SEMAPHORE_LOCK.length);
      if (this.isKazooSemaphore(semaphore)) return semaphore;
    }
    const { parent: up, child } = splitPath(parent);
    return (child === CURATOR_LEASES || child === CURATOR_LOCKS) && this.isCuratorSemaphore(up) ? up : parent;
  }

  isContender(path: string): boolean {
    const { parent, child } = splitPath(path);
    return this.contenders.get(parent)?.has(child) ?? false;
  }

  /**
   * Reads `path`'s children again (and whatever is new below it), adding to `touched` every parent whose contenders
   * may have changed, including those of subtrees that are gone.
   */
  async readDir(path: string, touched: Set<string>): Promise<void> {
    const client = this.client();
    const children = await client.children(path, this.watcher);
    if (children === undefined) {
      this.drop(path, touched);
      // A root that is not there (yet): its creation is what to wait for. (A path below a root reappears in its
      // parent's children.) Created meanwhile: read it now.
      if (this.isRoot(path) && this.watcher && (await client.exists(path, this.watcher))) await this.readDir(path, touched);
      return;
    }
    const dirChildren = new Set<string>();
    const known = this.contenders.get(path);
    const next = new Map<string, ContenderNode>();
    const reads: Promise<void>[] = [];
    const kazooSemaphore = this.isKazooSemaphore(path);
    if (kazooSemaphore) reads.push(this.readSemaphoreData(path));
    else this.semaphoreData.delete(path);
    for (const child of children) {
      if (isSystem(path, child)) continue;
      if (!parseContender(child) && !(kazooSemaphore && isKazooLease(child))) {
        dirChildren.add(child);
        continue;
      }
      const have = known?.get(child);
      if (have) next.set(child, have);
      else reads.push(this.readNode(joinPath(path, child)).then((node) => void (node && next.set(child, node))));
    }
    const before = this.dirs.get(path);
    this.dirs.set(path, dirChildren);
    for (const gone of before ?? []) if (!dirChildren.has(gone)) this.drop(joinPath(path, gone), touched);
    for (const child of dirChildren) if (!before?.has(child)) reads.push(this.readDir(joinPath(path, child), touched));
    // A kazoo Semaphore's Lock, new beside a path read before: that path is a semaphore, its children leases.
    const semaphore = path.endsWith(KAZOO_SEMAPHORE_LOCK) ? path.slice(0, -KAZOO_SEMAPHORE_LOCK.length) : undefined;
    if (!before && semaphore && this.dirs.has(semaphore)) reads.push(this.readDir(semaphore, touched));
    await Promise.all(reads);
    if (next.size) this.contenders.set(path, next);
    else this.contenders.delete(path);
    touched.add(path);
  }

  /** Reads one contender again (its data changed, or it was deleted). */
  async readContender(path: string, touched: Set<string>): Promise<void> {
    const { parent, child } = splitPath(path);
    const nodes = this.contenders.get(parent);
    if (!nodes?.has(child)) return;
    const node = await this.readNode(path);
    // Its parent's list may have dropped it meanwhile (a child event read first).
    if (this.contenders.get(parent) !== nodes) return;
    if (node) nodes.set(child, node);
    else nodes.delete(child);
    if (nodes.size === 0) this.contenders.delete(parent);
    touched.add(parent);
  }

  isDir(path: string): boolean {
    return this.dirs.has(path) || this.isRoot(path);
  }

  private isRoot(path: string): boolean {
    return this.roots.includes(path) || this.companions.includes(path);
  }

  private async readSemaphoreData(path: string): Promise<void> {
    const read = await this.client().data(path, this.watcher);
    if (read) this.semaphoreData.set(path, read.data);
    else this.semaphoreData.delete(path);
  }

  private async readNode(path: string): Promise<ContenderNode | undefined> {
    const read = await this.client().data(path, this.watcher);
    if (!read) return undefined;
    const { stat, data } = read;
    return { name: splitPath(path).child, data, dataLength: stat.dataLength, ephemeralOwner: stat.ephemeralOwner, czxid: stat.czxid, mzxid: stat.mzxid };
  }

  /** Forgets `path` and everything below it. */
  private drop(path: string, touched: Set<string>): void {
    for (const dir of [...this.dirs.keys()]) if (isUnder(dir, path)) this.dirs.delete(dir);
    for (const semaphore of [...this.semaphoreData.keys()]) if (isUnder(semaphore, path)) this.semaphoreData.delete(semaphore);
    for (const parent of [...this.contenders.keys()]) {
      if (!isUnder(parent, path)) continue;
      this.contenders.delete(parent);
      touched.add(parent);
    }
  }
}

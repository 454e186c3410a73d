import type * as vscode from 'vscode';
import { hasPrefix, keyId } from '../../core/keys';
import { worstTrouble, type MemberHealth } from '../../core/lockHealth';
import type { LockFigures } from '../../core/lockFigures';
import { isSingleKey, members, type LockMember, type LockState } from '../../core/lockState';
import type { StoreConnection } from '../connections';
import { connectionItem, hintItem } from './connectionRow';
import type { LockFindings } from '../diagnosis';
import { lockTroubles } from './findings';
import { freshHealth } from './liveModel';
import { lockFace, lockItem, lockTooltip } from './lockRow';
import { memberItem, memberTooltip } from './memberRow';
import { groupByFolder, type Grouped } from './folders';
import { folderItem, prefixItem } from './prefixRow';
import type { MemberView } from './row';

export type LockTreeNode = ConnectionNode | PrefixNode | FolderNode | LockNode | MemberNode | HintNode;

/** What rows are drawn from besides their node: the provider's caches, and what it keeps of each row it drew. */
export interface Rows {
  /** The node already known by `fresh`'s id, or `fresh`: a refresh keeps expansion and selection. */
  known<T extends LockTreeNode>(fresh: T): T;
  health(connection: StoreConnection, lock: LockState): MemberHealth[];
  owns(connection: StoreConnection, member: LockMember): boolean;
  figures(connection: StoreConnection, lockId: string): LockFigures | undefined;
  /** What the connection's diagnosis says of the lock: deadlocks it is in, a TTL its holds outrun. */
  findings(connection: StoreConnection, lock: LockState): LockFindings;
  drewLock(node: LockNode, face: string): void;
  /** The resource of a lock row, whose badge counts its waiters. */
  queueBadge(node: LockNode, lock: LockState): vscode.Uri;
  drewMember(node: MemberNode, member: LockMember, own: boolean): void;
}

/** Node ids as VS Code sees them: unambiguous whatever the names hold (a connection named `host:2379`, say). */
export function nodeId(kind: 'c' | 'h' | 'p' | 'd' | 'l' | 'm', ...parts: string[]): string {
  return JSON.stringify([kind, ...parts]);
}

export class ConnectionNode {
  readonly id: string;

  constructor(readonly connection: StoreConnection) {
    this.id = nodeId('c', connection.name);
  }

  /** The ids of the rows this one may sit under, nearest first. */
  parentIds(): string[] {
    return [];
  }

  children(rows: Rows): LockTreeNode[] {
    const c = this.connection;
    if (c.prefixes.length === 0) return [rows.known(new HintNode(c))];
    return c.prefixes.map((prefix) => rows.known(new PrefixNode(c, prefix)));
  }

  treeItem(): vscode.TreeItem {
    return connectionItem(this);
  }
}

/** "Watch a prefix…" under a connection that watches none. */
export class HintNode {
  readonly id: string;

  constructor(readonly connection: StoreConnection) {
    this.id = nodeId('h', connection.name);
  }

  parentIds(): string[] {
    return [nodeId('c', this.connection.name)];
  }

  children(): LockTreeNode[] {
    return [];
  }

  treeItem(): vscode.TreeItem {
    return hintItem(this);
  }
}

/**
 * Where a row below a watched prefix sits: under which row, and the name its label is shown without (the prefix, or
 * the folder it is in).
 */
export interface Placement {
  readonly watched: string;
  readonly parentId: string;
  readonly prefix: string;
}

export class PrefixNode {
  readonly id: string;
  /** The prefix the rows below are named under: this one. */
  readonly watched: string;

  constructor(
    readonly connection: StoreConnection,
    readonly prefix: string,
  ) {
    this.id = nodeId('p', connection.name, prefix);
    this.watched = prefix;
  }

  parentIds(): string[] {
    return [nodeId('c', this.connection.name)];
  }

  locks(): LockState[] {
    const prefix = Buffer.from(this.prefix);
    // By name (a Redisson lock's members are hash fields, not keys under the prefix), or by a member's key (etcd: a
    // prefix inside one lock's queue, like `/locks/jobs/`, holds its members' keys but not the lock's name).
    return (this.connection.watch?.locks() ?? []).filter((lock) => hasPrefix(lock.name, prefix) || members(lock).some((m) => hasPrefix(m.key, prefix)));
  }

  /**
   * Its locks in folders, and the name they are shown below: the prefix, or the one folder every lock under it is in
   * (`/app/locks/` when all of /app's locks are in locks/), which this row then stands for, as the Explorer compacts
   * a chain of folders.
   */
  private layout(locks: LockState[]): { readonly path: string; readonly groups: Grouped<LockState>[] } {
    const groups = groupByFolder(locks, nameOf, this.prefix, this.connection.descriptor.nameSeparator);
    const [only] = groups;
    if (groups.length !== 1 || !('folder' in only)) return { path: this.prefix, groups };
    const { path, items } = only.folder;
    return { path, groups: groupByFolder(items, nameOf, path, this.connection.descriptor.nameSeparator) };
  }

  children(rows: Rows): LockTreeNode[] {
    const { path, groups } = this.layout(this.locks());
    return rowsOf(this.connection, { watched: this.prefix, parentId: this.id, prefix: path }, groups, rows);
  }

  treeItem(): vscode.TreeItem {
    const locks = this.connection.watch ? this.locks() : undefined;
    return prefixItem(this, locks && this.layout(locks).path, locks?.length);
  }
}

/** Locks of a watched prefix that share a directory below it (see folders.ts): `path` is the directory's whole name. */
export class FolderNode implements Placement {
  readonly id: string;
  readonly watched: string;
  readonly parentId: string;
  /** The name of the row it is under, which its label is shown without. */
  readonly parent: string;

  constructor(
    readonly connection: StoreConnection,
    at: Placement,
    /** Its whole name, which its rows are shown without. */
    readonly prefix: string,
  ) {
    ({ watched: this.watched, parentId: this.parentId, prefix: this.parent } = at);
    this.id = nodeId('d', connection.name, at.watched, prefix);
  }

  parentIds(): string[] {
    return [this.parentId];
  }

  locks(): LockState[] {
    const path = Buffer.from(this.prefix);
    return (this.connection.watch?.locks() ?? []).filter((lock) => hasPrefix(lock.name, path));
  }

  children(rows: Rows): LockTreeNode[] {
    const groups = groupByFolder(this.locks(), nameOf, this.prefix, this.connection.descriptor.nameSeparator);
    return rowsOf(this.connection, { watched: this.watched, parentId: this.id, prefix: this.prefix }, groups, rows);
  }

  treeItem(): vscode.TreeItem {
    return folderItem(this, this.locks().length);
  }
}

const nameOf = (lock: LockState): Buffer => lock.name;

/** The rows placed `here`, below a prefix or folder row, of locks grouped below it: folders, and locks. */
function rowsOf(connection: StoreConnection, here: Placement, groups: readonly Grouped<LockState>[], rows: Rows): LockTreeNode[] {
  return groups.map((g) => {
    if ('folder' in g) return rows.known(new FolderNode(connection, here, g.folder.path));
    const lock = g.item;
    // A single-key lock is its one key: shown as that key's row, with no level in between.
    return isSingleKey(lock) && lock.holder ? rows.known(new MemberNode(connection, here, lock.id, keyId(lock.holder.key))) : rows.known(new LockNode(connection, here, lock.id));
  });
}

export class LockNode implements Placement {
  readonly id: string;
  readonly watched: string;
  readonly parentId: string;
  /** The name of the row it is under (its watched prefix, or a folder), which its label is shown without. */
  readonly prefix: string;

  constructor(
    readonly connection: StoreConnection,
    at: Placement,
    readonly lockId: string,
  ) {
    ({ watched: this.watched, parentId: this.parentId, prefix: this.prefix } = at);
    this.id = nodeId('l', connection.name, at.prefix, lockId);
  }

  parentIds(): string[] {
    return [this.parentId];
  }

  lock(): LockState | undefined {
    return this.connection.watch?.lock(this.lockId);
  }

  children(rows: Rows): LockTreeNode[] {
    const lock = this.lock();
    return lock ? members(lock).map((m) => rows.known(new MemberNode(this.connection, this, lock.id, keyId(m.key)))) : [];
  }

  treeItem(rows: Rows): vscode.TreeItem {
    const lock = this.lock();
    if (!lock) return lockItem(this);
    const health = rows.health(this.connection, lock);
    const troubles = lockTroubles(rows.findings(this.connection, lock));
    const trouble = worstTrouble(health, troubles);
    rows.drewLock(this, lockFace(this, lock, health, troubles));
    const item = lockItem(this, { lock, health, trouble, acquirable: !!this.connection.backend?.acquirable(lock) });
    item.resourceUri = rows.queueBadge(this, lock);
    return item;
  }

  /** Made when hovered, so the TTLs and ages in it are current. */
  tooltip(rows: Rows): vscode.MarkdownString | undefined {
    const lock = this.lock();
    return lock && lockTooltip(this.connection, lock, freshHealth(this.connection, lock), rows.figures(this.connection, lock.id), rows.findings(this.connection, lock));
  }
}

export class MemberNode implements Placement {
  readonly id: string;
  readonly watched: string;
  readonly parentId: string;
  /** As LockNode's. */
  readonly prefix: string;

  constructor(
    readonly connection: StoreConnection,
    at: Placement,
    readonly lockId: string,
    readonly keyId: string,
  ) {
    ({ watched: this.watched, parentId: this.parentId, prefix: this.prefix } = at);
    this.id = nodeId('m', connection.name, at.prefix, lockId, keyId);
  }

  /** Its lock's row, or (a single-key lock's one key) the prefix's or folder's. */
  parentIds(): string[] {
    return [nodeId('l', this.connection.name, this.prefix, this.lockId), this.parentId];
  }

  lock(): LockState | undefined {
    return this.connection.watch?.lock(this.lockId);
  }

  /** The lock and the member this row stands for, as the model has them now. */
  view(health: (lock: LockState) => readonly MemberHealth[]): MemberView | undefined {
    const lock = this.lock();
    const mine = lock && health(lock).find((h) => keyId(h.member.key) === this.keyId);
    return lock && mine && { lock, health: mine };
  }

  children(): LockTreeNode[] {
    return [];
  }

  treeItem(rows: Rows): vscode.TreeItem {
    const view = this.view((lock) => rows.health(this.connection, lock));
    if (!view) return memberItem(this);
    const own = rows.owns(this.connection, view.health.member);
    rows.drewMember(this, view.health.member, own);
    return memberItem(this, { ...view, own });
  }

  tooltip(rows: Rows): vscode.MarkdownString | undefined {
    const view = this.view((lock) => freshHealth(this.connection, lock));
    return view && memberTooltip(this.connection, view.lock, view.health, rows.owns(this.connection, view.health.member));
  }
}

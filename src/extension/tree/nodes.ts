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
import { prefixItem } from './prefixRow';
import type { MemberView } from './row';

export type LockTreeNode = ConnectionNode | PrefixNode | LockNode | MemberNode | HintNode;

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
export function nodeId(kind: 'c' | 'h' | 'p' | 'l' | 'm', ...parts: string[]): string {
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

export class PrefixNode {
  readonly id: string;

  constructor(
    readonly connection: StoreConnection,
    readonly prefix: string,
  ) {
    this.id = nodeId('p', connection.name, prefix);
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

  children(rows: Rows): LockTreeNode[] {
    // A single-key lock is its one key: shown as that key's row, with no level in between.
    return this.locks().map((lock) =>
      isSingleKey(lock) && lock.holder
        ? rows.known(new MemberNode(this.connection, this.prefix, lock.id, keyId(lock.holder.key)))
        : rows.known(new LockNode(this.connection, this.prefix, lock.id)),
    );
  }

  treeItem(): vscode.TreeItem {
    return prefixItem(this, this.connection.watch ? this.locks().length : undefined);
  }
}

export class LockNode {
  readonly id: string;

  constructor(
    readonly connection: StoreConnection,
    readonly prefix: string,
    readonly lockId: string,
  ) {
    this.id = nodeId('l', connection.name, prefix, lockId);
  }

  parentIds(): string[] {
    return [nodeId('p', this.connection.name, this.prefix)];
  }

  lock(): LockState | undefined {
    return this.connection.watch?.lock(this.lockId);
  }

  children(rows: Rows): LockTreeNode[] {
    const lock = this.lock();
    return lock ? members(lock).map((m) => rows.known(new MemberNode(this.connection, this.prefix, lock.id, keyId(m.key)))) : [];
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

export class MemberNode {
  readonly id: string;

  constructor(
    readonly connection: StoreConnection,
    readonly prefix: string,
    readonly lockId: string,
    readonly keyId: string,
  ) {
    this.id = nodeId('m', connection.name, prefix, lockId, keyId);
  }

  /** Its lock's row, or (a single-key lock's one key) the prefix's. */
  parentIds(): string[] {
    return [nodeId('l', this.connection.name, this.prefix, this.lockId), nodeId('p', this.connection.name, this.prefix)];
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

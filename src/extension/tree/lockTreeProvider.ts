import * as vscode from 'vscode';
import type { MemberHealth } from '../../core/lockHealth';
import type { LockFigures } from '../../core/lockFigures';
import type { LockMember, LockState } from '../../core/lockState';
import type { ConnectionRegistry, StoreConnection } from '../connections';
import type { HeldLocks } from '../heldLocks';
import { NO_FINDINGS, type LockFindings } from '../diagnosis';
import { lockTroubles } from './findings';
import { Invalidation } from './invalidation';
import { HealthCache } from './liveModel';
import { waitersText } from './lockRow';
import { QueueBadges } from './queueBadges';
import { ConnectionNode, LockNode, MemberNode, type LockTreeNode, type Rows } from './nodes';
import type { MemberView } from './row';

/** How often rows without a TTL are redrawn for their ages: often enough for "held 2m 10s", rarely enough to cost nothing. */
const AGE_REDRAW_MS = 5000;

/**
 * The Locks tree: connection → watched prefix → lock → holders, then waiters in queue order (etcd: create revision).
 * Rows show what the connection's backend says it has (owners, TTLs, fencing tokens, hold counts) and nothing else. It renders
 * from the live model when VS Code asks, and is told what changed by the connections' events (change sets and lease
 * sweeps), never by polling. Nodes are kept by id, so a refresh keeps expansion and selection; each node draws its own
 * row (nodes.ts), and invalidation.ts decides which rows a change redraws.
 */
export class LockTreeProvider implements vscode.TreeDataProvider<LockTreeNode>, vscode.Disposable, Rows {
  private readonly changeEmitter = new vscode.EventEmitter<LockTreeNode | LockTreeNode[] | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private readonly nodes = new Map<string, LockTreeNode>();
  private readonly healthCache = new HealthCache();
  private readonly invalidation: Invalidation;
  private readonly badges = new QueueBadges();
  /**
   * The member each member row was last drawn with: a revoke or a force-release acts on what the user saw (its lease,
   * its owner and fencing token), or refuses. Kept per node object, not per id: a lock that goes and comes back between
   * two change sets gets a new node, while the row on screen still holds the old one and what it was drawn with.
   */
  private readonly shownMembers = new WeakMap<MemberNode, LockMember>();
  private ageTimer?: NodeJS.Timeout;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly registry: ConnectionRegistry,
    private readonly heldLocks: HeldLocks,
    /** What LockLens recorded of a lock over time, for its tooltip. */
    readonly figures: (connection: StoreConnection, lockId: string) => LockFigures | undefined = () => undefined,
    /** What the connection's diagnosis says of a lock, for its row and tooltip. */
    readonly findings: (connection: StoreConnection, lock: LockState) => LockFindings = () => NO_FINDINGS,
  ) {
    const troubles = (c: StoreConnection, lock: LockState) => lockTroubles(this.findings(c, lock));
    const invalidation = (this.invalidation = new Invalidation(this.nodes, this.healthCache, (c, m) => this.owns(c, m), troubles, (rows) => this.changeEmitter.fire(rows), (id) => this.badges.forget(id)));
    this.subscriptions.push(
      this.changeEmitter,
      this.badges,
      invalidation,
      asVscode(registry.onDidChange(() => this.redraw())),
      asVscode(registry.onDidChangeState((c) => invalidation.connectionChanged(c))),
      asVscode(registry.onDidChangeLocks(({ connection, changes }) => invalidation.locksChanged(connection, changes.changed.map((l) => l.id), changes.removed))),
      asVscode(registry.onDidChangeLeases(({ connection, infos }) => invalidation.leasesChanged(connection, new Set(infos.map((i) => i.id))))),
      asVscode(heldLocks.onDidChange(() => invalidation.ownershipChanged())),
      new vscode.Disposable(() => clearInterval(this.ageTimer)),
    );
  }

  /** Ages are redrawn only while the view is seen: a hidden view costs nothing. */
  setVisible(visible: boolean): void {
    clearInterval(this.ageTimer);
    this.ageTimer = visible ? setInterval(() => this.invalidation.agesChanged(this.registry.all()), AGE_REDRAW_MS) : undefined;
  }

  getChildren(node?: LockTreeNode): LockTreeNode[] {
    if (node) return node.children(this);
    const connections = this.registry.all();
    // No prefix anywhere: stay empty so that the "watch a prefix" welcome shows.
    if (!connections.some((c) => c.prefixes.length)) return [];
    return connections.map((connection) => this.known(new ConnectionNode(connection)));
  }

  getParent(node: LockTreeNode): LockTreeNode | undefined {
    for (const id of node.parentIds()) {
      const parent = this.nodes.get(id);
      if (parent) return parent;
    }
    return undefined;
  }

  getTreeItem(node: LockTreeNode): vscode.TreeItem {
    return node.treeItem(this);
  }

  /** Tooltips are made when hovered, so the TTLs and ages in them are current. */
  resolveTreeItem(item: vscode.TreeItem, node: LockTreeNode): vscode.TreeItem {
    const tip = node instanceof LockNode || node instanceof MemberNode ? node.tooltip(this) : undefined;
    if (tip) item.tooltip = tip;
    return item;
  }

  /** The lock and the member a node stands for, as the model has them now. */
  memberView(node: MemberNode): MemberView | undefined {
    return node.view((lock) => this.health(node.connection, lock));
  }

  /** The member a member row showed when last drawn. */
  shownMember(node: MemberNode): LockMember | undefined {
    return this.shownMembers.get(node);
  }

  lock(node: LockNode | MemberNode): LockState | undefined {
    return node.lock();
  }

  health(connection: StoreConnection, lock: LockState): MemberHealth[] {
    return this.healthCache.get(connection, lock);
  }

  /** The diagnosis of these locks changed (a deadlock confirmed or cleared): their rows are redrawn. */
  findingsChanged(connection: StoreConnection, lockIds: readonly string[]): void {
    this.invalidation.locksChanged(connection, lockIds, []);
  }

  /** Redraws everything (connections added, removed or edited; a setting that changes every row). */
  redraw(): void {
    this.invalidation.all(this.registry.all());
  }

  known<T extends LockTreeNode>(fresh: T): T {
    const known = this.nodes.get(fresh.id);
    if (known) return known as T;
    this.nodes.set(fresh.id, fresh);
    return fresh;
  }

  owns(connection: StoreConnection, member: LockMember): boolean {
    return this.heldLocks.owns(connection, member);
  }

  queueBadge(node: LockNode, lock: LockState): vscode.Uri {
    return this.badges.badge(node.id, lock.waiters.length, waitersText(lock));
  }

  drewLock(node: LockNode, face: string): void {
    this.invalidation.drewLock(node, face);
  }

  drewMember(node: MemberNode, member: LockMember, own: boolean): void {
    this.shownMembers.set(node, member);
    this.invalidation.drewMember(node, own);
  }

  dispose(): void {
    this.subscriptions.forEach((s) => s.dispose());
  }
}

function asVscode(d: { dispose(): void }): vscode.Disposable {
  return new vscode.Disposable(() => d.dispose());
}

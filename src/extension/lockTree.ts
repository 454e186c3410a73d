import * as vscode from 'vscode';
import type { Capabilities } from '../core/backend';
import { conventionLabel } from '../core/stores';
import { displayKey, hasPrefix, isUtf8, keyId } from '../core/keys';
import { lockHealth, worstTrouble, type MemberHealth, type Trouble } from '../core/lockHealth';
import type { LockFigures } from '../core/lockFigures';
import { queryPreview, sessionWho } from '../core/sessionInfo';
import { members, type LockMember, type LockState, type SessionInfo } from '../core/lockState';
import type { StoreConnection, ConnectionRegistry } from './connections';
import { ageLabel, appendUntrusted, formatDuration, formatSpan, formatTtl, memberOwnerLabel, showsTtl, roleLabel, stateText, tooltip, troubleIcon, troubleText } from './format';
import type { HeldLocks } from './heldLocks';
import { longHoldMs } from './settings';

export type LockTreeNode = ConnectionNode | PrefixNode | LockNode | MemberNode | HintNode;

export interface ConnectionNode {
  readonly kind: 'connection';
  readonly id: string;
  readonly connection: StoreConnection;
}

export interface PrefixNode {
  readonly kind: 'prefix';
  readonly id: string;
  readonly connection: StoreConnection;
  readonly prefix: string;
}

export interface LockNode {
  readonly kind: 'lock';
  readonly id: string;
  readonly connection: StoreConnection;
  readonly prefix: string;
  readonly lockId: string;
}

export interface MemberNode {
  readonly kind: 'member';
  readonly id: string;
  readonly connection: StoreConnection;
  readonly prefix: string;
  readonly lockId: string;
  readonly keyId: string;
}

/** "Watch a prefix…" under a connection that watches none. */
export interface HintNode {
  readonly kind: 'hint';
  readonly id: string;
  readonly connection: StoreConnection;
}

/** What a node shows now: the lock and the member's health, read from the live model when asked. */
export interface MemberView {
  readonly lock: LockState;
  readonly health: MemberHealth;
}

/**
 * The Locks tree: connection → watched prefix → lock → holders, then waiters in queue order (etcd: create revision).
 * Rows show what the connection's backend says it has (owners, TTLs, fencing tokens, hold counts) and nothing else. It renders
 * from the live model when VS Code asks, and is told what changed by the connections' events (change sets and lease
 * sweeps), never by polling. Nodes are kept by id, so a refresh keeps expansion and selection, and each burst of
 * changes redraws only the locks it touched, once.
 */
export class LockTreeProvider implements vscode.TreeDataProvider<LockTreeNode>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<LockTreeNode | LockTreeNode[] | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private readonly nodes = new Map<string, LockTreeNode>();
  private readonly pending = new Set<LockTreeNode>();
  private readonly healthCache = new WeakMap<LockState, { generation: number; health: MemberHealth[] }>();
  /** Counts redraws: cached health is good for one (TTLs and ages move between them). */
  private generation = 0;
  /**
   * The member each member row was last drawn with: a revoke or a force-release acts on what the user saw (its lease,
   * its owner and fencing token), or refuses. Kept per node object, not per id: a lock that goes and comes back between
   * two change sets gets a new node, while the row on screen still holds the old one and what it was drawn with.
   */
  private readonly shownMembers = new WeakMap<MemberNode, LockMember>();
  /** Member rows last drawn as held from this window: taking or releasing a lock redraws just the rows it changes. */
  private readonly shownOwn = new Set<string>();
  /** The trouble each lock row was last drawn with: a lease sweep redraws a lock row only when it changes. */
  private readonly shownTrouble = new Map<string, Trouble | undefined>();
  private pendingAll = false;
  private flushTimer?: NodeJS.Timeout;
  private ageTimer?: NodeJS.Timeout;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly registry: ConnectionRegistry,
    private readonly heldLocks: HeldLocks,
    /** What LockLens recorded of a lock over time, for its tooltip. */
    private readonly figures: (connection: StoreConnection, lockId: string) => LockFigures | undefined = () => undefined,
  ) {
    this.subscriptions.push(
      this.changeEmitter,
      asVscode(registry.onDidChange(() => this.redraw())),
      asVscode(registry.onDidChangeState((c) => this.refreshConnection(c))),
      asVscode(registry.onDidChangeLocks(({ connection, changes }) => this.locksChanged(connection, changes.changed.map((l) => l.id), changes.removed))),
      asVscode(registry.onDidChangeLeases(({ connection, infos }) => this.leasesChanged(connection, new Set(infos.map((i) => i.id))))),
      asVscode(heldLocks.onDidChange(() => this.ownershipChanged())),
    );
    this.subscriptions.push(new vscode.Disposable(() => clearInterval(this.ageTimer)));
  }

  /** Ages are redrawn only while the view is seen: a hidden view costs nothing. */
  setVisible(visible: boolean): void {
    clearInterval(this.ageTimer);
    this.ageTimer = visible ? setInterval(() => this.agesChanged(), AGE_REDRAW_MS) : undefined;
  }

  getChildren(node?: LockTreeNode): LockTreeNode[] {
    if (!node) {
      const connections = this.registry.all();
      // No prefix anywhere: stay empty so that the "watch a prefix" welcome shows.
      if (!connections.some((c) => c.prefixes.length)) return [];
      return connections.map((connection) => this.node({ kind: 'connection', id: nodeId('c', connection.name), connection }));
    }
    switch (node.kind) {
      case 'connection': {
        const c = node.connection;
        if (c.prefixes.length === 0) return [this.node({ kind: 'hint', id: nodeId('h', c.name), connection: c })];
        return c.prefixes.map((prefix) => this.node({ kind: 'prefix', id: nodeId('p', c.name, prefix), connection: c, prefix }));
      }
      case 'prefix':
        // A single-key lock is its one key: shown as that key's row, with no level in between.
        return this.locksUnder(node).map((lock) =>
          lock.kind === 'single' && lock.holder ? this.memberNode(node.connection, node.prefix, lock.id, lock.holder.key) : this.lockNode(node.connection, node.prefix, lock.id),
        );
      case 'lock': {
        const lock = this.lock(node);
        return lock ? members(lock).map((m) => this.memberNode(node.connection, node.prefix, lock.id, m.key)) : [];
      }
      default:
        return [];
    }
  }

  getParent(node: LockTreeNode): LockTreeNode | undefined {
    if (node.kind === 'connection') return undefined;
    if (node.kind === 'prefix' || node.kind === 'hint') return this.nodes.get(nodeId('c', node.connection.name));
    const prefixNode = this.nodes.get(nodeId('p', node.connection.name, node.prefix));
    if (node.kind === 'lock') return prefixNode;
    return this.nodes.get(nodeId('l', node.connection.name, node.prefix, node.lockId)) ?? prefixNode;
  }

  getTreeItem(node: LockTreeNode): vscode.TreeItem {
    switch (node.kind) {
      case 'connection':
        return connectionItem(node);
      case 'prefix':
        return this.prefixItem(node);
      case 'lock':
        return this.lockItem(node);
      case 'member':
        return this.memberItem(node);
      case 'hint': {
        const item = new vscode.TreeItem(vscode.l10n.t('Watch a prefix…'));
        item.id = node.id;
        item.iconPath = new vscode.ThemeIcon('add');
        item.command = { command: 'locklens.addPrefix', title: vscode.l10n.t('Watch a prefix…'), arguments: [node] };
        return item;
      }
    }
  }

  /** The lock and the member a node stands for, as the model has them now. */
  memberView(node: MemberNode): MemberView | undefined {
    const watch = node.connection.watch;
    const lock = watch?.lock(node.lockId);
    if (!watch || !lock) return undefined;
    const health = this.health(node.connection, lock).find((h) => keyId(h.member.key) === node.keyId);
    return health && { lock, health };
  }

  /** The member a member row showed when last drawn. */
  shownMember(node: MemberNode): LockMember | undefined {
    return this.shownMembers.get(node);
  }

  lock(node: LockNode | MemberNode): LockState | undefined {
    return node.connection.watch?.lock(node.lockId);
  }

  /**
   * Each member's health, computed once per lock state per redraw: every member row of a lock asks for it, and
   * computing it per row would be quadratic in the queue's length.
   */
  health(connection: StoreConnection, lock: LockState): MemberHealth[] {
    const cached = this.healthCache.get(lock);
    if (cached && cached.generation === this.generation) return cached.health;
    const health = freshHealth(connection, lock);
    this.healthCache.set(lock, { generation: this.generation, health });
    return health;
  }

  dispose(): void {
    clearTimeout(this.flushTimer);
    this.subscriptions.forEach((s) => s.dispose());
  }

  private locksUnder(node: PrefixNode): LockState[] {
    const prefix = Buffer.from(node.prefix);
    // By name (a Redisson lock's members are hash fields, not keys under the prefix), or by a member's key (etcd: a
    // prefix inside one lock's queue, like `/locks/jobs/`, holds its members' keys but not the lock's name).
    return (node.connection.watch?.locks() ?? []).filter((lock) => hasPrefix(lock.name, prefix) || members(lock).some((m) => hasPrefix(m.key, prefix)));
  }

  private lockNode(connection: StoreConnection, prefix: string, lockId: string): LockNode {
    return this.node({ kind: 'lock', id: nodeId('l', connection.name, prefix, lockId), connection, prefix, lockId });
  }

  private memberNode(connection: StoreConnection, prefix: string, lockId: string, key: Buffer): MemberNode {
    const kid = keyId(key);
    return this.node({ kind: 'member', id: nodeId('m', connection.name, prefix, lockId, kid), connection, prefix, lockId, keyId: kid });
  }

  private prefixItem(node: PrefixNode): vscode.TreeItem {
    const c = node.connection;
    const item = new vscode.TreeItem(node.prefix || vscode.l10n.t('(every key)'), vscode.TreeItemCollapsibleState.Expanded);
    item.id = node.id;
    item.contextValue = 'prefix';
    item.iconPath = new vscode.ThemeIcon('symbol-namespace');
    const count = c.watch ? this.locksUnder(node).length : undefined;
    const parts = count === undefined ? [] : [count === 1 ? vscode.l10n.t('1 lock') : vscode.l10n.t('{0} locks', count)];
    if (c.staleSince) parts.push(vscode.l10n.t('stale for {0}', formatDuration(Date.now() - c.staleSince)));
    item.description = parts.join(' · ');
    return item;
  }

  private lockItem(node: LockNode): vscode.TreeItem {
    const lock = this.lock(node);
    const item = new vscode.TreeItem(lock ? shortName(lock.name, node.prefix) : '', vscode.TreeItemCollapsibleState.Collapsed);
    item.id = node.id;
    if (!lock) return item;
    const health = this.health(node.connection, lock);
    const trouble = worstTrouble(health);
    const holder = lock.holder && health[0];
    // `.acquirable`: Acquire Lock on the row joins it (the backend says which layouts it can take interoperably).
    item.contextValue = `lock.${lock.kind}${node.connection.backend?.acquirable(lock) ? '.acquirable' : ''}`;
    item.iconPath = troubleIcon(trouble, LOCK_ICONS[lock.kind]);
    // Nothing here changes with the clock (no TTL, no age): a lock row is redrawn only when the lock changes or its
    // worst trouble does. Redrawing it on every lease sweep would make VS Code re-fetch its member rows each time, and
    // a context-menu command run in that gap would get no row.
    this.shownTrouble.set(node.id, trouble);
    const parts: string[] = lock.altName ? [lock.altName] : [];
    if (holder) {
      const who = memberLabel(lock, holder.member, node.prefix);
      parts.push(lock.kind === 'election' ? vscode.l10n.t('leader {0}', who) : vscode.l10n.t('held by {0}', who));
      const others = lock.sharedWith?.length ?? 0;
      if (others && holder.member.mode === 'read') parts.push(others === 1 ? vscode.l10n.t('and 1 other reader') : vscode.l10n.t('and {0} other readers', others));
      else if (others) parts.push(others === 1 ? vscode.l10n.t('and 1 other claim') : vscode.l10n.t('and {0} other claims', others));
    } else parts.push(vscode.l10n.t('free'));
    if (lock.waiters.length) {
      parts.push(
        lock.kind === 'election'
          ? lock.waiters.length === 1
            ? vscode.l10n.t('1 candidate')
            : vscode.l10n.t('{0} candidates', lock.waiters.length)
          : lock.waiters.length === 1
            ? vscode.l10n.t('1 waiting')
            : vscode.l10n.t('{0} waiting', lock.waiters.length),
      );
    }
    if (node.connection.staleSince) parts.push(vscode.l10n.t('stale'));
    item.description = parts.join(' · ');
    return item;
  }

  /** Tooltips are made when hovered, so the TTLs and ages in them are current. */
  resolveTreeItem(item: vscode.TreeItem, node: LockTreeNode): vscode.TreeItem {
    if (node.kind === 'lock') {
      const lock = this.lock(node);
      if (lock) item.tooltip = lockTooltip(lock, freshHealth(node.connection, lock), capabilities(node.connection), this.figures(node.connection, lock.id));
    } else if (node.kind === 'member') {
      const lock = this.lock(node);
      const health = lock && freshHealth(node.connection, lock).find((h) => keyId(h.member.key) === node.keyId);
      if (lock && health) item.tooltip = memberTooltip(lock, health, this.heldLocks.owns(node.connection, health.member), node.connection);
    }
    return item;
  }

  private memberItem(node: MemberNode): vscode.TreeItem {
    const view = this.memberView(node);
    if (!view) return Object.assign(new vscode.TreeItem(''), { id: node.id });
    const { lock, health } = view;
    const { member } = health;
    const own = this.heldLocks.owns(node.connection, member);
    const caps = capabilities(node.connection);
    this.shownMembers.set(node, member);
    if (own) this.shownOwn.add(node.id);
    else this.shownOwn.delete(node.id);
    const label = memberLabel(lock, member, node.prefix);
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    const parts = [health.position ? `${roleLabel(health.role)} #${health.position}` : roleLabel(health.role)];
    // A database session says who it is (application, user, client) better than its number, which is the row's label.
    if (member.session) parts.push(sessionSummary(member.session));
    else if (member.owner && label !== member.owner) parts.push(memberOwnerLabel(caps.owner, member, shorten(member.owner)));
    if (member.holds !== null) parts.push(member.holds === 1 ? vscode.l10n.t('1 hold') : vscode.l10n.t('{0} holds (re-entrant)', member.holds));
    if (member.mode) parts.push(member.mode === 'read' ? vscode.l10n.t('read') : vscode.l10n.t('write'));
    if (member.quorum) parts.push(vscode.l10n.t('on {0}/{1} instances', member.quorum.agree, member.quorum.of));
    // A fair-lock waiter's TTL is its give-up time, not an expiry of anything it holds. A store without TTLs
    // (ZooKeeper: a node lives as long as its session, whose time left cannot be read) has nothing to count down.
    if (member.deadline !== undefined && health.ttl !== undefined) parts.push(vscode.l10n.t('gives up in {0}s', Math.ceil(health.ttl)));
    else if (showsTtl(health, caps)) parts.push(formatTtl(health, caps.owner));
    if (member.token !== null) parts.push(vscode.l10n.t('token {0}', member.token));
    parts.push(ageLabel(health));
    if (own) parts.push(vscode.l10n.t('held by you'));
    if (node.connection.staleSince) parts.push(vscode.l10n.t('stale'));
    item.description = parts.join(' · ');
    const trouble = worstTrouble([health]);
    item.iconPath = troubleIcon(trouble, own ? 'account' : MEMBER_ICONS[health.role]);
    item.contextValue = memberContext(member, health.position === 0, own, caps);
    return item;
  }

  private node<T extends LockTreeNode>(fresh: T): T {
    const known = this.nodes.get(fresh.id);
    if (known) return known as T;
    this.nodes.set(fresh.id, fresh);
    return fresh;
  }

  private locksChanged(connection: StoreConnection, changed: readonly string[], removed: readonly string[]): void {
    const changedIds = new Set(changed);
    const removedIds = new Set(removed);
    const rows = this.rowsOf(connection, (lockId) => changedIds.has(lockId));
    const known = new Set(rows.map((n) => n.lockId));
    if (removedIds.size || changed.some((id) => !known.has(id))) {
      // Locks appeared or went: their prefixes' lists changed.
      for (const n of this.nodes.values()) if (n.kind === 'prefix' && n.connection === connection) this.pending.add(n);
      this.forget((n) => (n.kind === 'lock' || n.kind === 'member') && n.connection === connection && removedIds.has(n.lockId));
    }
    // Members that left a lock that is still there: their rows are gone for good.
    const current = new Map<string, Set<string>>();
    const membersOf = (lockId: string) => {
      const lock = connection.watch?.lock(lockId);
      return new Set(lock ? members(lock).map((m) => keyId(m.key)) : []);
    };
    for (const n of rows) {
      if (n.kind === 'member') {
        let keys = current.get(n.lockId);
        if (!keys) current.set(n.lockId, (keys = membersOf(n.lockId)));
        if (!keys.has(n.keyId)) {
          this.forget((x) => x === n);
          continue;
        }
      }
      this.pending.add(n);
    }
    this.schedule();
  }

  private leasesChanged(connection: StoreConnection, leases: Set<string>): void {
    this.redrawMembers(connection, (m) => leases.has(m.lease));
  }

  /**
   * A member with no sampled TTL is redrawn by no sweep (a ZooKeeper node, a SQL session, a Liquibase row): its age
   * ("held 2m") would stay as first drawn. Such rows are redrawn now and then, as TTL rows are at every sweep.
   */
  private agesChanged(): void {
    for (const connection of this.registry.all()) {
      const watch = connection.watch;
      if (watch) this.redrawMembers(connection, (m) => !m.lease || !watch.lease(m.lease));
    }
  }

  /** Redraws the member rows of the locks with a member `wanted` picks, and their lock rows whose worst trouble moved. */
  private redrawMembers(connection: StoreConnection, wanted: (member: LockMember) => boolean): void {
    const watch = connection.watch;
    for (const n of this.rowsOf(connection, (lockId) => {
      const lock = watch?.lock(lockId);
      return !!lock && members(lock).some(wanted);
    })) {
      if (n.kind === 'member') this.pending.add(n);
      else {
        const lock = this.lock(n);
        if (lock && worstTrouble(this.health(connection, lock)) !== this.shownTrouble.get(n.id)) this.pending.add(n);
      }
    }
    this.schedule();
  }

  /** The lock rows and member rows shown for the locks `wanted` picks. */
  private rowsOf(connection: StoreConnection, wanted: (lockId: string) => boolean): (LockNode | MemberNode)[] {
    const rows: (LockNode | MemberNode)[] = [];
    for (const n of this.nodes.values()) if ((n.kind === 'lock' || n.kind === 'member') && n.connection === connection && wanted(n.lockId)) rows.push(n);
    return rows;
  }

  /** Redraws only the member rows whose "held by you" changed; never a whole subtree (see lockItem). */
  private ownershipChanged(): void {
    for (const n of this.nodes.values()) {
      if (n.kind !== 'member') continue;
      const member = this.memberView(n)?.health.member;
      if (this.shownOwn.has(n.id) !== (!!member && this.heldLocks.owns(n.connection, member))) this.pending.add(n);
    }
    this.schedule();
  }

  private refreshConnection(connection: StoreConnection): void {
    // A new watch (refresh, reconnect, disconnect) reports only what exists: forget rows of locks that are gone.
    const watch = connection.watch;
    this.forget((n) => (n.kind === 'lock' || n.kind === 'member') && n.connection === connection && !watch?.lock(n.lockId));
    const node = this.nodes.get(nodeId('c', connection.name));
    if (node) this.pending.add(node);
    else this.pendingAll = true;
    this.schedule();
  }

  /** Redraws everything (connections added, removed or edited; a setting that changes every row). */
  redraw(): void {
    const connections = new Set(this.registry.all());
    this.forget((n) => !connections.has(n.connection) || ('prefix' in n && !n.connection.prefixes.includes(n.prefix)));
    this.pendingAll = true;
    this.schedule();
  }

  private forget(gone: (n: LockTreeNode) => boolean): void {
    for (const [id, n] of this.nodes) {
      if (!gone(n)) continue;
      this.nodes.delete(id);
      this.shownTrouble.delete(id);
      this.shownOwn.delete(id);
    }
  }

  /** One redraw per turn of the event loop, however many events arrived in it. */
  private schedule(): void {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      this.generation++;
      if (this.pendingAll) this.changeEmitter.fire(undefined);
      else if (this.pending.size) this.changeEmitter.fire([...this.pending]);
      this.pending.clear();
      this.pendingAll = false;
    }, 0);
  }
}

function freshHealth(connection: StoreConnection, lock: LockState): MemberHealth[] {
  return lockHealth(lock, connection.clock, (id) => connection.watch?.lease(id), { longHoldMs: longHoldMs() });
}

/** Node ids as VS Code sees them: unambiguous whatever the names hold (a connection named `host:2379`, say). */
export function nodeId(kind: 'c' | 'h' | 'p' | 'l' | 'm', ...parts: string[]): string {
  return JSON.stringify([kind, ...parts]);
}

const CONNECTION_ICONS: Record<StoreConnection['state'], vscode.ThemeIcon> = {
  connected: new vscode.ThemeIcon('database', new vscode.ThemeColor('testing.iconPassed')),
  connecting: new vscode.ThemeIcon('loading~spin'),
  reconnecting: new vscode.ThemeIcon('sync~spin', new vscode.ThemeColor('list.warningForeground')),
  error: new vscode.ThemeIcon('error', new vscode.ThemeColor('list.errorForeground')),
  disconnected: new vscode.ThemeIcon('debug-disconnect'),
};

const NOT_INSTALLED_ICON = new vscode.ThemeIcon('extensions', new vscode.ThemeColor('list.warningForeground'));
/** Connected, but some of the store's nodes cannot be read: what is shown may be missing locks. */
const PARTIAL_ICON = new vscode.ThemeIcon('database', new vscode.ThemeColor('list.warningForeground'));

function connectionItem(node: ConnectionNode): vscode.TreeItem {
  const c = node.connection;
  const item = new vscode.TreeItem(c.name, vscode.TreeItemCollapsibleState.Expanded);
  item.id = node.id;
  // A store whose package is not installed offers to install it instead of connecting.
  item.contextValue = c.storeMissing ? 'connection.notInstalled' : `connection.${c.state}`;
  item.iconPath = c.storeMissing ? NOT_INSTALLED_ICON : c.partial ? PARTIAL_ICON : CONNECTION_ICONS[c.state];
  item.description = stateText(c);
  const md = tooltip().appendMarkdown(`**`);
  appendUntrusted(md, c.name).appendMarkdown(`**\n\n${vscode.l10n.t('Store')}: ${c.descriptor.displayName}\n\n${vscode.l10n.t('Endpoints')}: `);
  appendUntrusted(md, c.settings.endpoints.join(', '));
  if (c.settings.username) appendUntrusted(md.appendMarkdown(`\n\n${vscode.l10n.t('User')}: `), c.settings.username);
  if (c.settings.namespace) appendUntrusted(md.appendMarkdown(`\n\n${vscode.l10n.t('Namespace')}: `), c.settings.namespace);
  if (c.settings.tls) md.appendMarkdown(`\n\n$(shield) ${vscode.l10n.t('TLS')}${c.settings.tls.insecureSkipVerify ? ` (${vscode.l10n.t('certificate not verified')})` : ''}`);
  if (c.error) appendUntrusted(md.appendMarkdown(`\n\n$(warning) `), c.error.message);
  if (c.partial) appendUntrusted(md.appendMarkdown(`\n\n$(warning) `), c.partial.detail);
  if (c.hidden) appendUntrusted(md.appendMarkdown(`\n\n$(eye-closed) `), c.hidden);
  item.tooltip = md;
  return item;
}

function lockTooltip(lock: LockState, health: readonly MemberHealth[], caps: Capabilities, figures: LockFigures | undefined): vscode.MarkdownString {
  const { owner } = caps;
  const md = tooltip().appendMarkdown(`**${vscode.l10n.t('Lock')}** `);
  appendUntrusted(md, lock.name);
  if (lock.altName) appendUntrusted(md.appendMarkdown(' = '), lock.altName);
  md.appendMarkdown(`\n\n${vscode.l10n.t('Kind')}: ${kindLabel(lock)}\n\n`);
  for (const h of health) {
    md.appendMarkdown(`- ${roleLabel(h.role)}${h.position ? ` #${h.position}` : ''}: `);
    appendUntrusted(md, h.member.key);
    if (showsTtl(h, caps)) md.appendMarkdown(` · ${formatTtl(h, owner)}`);
    if (h.member.token !== null) md.appendMarkdown(` · ${vscode.l10n.t('token {0}', h.member.token)}`);
    md.appendMarkdown('\n');
  }
  for (const h of health) for (const t of h.troubles) md.appendMarkdown(`\n\n$(warning) ${escapeOwn(troubleText(t, h, longHoldMs(), owner))}`);
  if (figures) md.appendMarkdown(`\n\n$(graph) ${escapeOwn(figuresLine(figures))}`);
  return md;
}

/** The figures in one line: "12 holds seen · hold p50 3 s, p95 8 s · wait p50 1 s, p95 4 s · 2.0 handoffs/min · 1 stall". */
function figuresLine(f: LockFigures): string {
  const parts = [f.holds === 1 ? vscode.l10n.t('1 hold seen') : vscode.l10n.t('{0} holds seen', f.holds)];
  if (f.hold) parts.push(vscode.l10n.t('hold p50 {0}, p95 {1}', formatSpan(f.hold.p50), formatSpan(f.hold.p95)));
  if (f.wait) parts.push(vscode.l10n.t('wait p50 {0}, p95 {1}', formatSpan(f.wait.p50), formatSpan(f.wait.p95)));
  parts.push(vscode.l10n.t('{0} handoffs/min', f.handoffsPerMinute.toFixed(1)));
  if (f.stalls) parts.push(f.stalls === 1 ? vscode.l10n.t('1 stall') : vscode.l10n.t('{0} stalls', f.stalls));
  return parts.join(' · ');
}

function memberTooltip(lock: LockState, h: MemberHealth, own: boolean, c: StoreConnection): vscode.MarkdownString {
  const { owner, ttl } = capabilities(c);
  const m = h.member;
  const md = tooltip().appendMarkdown(`**${roleLabel(h.role)}${h.position ? ` #${h.position}` : ''}**${own ? ` · ${vscode.l10n.t('held by you')}` : ''}\n\n`);
  const row = (label: string, value: string) => appendUntrusted(md.appendMarkdown(`${label}: `), value).appendMarkdown('\n\n');
  row(vscode.l10n.t('Key'), displayKey(m.key));
  row(vscode.l10n.t('Lock'), displayKey(lock.name));
  if (owner === 'lease') row(vscode.l10n.t('Lease'), m.lease || vscode.l10n.t('none'));
  else if (owner === 'session') row(vscode.l10n.t('Session'), m.owner || vscode.l10n.t('none (persistent node)'));
  else if (owner === 'connection' && m.session) sessionRows(m.session, m.owner, row);
  else row(vscode.l10n.t('Owner'), m.owner || vscode.l10n.t('unknown'));
  if (m.holds !== null) row(vscode.l10n.t('Holds (re-entrant)'), String(m.holds));
  if (m.mode) row(vscode.l10n.t('Mode'), m.mode === 'read' ? vscode.l10n.t('read') : vscode.l10n.t('write'));
  if (m.quorum) row(vscode.l10n.t('Instances agreeing'), `${m.quorum.agree}/${m.quorum.of}${m.quorum.instances?.length ? ` (${m.quorum.instances.join(', ')})` : ''}`);
  if (ttl && showsTtl(h, { ttl, owner })) row(vscode.l10n.t('Remaining TTL'), formatTtl(h, owner) + (h.lease ? ` / ${Math.ceil(h.lease.grantedTtl)}s` : ''));
  if (m.deadline !== undefined) row(vscode.l10n.t('Gives up waiting at'), new Date(m.deadline).toLocaleTimeString());
  if (m.token !== null) row(vscode.l10n.t('Fencing token'), String(m.token));
  if (m.revision !== undefined) row(vscode.l10n.t('Modified at revision'), String(m.revision));
  row(vscode.l10n.t('Layout'), conventionLabel(m.convention));
  row(vscode.l10n.t('Age'), ageLabel(h));
  if (m.valueSize) row(vscode.l10n.t('Value ({0} bytes)', m.valueSize), displayKey(m.valuePreview.subarray(0, 200)));
  if (h.lease?.refreshes.length) row(vscode.l10n.t('Last renewal seen'), new Date(h.lease.refreshes[h.lease.refreshes.length - 1]).toLocaleTimeString());
  for (const t of h.troubles) md.appendMarkdown(`$(warning) ${escapeOwn(troubleText(t, h, longHoldMs(), owner))}\n\n`);
  if (c.staleSince) md.appendMarkdown(`$(history) ${escapeOwn(vscode.l10n.t('Stale: LockLens lost the watch {0} ago; this may have changed.', formatDuration(Date.now() - c.staleSince)))}`);
  return md;
}

/** "billing-worker · svc@10.0.0.5:51234": the session behind a SQL member, as far as the reader may see it. */
function sessionSummary(s: SessionInfo): string {
  return [s.application, sessionWho(s)].filter(Boolean).join(' · ') || vscode.l10n.t('session details hidden');
}

/** The database session behind a member, a row each: what the person deciding to terminate it needs to know. */
function sessionRows(s: SessionInfo, id: string, row: (label: string, value: string) => void): void {
  row(vscode.l10n.t('Connection'), id);
  if (s.user) row(vscode.l10n.t('User'), s.user);
  if (s.application) row(vscode.l10n.t('Application'), s.application);
  if (s.client) row(vscode.l10n.t('Client'), s.client);
  if (s.connectedAt !== undefined) row(vscode.l10n.t('Connected'), new Date(s.connectedAt).toLocaleString());
  if (s.state) row(vscode.l10n.t('State'), s.state);
  if (s.waitingSince !== undefined) row(vscode.l10n.t('Waiting since'), new Date(s.waitingSince).toLocaleTimeString());
  if (s.query) row(vscode.l10n.t('Query'), queryPreview(s.query, 300));
}

/** "queue (Go concurrency.Mutex, etcdctl lock, jetcd)": how the lock behaves, and whose layout its members follow. */
function kindLabel(lock: LockState): string {
  const kind =
    lock.kind === 'queue'
      ? vscode.l10n.t('queue')
      : lock.kind === 'election'
        ? vscode.l10n.t('election')
        : lock.kind === 'readwrite'
          ? vscode.l10n.t('read/write lock')
          : vscode.l10n.t('single key');
  const layouts = [...new Set(members(lock).map((m) => conventionLabel(m.convention)))];
  return layouts.length ? `${kind} (${layouts.join('; ')})` : kind;
}

/**
 * A member row's contextValue, which decides its menu items: `member.<leased|unleased>.<own|other>`, then `.holder`
 * for a member that holds the lock (Force Release frees holds, not places in a queue), `.token` when it has a fencing
 * token to copy, and `.owner` when its owner is something other than a lease (a Redis token, a Redisson field) to copy.
 * `leased` is a lease that can be revoked (etcd), so Revoke Lease and Copy Lease ID never show for other stores.
 */
function memberContext(member: LockMember, holds: boolean, own: boolean, caps: Capabilities): string {
  return [
    'member',
    member.expiresWith === 'lease' ? 'leased' : 'unleased',
    own ? 'own' : 'other',
    ...(holds ? ['holder'] : []),
    ...(member.token !== null ? ['token'] : []),
    ...(caps.owner !== 'lease' && member.owner ? ['owner'] : []),
  ].join('.');
}

/** What the connection's store has; while it is not connected, nothing. */
function capabilities(connection: StoreConnection): Capabilities {
  return connection.backend?.capabilities ?? NOTHING;
}

const NOTHING: Capabilities = { waiters: false, fencingTokens: false, ttl: false, owner: 'token', queuedAcquire: false, readWriteLocks: false };

/** How often rows without a TTL are redrawn for their ages: often enough for "held 2m 10s", rarely enough to cost nothing. */
const AGE_REDRAW_MS = 5000;

const LOCK_ICONS: Record<LockState['kind'], string> = { queue: 'lock', single: 'key', election: 'organization', readwrite: 'book' };

/** Long owners (a Redisson `<uuid>:<thread>`, a 32-hex token) cut to fit a row; the tooltip has them whole. */
function shorten(text: string, max = 24): string {
  return text.length > max ? text.slice(0, max - 1) + '…' : text;
}

/** The lock name below its prefix ("jobs" under "/locks/"), whole when the prefix is the lock's own. */
function shortName(name: Buffer, prefix: string): string {
  const p = Buffer.from(prefix);
  let rest = hasPrefix(name, p) && name.length > p.length ? name.subarray(p.length) : name;
  // Under a path written without its last slash (a ZooKeeper path: /app), the rest starts with one: /app/jobs is jobs.
  if (rest !== name && rest[0] === 0x2f && rest.length > 1) rest = rest.subarray(1);
  return displayKey(rest);
}

const MEMBER_ICONS: Record<MemberHealth['role'], string> = { holder: 'lock', waiter: 'clock', leader: 'star-full', candidate: 'person', single: 'key' };

/** Longest proposal shown as an election member's label. */
const MAX_PROPOSAL_LABEL = 40;

/**
 * A single key by its lock's name under the prefix (a lock-table row's key is the row's name alone, its lock
 * `<table>/<row>`); an election member by its proposal (what `etcdctl elect` prints), when that is text; a queue
 * member by the last segment of its key (the lease, for Go and etcdctl).
 */
function memberLabel(lock: LockState, member: LockMember, prefix: string): string {
  if (lock.kind === 'single') return shortName(lock.name, prefix);
  if (lock.kind === 'election' && member.valueSize > 0 && isUtf8(member.valuePreview)) {
    const proposal = member.valuePreview.toString('utf8').replace(/\s+/g, ' ');
    return proposal.length > MAX_PROPOSAL_LABEL ? proposal.slice(0, MAX_PROPOSAL_LABEL - 1) + '…' : proposal;
  }
  return displayKey(member.key.subarray(member.key.lastIndexOf(0x2f) + 1));
}

/** Our own sentences can hold a lease ID or a setting name: keep markdown from reading `_` or `*` in them. */
function escapeOwn(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-!<>]/g, '\\$&');
}

function asVscode(d: { dispose(): void }): vscode.Disposable {
  return new vscode.Disposable(() => d.dispose());
}

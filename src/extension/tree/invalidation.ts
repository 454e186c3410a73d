import { keyId } from '../../core/keys';
import type { LockTrouble } from '../../core/lockHealth';
import { members, type LockMember, type LockState } from '../../core/lockState';
import type { StoreConnection } from '../connections';
import type { HealthCache } from './liveModel';
import { lockFace } from './lockRow';
import { FolderNode, LockNode, MemberNode, nodeId, PrefixNode, type LockTreeNode } from './nodes';

/**
 * Which rows a change touches: each burst of change sets, lease sweeps and ownership changes redraws only the rows it
 * touched, once per turn of the event loop, and forgets the rows of what is gone.
 */
export class Invalidation {
  private readonly pending = new Set<LockTreeNode>();
  private pendingAll = false;
  private flushTimer?: NodeJS.Timeout;
  /** Member rows last drawn as held from this window: taking or releasing a lock redraws just the rows it changes. */
  private readonly shownOwn = new Set<string>();
  /** What each lock row was last drawn with (lockFace): a lease sweep or the clock redraws a lock row only when it changes. */
  private readonly shownFace = new Map<string, string>();

  constructor(
    /** The tree's nodes by id. */
    private readonly nodes: Map<string, LockTreeNode>,
    private readonly health: HealthCache,
    private readonly owns: (connection: StoreConnection, member: LockMember) => boolean,
    /** The lock's own troubles, from the connection's diagnosis. */
    private readonly lockTroubles: (connection: StoreConnection, lock: LockState) => readonly LockTrouble[],
    /** Redraws the rows given, or every row. */
    private readonly redraw: (rows: LockTreeNode[] | undefined) => void,
    /** A row gone for good: what was kept for it elsewhere (its badge) goes too. */
    private readonly forgotten: (id: string) => void,
  ) {}

  drewLock(node: LockNode, face: string): void {
    this.shownFace.set(node.id, face);
  }

  drewMember(node: MemberNode, own: boolean): void {
    if (own) this.shownOwn.add(node.id);
    else this.shownOwn.delete(node.id);
  }

  locksChanged(connection: StoreConnection, changed: readonly string[], removed: readonly string[]): void {
    const changedIds = new Set(changed);
    const removedIds = new Set(removed);
    const rows = this.rowsOf(connection, (lockId) => changedIds.has(lockId));
    const known = new Set(rows.map((n) => n.lockId));
    if (removedIds.size || changed.some((id) => !known.has(id))) {
      // Locks appeared or went: their prefixes' and folders' lists changed; a folder left empty is gone.
      this.forget((n) => n instanceof FolderNode && n.connection === connection && n.locks().length === 0);
      for (const n of this.nodes.values()) if ((n instanceof PrefixNode || n instanceof FolderNode) && n.connection === connection) this.pending.add(n);
      this.forget((n) => isLockRow(n) && n.connection === connection && removedIds.has(n.lockId));
    }
    // Members that left a lock that is still there: their rows are gone for good.
    const current = new Map<string, Set<string>>();
    const membersOf = (lockId: string) => {
      const lock = connection.watch?.lock(lockId);
      return new Set(lock ? members(lock).map((m) => keyId(m.key)) : []);
    };
    for (const n of rows) {
      if (n instanceof MemberNode) {
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

  leasesChanged(connection: StoreConnection, leases: Set<string>): void {
    this.redrawMembers(connection, (m) => leases.has(m.lease));
  }

  /**
   * A member with no sampled TTL is redrawn by no sweep (a ZooKeeper node, a SQL session, a Liquibase row): its age
   * ("held 2m") would stay as first drawn. Such rows are redrawn now and then, as TTL rows are at every sweep; and so
   * is every lock row whose age to the minute moved.
   */
  agesChanged(connections: readonly StoreConnection[]): void {
    for (const connection of connections) {
      const watch = connection.watch;
      if (!watch) continue;
      for (const n of this.nodes.values()) if (n instanceof LockNode && n.connection === connection) this.redrawLockIfMoved(n);
      this.redrawMembers(connection, (m) => !m.lease || !watch.lease(m.lease));
    }
  }

  /** Redraws only the member rows whose "held by you" changed; never a whole subtree (see lockItem). */
  ownershipChanged(): void {
    for (const n of this.nodes.values()) {
      if (!(n instanceof MemberNode)) continue;
      const member = n.view((lock) => this.health.get(n.connection, lock))?.health.member;
      if (this.shownOwn.has(n.id) !== (!!member && this.owns(n.connection, member))) this.pending.add(n);
    }
    this.schedule();
  }

  connectionChanged(connection: StoreConnection): void {
    // A new watch (refresh, reconnect, disconnect) reports only what exists: forget rows of locks that are gone.
    const watch = connection.watch;
    this.forget((n) => isLockRow(n) && n.connection === connection && !watch?.lock(n.lockId));
    const node = this.nodes.get(nodeId('c', connection.name));
    if (node) this.pending.add(node);
    else this.pendingAll = true;
    this.schedule();
  }

  /** Every row, forgetting those of connections and prefixes no longer there. */
  all(connections: readonly StoreConnection[]): void {
    const present = new Set(connections);
    this.forget((n) => !present.has(n.connection) || ('watched' in n && !n.connection.prefixes.includes(n.watched)));
    this.pendingAll = true;
    this.schedule();
  }

  dispose(): void {
    clearTimeout(this.flushTimer);
  }

  /** Redraws the member rows of the locks with a member `wanted` picks, and their lock rows whose face moved. */
  private redrawMembers(connection: StoreConnection, wanted: (member: LockMember) => boolean): void {
    const watch = connection.watch;
    for (const n of this.rowsOf(connection, (lockId) => {
      const lock = watch?.lock(lockId);
      return !!lock && members(lock).some(wanted);
    })) {
      if (n instanceof MemberNode) this.pending.add(n);
      else this.redrawLockIfMoved(n);
    }
    this.schedule();
  }

  private redrawLockIfMoved(n: LockNode): void {
    const lock = n.lock();
    if (lock && lockFace(n, lock, this.health.get(n.connection, lock), this.lockTroubles(n.connection, lock)) !== this.shownFace.get(n.id)) this.pending.add(n);
  }

  /** The lock rows and member rows shown for the locks `wanted` picks. */
  private rowsOf(connection: StoreConnection, wanted: (lockId: string) => boolean): (LockNode | MemberNode)[] {
    const rows: (LockNode | MemberNode)[] = [];
    for (const n of this.nodes.values()) if (isLockRow(n) && n.connection === connection && wanted(n.lockId)) rows.push(n);
    return rows;
  }

  private forget(gone: (n: LockTreeNode) => boolean): void {
    for (const [id, n] of this.nodes) {
      if (!gone(n)) continue;
      this.nodes.delete(id);
      this.shownFace.delete(id);
      this.shownOwn.delete(id);
      this.forgotten(id);
    }
  }

  /** One redraw per turn of the event loop, however many events arrived in it. */
  private schedule(): void {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      this.health.nextRedraw();
      if (this.pendingAll) this.redraw(undefined);
      else if (this.pending.size) this.redraw([...this.pending]);
      this.pending.clear();
      this.pendingAll = false;
    }, 0);
  }
}

function isLockRow(n: LockTreeNode): n is LockNode | MemberNode {
  return n instanceof LockNode || n instanceof MemberNode;
}

/**
 * A wait-for graph over the owners of one connection's locks (issue 22), kept from the live model's change sets (or
 * whole listings): an edge from a waiter's owner to each holder's owner of the lock it waits in, and a cycle of edges
 * is a deadlock. Pure: no store, no timers; the cycles are found again only through the edges a change adds.
 *
 * Who takes part, and why no one is guessed into a cycle. A member joins only in a lock with a queue (a queue, an
 * election, a read/write lock), where its owner is the same owner in every lock it holds or waits in: an etcd lease (a
 * Go Session's, shared by its Mutexes), a ZooKeeper session, a Redisson `<uuid>:<thread>`, a PostgreSQL backend pid, a
 * MySQL connection id. Left out:
 * - single-key locks (isSingleKey): a Redis token lock, whose owner is a random token of that one lock, and a
 *   lock-table row, whose holder is a column's free text (a host name). Neither has waiters, so no wait ends there;
 *   joining their holders in would tie owners by two texts that happen to match;
 * - an owner '' (a persistent ZooKeeper node, an etcd key without a lease, a row without a holder): nobody;
 * - a wait on oneself (two threads of one ZooKeeper session or Go Session in one lock): the process's own queue.
 * A wait the store does not show (a Redisson lock that is not fair has no visible queue) is an edge missing: a cycle
 * can be missed, never made up. A waiter on a read/write lock waits for the holders it conflicts with: a reader for
 * the writers, a writer for all. A waiter on a semaphore waits for whichever holder gives a permit back first, not for
 * each: an edge to each holder would make a cycle of one holder's waits while the others may still release. It waits
 * for its holders only when no permit is free and they are all one owner (a MultiSemaphore holder, a limit of one),
 * else it has no edge. An owner is what the store names, which threads of one process may share (a Go
 * Session, a ZooKeeper session); a cycle then says that each owner waits for what another holds.
 */
import { identityOf } from '../holdObservation';
import { displayKey } from '../keys';
import { compareText } from '../../shared/compareText';
import { byId, holderCount, isSemaphore, isSingleKey, type ChangeSet, type LockMember, type LockState } from '../lockState';
import { cycleOf, type Cycle, type LockRef, type MemberRef, type WaitBegun, type WaitEdge } from './cycle';
import { cyclesThrough, MAX_CYCLES, type Adjacency, type Edge } from './cycleSearch';
import { OwnerHolds } from './ownerHolds';

interface Entry {
  readonly ref: LockRef;
  /** Its owners, each once. */
  readonly owners: readonly string[];
  /** Their holds' nodes in `holds`, set when indexed; one that alone holds it without waits is moved in place (see `moved`). */
  nodes: readonly number[];
  /** Its waiters by identity (holdObservation's identityOf), each once. */
  readonly waits: ReadonlyMap<string, Waiting>;
  readonly edges: readonly Wait[];
}

interface Waiting {
  readonly owner: string;
  /** Its waits, one per holder it waits for. */
  readonly edges: Wait[];
}

/**
 * A WaitEdge as the graph keeps it: one object while the same wait lasts (its figures brought up to date when its lock
 * changes), so that a lock's change touches the graph's indexes only for the waits that begin or end. Its members are
 * kept as read: their display text (a UTF-8 check and a decode each) and its id (a JSON text) are made only for the few
 * waits found in a cycle (`shown`), not for every wait at every change.
 */
interface Wait extends Edge {
  readonly lock: LockRef;
  readonly waiterIdentity: string;
  readonly holderIdentity: string;
  waiter: LockMember;
  holder: LockMember;
  ahead: number;
  next: string;
  holders: number;
  /** In the graph's indexes (false: ended, or not indexed yet). */
  linked: boolean;
  /** The reindex that last found it in its lock (see `reindex`). */
  seen: number;
  shown: WaitEdge | undefined;
}

/** A cycle found, and its waits: it is kept while they all last. */
interface Found {
  readonly cycle: Cycle;
  readonly waits: readonly Wait[];
}

export class WaitForGraph {
  private readonly entries = new Map<string, Entry>();
  private readonly out: Adjacency<Wait> = new Map();
  private readonly into: Adjacency<Wait> = new Map();
  /** The locks each owner holds (among locks that take part). */
  private readonly holds = new OwnerHolds();
  private readonly found = new Map<string, Found>();
  private incomplete = false;
  private reindexed = 0;

  /** Folds in one change set (or a listing's locks, as `changed`); returns the waits it shows beginning. */
  apply(changes: Pick<ChangeSet, 'changed' | 'removed'>): WaitBegun[] {
    const added: Wait[] = [];
    const begun: { owner: string; lock: LockRef }[] = [];
    let rewaited = false;
    for (const id of changes.removed) {
      const before = this.entries.get(id);
      if (!before) continue;
      this.entries.delete(id);
      rewaited = this.reindex(before, undefined, added) || rewaited;
    }
    for (const lock of changes.changed) {
      const before = this.entries.get(lock.id);
      if (before && this.moved(before, lock)) continue;
      const entry = entryOf(lock, before);
      if (entry) this.entries.set(lock.id, entry);
      else if (before) this.entries.delete(lock.id);
      rewaited = this.reindex(before, entry, added) || rewaited;
      entry?.waits.forEach(({ owner }, identity) => {
        if (!before?.waits.has(identity)) begun.push({ owner, lock: entry.ref });
      });
    }
    if (this.incomplete) {
      this.rebuild();
    } else {
      if (rewaited) this.recheck();
      for (const e of added) this.search(e);
    }
    // A lock's ref is one object while it takes part: that is the lock, its id not read.
    return begun.map(({ owner, lock }) => ({ owner, lock, holding: this.holds.held(owner, lock) }));
  }

  /** A whole read: the locks not in it are gone. */
  replace(locks: readonly LockState[]): WaitBegun[] {
    const ids = new Set(locks.map((l) => l.id));
    return this.apply({ changed: locks, removed: [...this.entries.keys()].filter((id) => !ids.has(id)) });
  }

  /** The cycles now, by id. */
  cycles(): Cycle[] {
    return [...this.found.values()].map((f) => f.cycle).sort(byId);
  }

  /** The locks `owner` holds, by name. */
  holding(owner: string): LockRef[] {
    return this.holds.held(owner).sort((a, b) => compareText(a.name, b.name));
  }

  /** A search gave up at its bounds (MAX_CYCLES, or a graph too tangled to walk): there may be more cycles. */
  get truncated(): boolean {
    return this.incomplete;
  }

  get size(): { readonly locks: number; readonly owners: number; readonly edges: number } {
    let edges = 0;
    for (const m of this.out.values()) edges += m.size;
    return { locks: this.entries.size, owners: new Set([...this.holds.owners(), ...this.out.keys()]).size, edges };
  }

  /** Forgets everything: a new watch of the connection begins. */
  clear(): void {
    [this.entries, this.out, this.into, this.holds, this.found].forEach((m) => m.clear());
    this.incomplete = false;
  }

  /**
   * Indexes a lock as it is now instead of as it was (what its owners hold, its waits), touching only what changed;
   * new waits go to `added`. True when it had waits: the cycles through them are to be checked again.
   */
  private reindex(before: Entry | undefined, entry: Entry | undefined, added: Wait[]): boolean {
    this.rehold(before, entry);
    const was = before?.edges ?? NO_EDGES;
    const is = entry?.edges ?? NO_EDGES;
    // The waits that last are the same objects in both (see entryOf): marked, they are told from those that end.
    const now = ++this.reindexed;
    for (const e of is) e.seen = now;
    for (const e of was) {
      if (e.seen === now) continue;
      e.linked = false;
      unlink(this.out, e.from, e);
      unlink(this.into, e.to, e);
    }
    for (const e of is) {
      if (e.linked) continue;
      e.linked = true;
      link(this.out, e.from, e);
      link(this.into, e.to, e);
      added.push(e);
    }
    return was.length > 0;
  }

  /** Ends the holds of the owners that no longer hold the lock, and begins those of the owners that newly do. */
  private rehold(before: Entry | undefined, entry: Entry | undefined): void {
    const kept: number[] = [];
    for (const node of before?.nodes ?? NO_NODES) {
      if (entry?.owners.includes(this.holds.owner(node))) kept.push(node);
      else this.holds.remove(node);
    }
    if (!entry) return;
    entry.nodes = entry.owners.map((owner) => kept.find((node) => this.holds.owner(node) === owner) ?? this.holds.add(owner, entry.ref));
  }

  /**
   * Most changes are a lock held alone and without waits, before as now: the same hold (a renewal, a new revision:
   * nothing to do) or another owner's. Then only the owners' holds change, and its entry is kept, not made anew. False
   * for any other change.
   */
  private moved(before: Entry, lock: LockState): boolean {
    if (!heldAloneNoWaits(before, lock)) return false;
    const [node] = before.nodes;
    if (this.holds.owner(node) !== lock.holder.owner) this.holds.move(node, lock.holder.owner);
    return true;
  }

  /** Keeps the cycles whose every wait is still there (with their figures as they are now). */
  private recheck(): void {
    for (const [id, { waits }] of this.found) {
      if (waits.every((e) => e.linked)) this.found.set(id, { cycle: cycleOf(waits.map(shown)), waits });
      else this.found.delete(id);
    }
  }

  /** After a search gave up, every cycle is looked for again at each change, until all are found. */
  private rebuild(): void {
    this.found.clear();
    this.incomplete = false;
    for (const edges of this.out.values()) for (const e of edges) this.search(e);
  }

  private search(edge: Wait): void {
    if (!edge.linked) return;
    const { cycles, complete } = cyclesThrough(edge, this.out, this.into, MAX_CYCLES - this.found.size);
    this.incomplete ||= !complete;
    for (const waits of cycles) {
      const cycle = cycleOf(waits.map(shown));
      this.found.set(cycle.id, { cycle, waits });
    }
  }
}

/**
 * What a lock brings to the graph; undefined when it takes no part (see the comment at the top). A wait that `before`
 * (the lock as last indexed) had too is its object, with the figures of now.
 */
function entryOf(lock: LockState, before: Entry | undefined): Entry | undefined {
  if (isSingleKey(lock)) return undefined;
  const holders = holdersOf(lock);
  const queued = lock.waiters.length > 0 && lock.waiters.some(takesPart);
  if (holders.length === 0 && !queued) return undefined;
  // A lock's id is its name's: the name is made once, and not at each of its changes.
  const ref = before?.ref ?? { id: lock.id, name: displayKey(lock.name) };
  const owners = holders.length === 1 ? [holders[0].owner] : [...new Set(holders.map((h) => h.owner))];
  if (!queued) return { ref, owners, nodes: NO_NODES, waits: NO_WAITS, edges: NO_EDGES };
  // Each member's identity is made once, however many edges it is in.
  const held = (isSemaphore(lock) ? semaphoreBlockers(lock, holders) : holders).map((h) => ({ member: h, identity: identityOf(h) }));
  const waits = new Map<string, Waiting>();
  const edges: Wait[] = [];
  const next = lock.waiters[0].owner;
  lock.waiters.forEach((w, ahead) => {
    if (!takesPart(w)) return;
    const identity = identityOf(w);
    let waiting = waits.get(identity);
    if (!waiting) waits.set(identity, (waiting = { owner: w.owner, edges: [] }));
    const had = before?.waits.get(identity)?.edges;
    for (const h of held) {
      if (h.member.owner === w.owner || !conflicts(w, h.member)) continue;
      // A member listed twice is one wait, with the figures of its last place.
      const listed = waitFor(waiting.edges, h.identity);
      const e = listed ?? waitFor(had, h.identity) ?? newWait(ref, w, identity, h.member, h.identity);
      e.waiter = w;
      e.holder = h.member;
      e.ahead = ahead;
      e.next = next;
      e.holders = holders.length;
      e.shown = undefined;
      if (listed) continue;
      waiting.edges.push(e);
      edges.push(e);
    }
  });
  return { ref, owners, nodes: NO_NODES, waits, edges };
}

/** Of a waiter's waits, the one for the holder of `identity`. */
function waitFor(edges: readonly Wait[] | undefined, identity: string): Wait | undefined {
  if (edges) for (const e of edges) if (e.holderIdentity === identity) return e;
  return undefined;
}

function newWait(lock: LockRef, waiter: LockMember, waiterIdentity: string, holder: LockMember, holderIdentity: string): Wait {
  return { from: waiter.owner, to: holder.owner, lock, waiterIdentity, holderIdentity, waiter, holder, ahead: 0, next: '', holders: 0, linked: false, seen: 0, shown: undefined };
}

/** The holders a semaphore's waiter certainly waits for (see the comment at the top). */
function semaphoreBlockers(lock: LockState, holders: readonly LockMember[]): readonly LockMember[] {
  const permits = lock.permits;
  const free = permits?.free ?? (permits?.limit != null ? permits.limit - holderCount(lock) : 0);
  if (free > 0 || holders.length === 0) return NO_MEMBERS;
  return holders.every((h) => h.owner === holders[0].owner) ? holders : NO_MEMBERS;
}

/** The lock is held by one owner alone and nobody takes part in waiting, before as now. */
function heldAloneNoWaits(before: Entry, lock: LockState): lock is LockState & { holder: LockMember } {
  return before.waits.size === 0 && before.nodes.length === 1 && lock.holder !== null && takesPart(lock.holder) && !lock.sharedWith?.length && !lock.waiters.some(takesPart) && !isSingleKey(lock);
}

/** The holders that take part (most locks have one holder and none shared: no array is spread for them). */
function holdersOf(lock: LockState): readonly LockMember[] {
  const holder = lock.holder;
  if (!holder) return NO_MEMBERS;
  if (!lock.sharedWith?.length) return takesPart(holder) ? [holder] : NO_MEMBERS;
  return [holder, ...lock.sharedWith].filter(takesPart);
}

const NO_MEMBERS: readonly LockMember[] = [];
const NO_NODES: readonly number[] = [];
const NO_EDGES: readonly Wait[] = [];
const NO_WAITS: ReadonlyMap<string, Waiting> = new Map();

function takesPart(m: LockMember): boolean {
  return m.owner !== '';
}

/** A reader waits for writers; a writer (or a member of a lock without modes) for every holder. */
function conflicts(waiter: LockMember, holder: LockMember): boolean {
  return waiter.mode !== 'read' || holder.mode === 'write';
}

function memberRef(m: LockMember): MemberRef {
  return { key: displayKey(m.key), owner: m.owner, token: m.token };
}

function shown(w: Wait): WaitEdge {
  if (w.shown) return w.shown;
  const { from, to, lock, waiter, holder, ahead, next, holders } = w;
  const id = JSON.stringify([lock.id, w.waiterIdentity, w.holderIdentity]);
  return (w.shown = { id, from, to, lock, waiter: memberRef(waiter), holder: memberRef(holder), ahead, next, holders });
}

function link<V>(sets: Map<string, Set<V>>, key: string, value: V): void {
  const set = sets.get(key);
  if (set) set.add(value);
  else sets.set(key, new Set([value]));
}

function unlink<V>(sets: Map<string, Set<V>>, key: string, value: V): void {
  const set = sets.get(key);
  set?.delete(value);
  if (set?.size === 0) sets.delete(key);
}

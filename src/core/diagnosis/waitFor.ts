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
import { holderCount, isSemaphore, isSingleKey, type ChangeSet, type LockMember, type LockState } from '../lockState';
import { cycleOf, type Cycle, type LockRef, type MemberRef, type WaitBegun, type WaitEdge } from './cycle';
import { cyclesThrough, MAX_CYCLES, type Adjacency, type Edge } from './cycleSearch';
import { OwnerHolds } from './ownerHolds';

interface Entry {
  readonly ref: LockRef;
  /** Its owners, each once. */
  readonly owners: readonly string[];
  /** Their holds' nodes in `holds`, set when indexed; one that alone holds it without waits is moved in place (see `moved`). */
  nodes: readonly number[];
  /** The waiters' identities (holdObservation's identityOf) and owners. */
  readonly waits: ReadonlyMap<string, string>;
  readonly edges: readonly Wait[];
}

/**
 * A WaitEdge as the graph keeps it: with its members as read. Their display text (a UTF-8 check and a decode each) is
 * made only for the few waits found in a cycle, once per wait (`shown`), not for every wait at every change.
 */
interface Wait extends Edge, Omit<WaitEdge, 'waiter' | 'holder'> {
  readonly waiter: LockMember;
  readonly holder: LockMember;
  shown?: WaitEdge;
}

export class WaitForGraph {
  private readonly entries = new Map<string, Entry>();
  private readonly out: Adjacency<Wait> = new Map();
  private readonly into: Adjacency<Wait> = new Map();
  /** The locks each owner holds (among locks that take part). */
  private readonly holds = new OwnerHolds();
  private readonly found = new Map<string, Cycle>();
  private incomplete = false;

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
      const entry = entryOf(lock, before?.ref);
      if (entry) this.entries.set(lock.id, entry);
      else if (before) this.entries.delete(lock.id);
      rewaited = this.reindex(before, entry, added) || rewaited;
      entry?.waits.forEach((owner, identity) => {
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
    return [...this.found.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The locks `owner` holds, by name. */
  holding(owner: string): LockRef[] {
    return this.holds.held(owner).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
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
    // One side's ids are gathered only for the other side's edges to be looked up in (most changes have none on one side).
    const had = is.length ? idsOf(was) : NO_IDS;
    const has = was.length ? idsOf(is) : NO_IDS;
    for (const e of was) {
      if (has.has(e.id)) continue;
      unlink(this.out, e.from, e.id);
      unlink(this.into, e.to, e.id);
    }
    for (const e of is) {
      mapOf(this.out, e.from).set(e.id, e);
      mapOf(this.into, e.to).set(e.id, e);
      if (!had.has(e.id)) added.push(e);
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
    for (const [id, cycle] of this.found) {
      const now = cycle.edges.map((e) => this.out.get(e.from)?.get(e.id));
      if (now.every((e): e is Wait => e !== undefined)) this.found.set(id, cycleOf(now.map(shown)));
      else this.found.delete(id);
    }
  }

  /** After a search gave up, every cycle is looked for again at each change, until all are found. */
  private rebuild(): void {
    this.found.clear();
    this.incomplete = false;
    for (const edges of this.out.values()) for (const e of edges.values()) this.search(e);
  }

  private search(edge: Wait): void {
    if (!this.out.get(edge.from)?.has(edge.id)) return;
    const { cycles, complete } = cyclesThrough(edge, this.out, this.into, MAX_CYCLES - this.found.size);
    this.incomplete ||= !complete;
    for (const edges of cycles) {
      const cycle = cycleOf(edges.map(shown));
      this.found.set(cycle.id, cycle);
    }
  }
}

/** What a lock brings to the graph; undefined when it takes no part (see the comment at the top). `known`: its ref before. */
function entryOf(lock: LockState, known: LockRef | undefined): Entry | undefined {
  if (isSingleKey(lock)) return undefined;
  const holders = holdersOf(lock);
  const queued = lock.waiters.length > 0 && lock.waiters.some(takesPart);
  if (holders.length === 0 && !queued) return undefined;
  // A lock's id is its name's: the name is made once, and not at each of its changes.
  const ref = known ?? { id: lock.id, name: displayKey(lock.name) };
  const owners = holders.length === 1 ? [holders[0].owner] : [...new Set(holders.map((h) => h.owner))];
  if (!queued) return { ref, owners, nodes: NO_NODES, waits: NO_WAITS, edges: NO_EDGES };
  // Each member's identity is made once, however many edges it is in.
  const held = (isSemaphore(lock) ? semaphoreBlockers(lock, holders) : holders).map((h) => ({ member: h, identity: identityOf(h) }));
  const waits = new Map<string, string>();
  const edges: Wait[] = [];
  const next = lock.waiters[0].owner;
  lock.waiters.forEach((w, ahead) => {
    if (!takesPart(w)) return;
    const identity = identityOf(w);
    waits.set(identity, w.owner);
    for (const h of held) {
      if (h.member.owner === w.owner || !conflicts(w, h.member)) continue;
      const id = JSON.stringify([lock.id, identity, h.identity]);
      edges.push({ id, from: w.owner, to: h.member.owner, lock: ref, waiter: w, holder: h.member, ahead, next, holders: holders.length });
    }
  });
  return { ref, owners, nodes: NO_NODES, waits, edges };
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
const NO_WAITS: ReadonlyMap<string, string> = new Map();

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
  const { id, from, to, lock, waiter, holder, ahead, next, holders } = w;
  return (w.shown ??= { id, from, to, lock, waiter: memberRef(waiter), holder: memberRef(holder), ahead, next, holders });
}

const NO_IDS: ReadonlySet<string> = new Set();

/** The edges' ids (most locks have no waiters: no set is made for them). */
function idsOf(edges: readonly Wait[]): ReadonlySet<string> {
  return edges.length ? new Set(edges.map((e) => e.id)) : NO_IDS;
}

function mapOf<V>(maps: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let m = maps.get(key);
  if (!m) maps.set(key, (m = new Map()));
  return m;
}

function unlink<V>(maps: Map<string, Map<string, V>>, key: string, id: string): void {
  const m = maps.get(key);
  m?.delete(id);
  if (m?.size === 0) maps.delete(key);
}

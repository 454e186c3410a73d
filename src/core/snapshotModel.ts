/**
 * For stores that are read whole (a poll) or key by key rather than watched as a stream of changes: keeps the last
 * state of every lock and turns each new read into a ChangeSet of only the locks that really changed, so a view
 * repaints what moved, as it does for etcd's watch, and a quiet poll emits nothing. Pure: no store, no timers.
 */
import { byName, type ChangeSet, type LockState } from './lockState';

/** What a read changes, found before the model takes it (see `compareAll`). */
export interface SnapshotDiff {
  /** The locks read that differ from the model's (or are new). */
  readonly changed: readonly LockState[];
  /** The ids of the locks the read no longer found. */
  readonly removed: readonly string[];
}

export class SnapshotModel {
  private readonly byId = new Map<string, LockState>();
  private revision = 0;
  /** `locks()` as last sorted; dropped when a lock changes. Views and every read ask for it, a quiet poll changes nothing. */
  private sorted: LockState[] | undefined;

  /** Every lock, in the order of their names' bytes. */
  locks(): LockState[] {
    this.sorted ??= [...this.byId.values()].sort(byName);
    return [...this.sorted];
  }

  /** Every lock, in no order: for a pass that needs none (a sort of every name after each change costs). */
  unordered(): IterableIterator<LockState> {
    return this.byId.values();
  }

  lock(id: string): LockState | undefined {
    return this.byId.get(id);
  }

  get size(): number {
    return this.byId.size;
  }

  /** A full read: whatever is not in `locks` is gone. Undefined when nothing changed. */
  replaceAll(locks: readonly LockState[], resynced = true): ChangeSet | undefined {
    return this.commit(this.compareAll(locks), resynced);
  }

  /**
   * What `replaceAll(locks)` would change, the model left as it is: for a caller that must look at what a read changes
   * (`replaced`) before the change is told. Hand it to `commit` with no other change to the model in between.
   */
  compareAll(locks: readonly LockState[]): SnapshotDiff {
    return this.compare(new Set(this.byId.keys()), locks);
  }

  /** The model's states of the locks `diff` replaces or removes. */
  replaced(diff: SnapshotDiff): LockState[] {
    const states: LockState[] = [];
    for (const lock of diff.changed) this.addState(states, lock.id);
    for (const id of diff.removed) this.addState(states, id);
    return states;
  }

  /**
   * A partial read: `readIds` are the locks that were read again (a notification touched them); those missing from
   * `locks` are gone, the others are untouched.
   */
  replaceSome(readIds: Iterable<string>, locks: readonly LockState[]): ChangeSet | undefined {
    return this.commit(this.compare(new Set(readIds), locks), false);
  }

  /** Forgets everything, e.g. when the watch stops (without emitting). */
  clear(): void {
    this.byId.clear();
    this.sorted = undefined;
  }

  private addState(states: LockState[], id: string): void {
    const state = this.byId.get(id);
    if (state) states.push(state);
  }

  // Loops, not callbacks made per read: see byName (lockState.ts) on what V8 does with those at every poll.
  private compare(covered: Set<string>, locks: readonly LockState[]): SnapshotDiff {
    const changed: LockState[] = [];
    const seen = new Set<string>();
    // A lock read twice is compared the second time with its first state read.
    const taken = new Map<string, LockState>();
    for (const lock of locks) {
      seen.add(lock.id);
      const before = taken.get(lock.id) ?? this.byId.get(lock.id);
      if (before && sameLock(before, lock)) continue;
      taken.set(lock.id, lock);
      changed.push(lock);
    }
    const removed: string[] = [];
    for (const id of covered) if (!seen.has(id) && this.byId.has(id)) removed.push(id);
    return { changed, removed };
  }

  /** Takes a read's changes, found by `compareAll` (or within replaceAll and replaceSome). Undefined when none. */
  commit({ changed, removed }: SnapshotDiff, resynced: boolean): ChangeSet | undefined {
    if (changed.length === 0 && removed.length === 0) return undefined;
    for (const lock of changed) this.byId.set(lock.id, lock);
    for (const id of removed) this.byId.delete(id);
    this.sorted = undefined;
    return { revision: ++this.revision, changed: [...changed].sort(byName), removed: [...removed], resynced };
  }
}

/** Merges change sets emitted close together into one: each lock once, in its latest state. */
export function mergeChangeSets(sets: readonly ChangeSet[]): ChangeSet | undefined {
  if (sets.length === 0) return undefined;
  const changed = new Map<string, LockState>();
  const removed = new Set<string>();
  for (const set of sets) {
    for (const lock of set.changed) {
      changed.set(lock.id, lock);
      removed.delete(lock.id);
    }
    for (const id of set.removed) {
      changed.delete(id);
      removed.add(id);
    }
  }
  return {
    revision: sets[sets.length - 1].revision,
    changed: [...changed.values()].sort(byName),
    removed: [...removed],
    resynced: sets.some((s) => s.resynced),
  };
}

/**
 * Hands a watch's change sets to its views at most once per `intervalMs` (a quiet store's change at once): change sets
 * that come sooner are merged into the next one, each lock once, in its latest state.
 */
export class ChangeSetCoalescer {
  private pending: ChangeSet[] = [];
  private lastEmit = 0;
  private timer: NodeJS.Timeout | undefined;
  private disposed = false;

  constructor(
    private readonly fire: (set: ChangeSet) => void,
    private readonly intervalMs: number,
  ) {}

  push(set: ChangeSet | undefined): void {
    if (!set || this.disposed) return;
    this.pending.push(set);
    const wait = this.lastEmit + this.intervalMs - Date.now();
    if (wait <= 0) return this.flush();
    this.timer ??= setTimeout(() => this.flush(), wait);
  }

  /** Emits what is pending now (a caller that must see the model and its views agree, e.g. `sync`). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const merged = mergeChangeSets(this.pending.splice(0));
    if (!merged || this.disposed) return;
    this.lastEmit = Date.now();
    this.fire(merged);
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
    this.pending = [];
  }
}

/**
 * Equal for two states a view would show identically: every field of the lock and of its members, those stores add
 * later too, compared in place. A SQL poll compares every lock it reads; building a JSON fingerprint of each was most
 * of what serve cost with nothing happening (docs/BENCHMARKS.md, serve).
 */
export function sameLock(a: LockState, b: LockState): boolean {
  return a.kind === b.kind && a.altName === b.altName && a.name.equals(b.name) && same(a.holder, b.holder) && same(a.sharedWith, b.sharedWith) && same(a.waiters, b.waiters) && same(a.permits, b.permits);
}

function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Buffer.isBuffer(a) || Buffer.isBuffer(b)) return Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b);
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let fields = 0;
  for (const k in x) {
    if (!(k in y) || !same(x[k], y[k])) return false;
    fields++;
  }
  for (const _ in y) fields--;
  return fields === 0;
}

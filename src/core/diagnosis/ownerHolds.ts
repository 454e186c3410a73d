/**
 * What each owner holds, for the wait-for graph (waitFor.ts): read only when an owner's wait begins, but kept at every
 * change, most of which move one lock from one owner to another (10,000 locks, 5,000 owners, 200 changes a second).
 * An owner has a number while it holds something, and each hold is a node of its owner's list, linked through arrays
 * of small integers: a move relinks one node (a few writes in arrays that stay in cache) and looks up only the new
 * owner, where a set of refs per owner in a map took two lookups and two set updates in memory spread over the heap.
 * The nodes of an owner stay in the order its holds were taken.
 */
import type { LockRef } from './cycle';

const NONE = -1;

export class OwnerHolds {
  private readonly numbers = new Map<string, number>();
  /** By owner number: its name, its first and last node (NONE: the number is free, in `spareOwners`). */
  private readonly names: string[] = [];
  private readonly first: number[] = [];
  private readonly last: number[] = [];
  private readonly spareOwners: number[] = [];
  /** By node: its lock, its owner's number, the owner's next and previous nodes. */
  private readonly refs: (LockRef | null)[] = [];
  private readonly ownerOf: number[] = [];
  private readonly next: number[] = [];
  private readonly prev: number[] = [];
  private readonly spareNodes: number[] = [];

  /** `owner` holds `ref` now; returns the hold's node. */
  add(owner: string, ref: LockRef): number {
    const node = this.spareNodes.pop() ?? this.newNode();
    this.refs[node] = ref;
    this.link(node, this.numberOf(owner));
    return node;
  }

  /** The hold ended. */
  remove(node: number): void {
    this.unlink(node);
    this.refs[node] = null;
    this.spareNodes.push(node);
  }

  /** The same lock, held by another owner now. */
  move(node: number, owner: string): void {
    this.unlink(node);
    this.link(node, this.numberOf(owner));
  }

  owner(node: number): string {
    return this.names[this.ownerOf[node]];
  }

  /** The locks `owner` holds, in the order it took them, but `except`. */
  held(owner: string, except?: LockRef): LockRef[] {
    const refs: LockRef[] = [];
    const n = this.numbers.get(owner);
    if (n === undefined) return refs;
    for (let node = this.first[n]; node !== NONE; node = this.next[node]) if (this.refs[node] !== except) refs.push(this.refs[node]!);
    return refs;
  }

  /** The owners that hold something. */
  owners(): IterableIterator<string> {
    return this.numbers.keys();
  }

  clear(): void {
    this.numbers.clear();
    for (const a of [this.names, this.first, this.last, this.spareOwners, this.refs, this.ownerOf, this.next, this.prev, this.spareNodes]) a.length = 0;
  }

  private numberOf(owner: string): number {
    const known = this.numbers.get(owner);
    if (known !== undefined) return known;
    const n = this.spareOwners.pop() ?? this.names.push(owner) - 1;
    this.names[n] = owner;
    this.first[n] = this.last[n] = NONE;
    this.numbers.set(owner, n);
    return n;
  }

  private newNode(): number {
    this.ownerOf.push(NONE);
    this.next.push(NONE);
    this.prev.push(NONE);
    return this.refs.push(null) - 1;
  }

  /** Appends the node to owner `n`'s list. */
  private link(node: number, n: number): void {
    const tail = this.last[n];
    this.ownerOf[node] = n;
    this.prev[node] = tail;
    this.next[node] = NONE;
    if (tail === NONE) this.first[n] = node;
    else this.next[tail] = node;
    this.last[n] = node;
  }

  /** Takes the node out of its owner's list; an owner left holding nothing gives its number back. */
  private unlink(node: number): void {
    const n = this.ownerOf[node];
    const before = this.prev[node];
    const after = this.next[node];
    if (before === NONE) this.first[n] = after;
    else this.next[before] = after;
    if (after === NONE) this.last[n] = before;
    else this.prev[after] = before;
    if (this.first[n] !== NONE) return;
    this.numbers.delete(this.names[n]);
    this.spareOwners.push(n);
  }
}

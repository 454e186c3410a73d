/**
 * Lock-order inversions, as Linux's lockdep finds them inside one kernel: an owner that held A when it began waiting
 * for B took them in the order A, B; once the order B, A is seen too (by any owner), two owners can each hold one and
 * wait for the other, even if they have not yet. Fed the waits a WaitForGraph shows beginning, with what each owner
 * held then (so only owners that take part in the graph count: see waitFor.ts). Bounded: at most `maxPairs` ordered
 * pairs, the least recently seen forgotten first, and a pair not seen again within `forgetAfterMs` is forgotten.
 * Pure: `now` is passed in.
 */
import type { LockRef, WaitBegun } from './cycle';
import { byId } from '../lockState';

/** One sighting of an order: `owner` held `held` when it began waiting for `waitedFor`, at `at` (epoch ms). */
export interface OrderEvidence {
  readonly owner: string;
  readonly held: LockRef;
  readonly waitedFor: LockRef;
  readonly at: number;
}

/** Two locks taken in both orders: `first` held the lock of lesser id, `second` the other. */
export interface Inversion {
  readonly id: string;
  readonly locks: readonly [LockRef, LockRef];
  readonly first: OrderEvidence;
  readonly second: OrderEvidence;
}

export interface LockOrderOptions {
  readonly maxPairs?: number;
  readonly forgetAfterMs?: number;
}

export const DEFAULT_MAX_PAIRS = 10_000;
export const DEFAULT_FORGET_AFTER_MS = 60 * 60_000;

export class LockOrder {
  /** Ordered pair (held, waited for; orderKey) → its latest evidence. */
  private readonly pairs = new Map<string, OrderEvidence>();
  private readonly maxPairs: number;
  private readonly forgetAfterMs: number;
  private sweptAt = -Infinity;

  constructor(options: LockOrderOptions = {}) {
    this.maxPairs = options.maxPairs ?? DEFAULT_MAX_PAIRS;
    this.forgetAfterMs = options.forgetAfterMs ?? DEFAULT_FORGET_AFTER_MS;
  }

  /** Folds in waits that began; returns the inversions they complete (an order whose reverse was seen in the window). */
  observe(begun: readonly WaitBegun[], now: number): Inversion[] {
    const completed: Inversion[] = [];
    for (const { owner, lock, holding } of begun) {
      for (const held of holding) {
        const evidence = { owner, held, waitedFor: lock, at: now };
        this.pairs.set(orderKey(held.id, lock.id), evidence);
        const reverse = this.pairs.get(orderKey(lock.id, held.id));
        if (reverse && this.fresh(reverse, now)) completed.push(inversionOf(evidence, reverse));
      }
    }
    if (this.pairs.size > this.maxPairs || now - this.sweptAt > this.forgetAfterMs / 10) this.sweep(now);
    return completed;
  }

  /** Every inversion whose two orders were both seen within the window, by id. */
  inversions(now: number): Inversion[] {
    this.sweep(now);
    const out: Inversion[] = [];
    for (const evidence of this.pairs.values()) {
      if (evidence.held.id > evidence.waitedFor.id) continue;
      const reverse = this.pairs.get(orderKey(evidence.waitedFor.id, evidence.held.id));
      if (reverse) out.push(inversionOf(evidence, reverse));
    }
    return out.sort(byId);
  }

  /** Ordered pairs kept. */
  get size(): number {
    return this.pairs.size;
  }

  clear(): void {
    this.pairs.clear();
  }

  private fresh(evidence: OrderEvidence, now: number): boolean {
    return now - evidence.at <= this.forgetAfterMs;
  }

  /**
   * Forgets the orders not seen within the window and, beyond maxPairs, the least recently seen down to three quarters
   * of it: a sweep is a sort, done once per many sightings rather than one eviction at each.
   */
  private sweep(now: number): void {
    this.sweptAt = now;
    for (const [key, evidence] of this.pairs) if (!this.fresh(evidence, now)) this.pairs.delete(key);
    if (this.pairs.size <= this.maxPairs) return;
    const oldest = [...this.pairs].sort(([, a], [, b]) => a.at - b.at);
    const keep = this.maxPairs - Math.max(1, Math.floor(this.maxPairs / 4));
    for (const [key] of oldest.slice(0, oldest.length - keep)) this.pairs.delete(key);
  }
}

/**
 * An ordered pair's key among the pairs kept: the first id's length makes it one pair's only, and it is cheaper to
 * make, hash and keep than the JSON of the two (about 10,000 kept, a few made at each wait that begins).
 */
function orderKey(held: string, waitedFor: string): string {
  return held.length + ':' + held + waitedFor;
}

/** An inversion's id: its two locks' ids, the lesser first. */
function pairKey(held: string, waitedFor: string): string {
  return JSON.stringify([held, waitedFor]);
}

function inversionOf(a: OrderEvidence, b: OrderEvidence): Inversion {
  const [first, second] = a.held.id < b.held.id ? [a, b] : [b, a];
  return { id: pairKey(first.held.id, second.held.id), locks: [first.held, second.held], first, second };
}

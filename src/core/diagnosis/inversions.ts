/**
 * Lock-order inversions, as Linux's lockdep finds them inside one kernel: an owner that held A when it began waiting
 * for B took them in the order A, B; once the order B, A is seen too (by any owner), two owners can each hold one and
 * wait for the other, even if they have not yet. Fed the waits a WaitForGraph shows beginning, with what each owner
 * held then (so only owners that take part in the graph count: see waitFor.ts). Bounded: at most `maxPairs` ordered
 * pairs, the least recently seen forgotten first, and a pair not seen again within `forgetAfterMs` is forgotten.
 * Pure: `now` is passed in.
 */
import type { LockRef, WaitBegun } from './cycle';

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

/** An order's latest evidence, and when the order was first kept (eviction's tie-break: the first kept goes first). */
interface Kept {
  evidence: OrderEvidence;
  readonly seq: number;
}

export class LockOrder {
  /**
   * Held lock's id → waited-for lock's id → the order's latest evidence. By id and then id, not by a key made of the
   * two: the ids are the graph's LockRefs' own strings, so a sighting makes no text and hashes none anew.
   */
  private readonly pairs = new Map<string, Map<string, Kept>>();
  private count = 0;
  private seq = 0;
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
        this.keep(evidence);
        const reverse = this.get(lock.id, held.id);
        if (reverse && this.fresh(reverse, now)) completed.push(inversionOf(evidence, reverse));
      }
    }
    if (this.count > this.maxPairs || now - this.sweptAt > this.forgetAfterMs / 10) this.sweep(now);
    return completed;
  }

  /** Every inversion whose two orders were both seen within the window, by id. */
  inversions(now: number): Inversion[] {
    this.sweep(now);
    const out: Inversion[] = [];
    for (const [heldId, byWaited] of this.pairs) {
      for (const [waitedId, { evidence }] of byWaited) {
        if (heldId > waitedId) continue;
        const reverse = this.get(waitedId, heldId);
        if (reverse) out.push(inversionOf(evidence, reverse));
      }
    }
    return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Ordered pairs kept. */
  get size(): number {
    return this.count;
  }

  clear(): void {
    this.pairs.clear();
    this.count = 0;
  }

  private keep(evidence: OrderEvidence): void {
    let byWaited = this.pairs.get(evidence.held.id);
    if (!byWaited) this.pairs.set(evidence.held.id, (byWaited = new Map()));
    const kept = byWaited.get(evidence.waitedFor.id);
    if (kept) {
      kept.evidence = evidence;
    } else {
      byWaited.set(evidence.waitedFor.id, { evidence, seq: this.seq++ });
      this.count++;
    }
  }

  private get(heldId: string, waitedId: string): OrderEvidence | undefined {
    return this.pairs.get(heldId)?.get(waitedId)?.evidence;
  }

  private forget(heldId: string, waitedId: string): void {
    const byWaited = this.pairs.get(heldId);
    if (!byWaited?.delete(waitedId)) return;
    this.count--;
    if (byWaited.size === 0) this.pairs.delete(heldId);
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
    const all: Kept[] = [];
    for (const byWaited of this.pairs.values()) {
      for (const kept of byWaited.values()) {
        if (this.fresh(kept.evidence, now)) all.push(kept);
        else this.forget(kept.evidence.held.id, kept.evidence.waitedFor.id);
      }
    }
    if (this.count <= this.maxPairs) return;
    const oldest = all.sort((a, b) => a.evidence.at - b.evidence.at || a.seq - b.seq);
    const keep = this.maxPairs - Math.max(1, Math.floor(this.maxPairs / 4));
    for (const { evidence } of oldest.slice(0, oldest.length - keep)) this.forget(evidence.held.id, evidence.waitedFor.id);
  }
}

/** An inversion's id: its two locks' ids, the lesser first. */
function pairKey(held: string, waitedFor: string): string {
  return JSON.stringify([held, waitedFor]);
}

function inversionOf(a: OrderEvidence, b: OrderEvidence): Inversion {
  const [first, second] = a.held.id < b.held.id ? [a, b] : [b, a];
  return { id: pairKey(first.held.id, second.held.id), locks: [first.held, second.held], first, second };
}

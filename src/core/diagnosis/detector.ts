/**
 * A deadlock is reported only once it survives a re-read: a cycle in one read may be a stale view (a hold released a
 * moment before a wait began, read out of order). The caller reads twice with a sync or a fresh listing between (the
 * CLI lists twice; serve syncs its watch), and a cycle present in two successive reads, made of the same holds and
 * waits (Cycle.id), is confirmed: said once when it appears, once when it clears. Pure: `now` is passed in.
 */
import type { Cycle } from './cycle';

export interface ConfirmedCycle extends Cycle {
  /** When the read that first showed it was made (epoch ms). */
  readonly since: number;
}

export interface DeadlockReport {
  /** Every confirmed cycle now, by id. */
  readonly confirmed: readonly ConfirmedCycle[];
  /** Confirmed by this read. */
  readonly appeared: readonly ConfirmedCycle[];
  /** Confirmed before, and gone from this read. */
  readonly cleared: readonly ConfirmedCycle[];
}

export class DeadlockDetector {
  /** Cycles of the last read not yet confirmed, with when they were first seen. */
  private pending = new Map<string, number>();
  private held = new Map<string, ConfirmedCycle>();

  /** One read's cycles (WaitForGraph.cycles()), read after the previous read was synced or listed anew. */
  read(cycles: readonly Cycle[], now: number): DeadlockReport {
    const next = new Map<string, ConfirmedCycle>();
    const pending = new Map<string, number>();
    const appeared: ConfirmedCycle[] = [];
    for (const cycle of cycles) {
      const was = this.held.get(cycle.id);
      const since = was?.since ?? this.pending.get(cycle.id);
      if (since === undefined) {
        pending.set(cycle.id, now);
        continue;
      }
      const confirmed = { ...cycle, since };
      next.set(cycle.id, confirmed);
      if (!was) appeared.push(confirmed);
    }
    const cleared = [...this.held.values()].filter((c) => !next.has(c.id));
    this.held = next;
    this.pending = pending;
    return { confirmed: [...next.values()], appeared, cleared };
  }

  get confirmed(): readonly ConfirmedCycle[] {
    return [...this.held.values()];
  }

  /** A new watch of the connection begins: nothing read before is evidence, and nothing confirmed is said cleared. */
  reset(): void {
    this.pending.clear();
    this.held.clear();
  }
}

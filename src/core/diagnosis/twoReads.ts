/**
 * What two whole reads of a connection's locks, a moment apart, tell by themselves (the CLI's `diagnose`): the
 * deadlocks confirmed by the second read, the lock orders both ways among the waits seen, and the holds in place that
 * have run most of an unrenewed TTL. Holds measured against their TTL over time need a watch that lasts (VS Code's
 * statistics, `locklens serve`): two reads see no hold from start to end. Pure.
 */
import { displayKey } from '../keys';
import type { LeaseInfo } from '../leaseInfo';
import { holderCount, members, type LockState } from '../lockState';
import type { Cycle } from './cycle';
import { DeadlockDetector, type ConfirmedCycle } from './detector';
import { LockOrder, type Inversion } from './inversions';
import { runningHoldFit, type RunningHoldFit } from './ttlFit';
import { WaitForGraph } from './waitFor';

/** One whole read: its locks, the TTL samples read with them, and when (epoch ms). */
export interface Read {
  readonly locks: readonly LockState[];
  lease(id: string): LeaseInfo | undefined;
  readonly at: number;
}

export interface TwoReadsFindings {
  readonly deadlocks: readonly ConfirmedCycle[];
  /** Orders seen both ways that are not a deadlock's own (a deadlock is one too, and says more). */
  readonly inversions: readonly Inversion[];
  readonly ttlFits: readonly RunningHoldFit[];
  /** The wait-for graph gave up at its bounds: there may be more deadlocks than those found. */
  readonly truncated: boolean;
}

export function diagnoseTwoReads(first: Read, second: Read): TwoReadsFindings {
  const graph = new WaitForGraph();
  const detector = new DeadlockDetector();
  const order = new LockOrder();
  order.observe(graph.replace(first.locks), first.at);
  detector.read(graph.cycles(), first.at);
  order.observe(graph.replace(second.locks), second.at);
  const deadlocks = detector.read(graph.cycles(), second.at).confirmed;
  const inversions = order.inversions(second.at).filter((i) => !deadlocks.some((c) => inCycle(c, i.locks[0].id, i.locks[1].id)));
  return { deadlocks, inversions, ttlFits: runningFits(first, second), truncated: graph.truncated };
}

function inCycle(cycle: Cycle, a: string, b: string): boolean {
  const held = new Set(cycle.members.map((m) => m.holds.id));
  return held.has(a) && held.has(b);
}

function runningFits(first: Read, second: Read): RunningHoldFit[] {
  const fits: RunningHoldFit[] = [];
  for (const lock of second.locks) {
    const leases = new Set(members(lock).slice(0, holderCount(lock)).flatMap((m) => (m.lease ? [m.lease] : [])));
    for (const id of leases) {
      const fit = runningHoldFit({ id: lock.id, name: displayKey(lock.name) }, first.lease(id), second.lease(id), second.at);
      if (fit) fits.push(fit);
    }
  }
  return fits;
}

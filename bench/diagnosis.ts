import { DeadlockDetector } from '../src/core/diagnosis/detector';
import { LockOrder } from '../src/core/diagnosis/inversions';
import { WaitForGraph } from '../src/core/diagnosis/waitFor';
import type { LockState } from '../src/core/lockState';
import { mulberry32 } from '../test/harness/random';
import { lockOf } from '../test/harness/waitLocks';
import { percentile, round } from './stats';

/**
 * `diagnosis_graph`: the cost of the deadlock and lock-order diagnosis on one connection of 10,000 locks and 5,000
 * owners (issue 22), pure CPU (no store). Every lock has a holder; one in ten has one to three owners queued, owners
 * picked at random, so owners that wait also hold and the graph has chains and some cycles. 200 locks change a second
 * (a new holder, new waiters, a new hold of the same owner), delivered as one change set a second (a store polled
 * every second) and as ten of 20 (a watch coalescing every 100 ms). Measured per change set: WaitForGraph.apply and
 * LockOrder.observe (what serve and VS Code do on every change set); and per check: the detector's read of the cycles.
 * Figures are CPU time (the process's user and system time, GC included), not wall time: on a shared machine the
 * wall clock also counts the time other processes had the CPU.
 */
export function diagnosisGraph(locks = 10_000, owners = 5_000, changesPerSecond = 200, seconds = 120) {
  const random = mulberry32(22);
  const owner = () => `o${Math.floor(random() * owners)}`;
  let token = 0;
  const lockAt = (i: number): LockState => {
    const waiters = random() < 0.1 ? Array.from({ length: 1 + Math.floor(random() * 3) }, owner) : [];
    const holder = owner();
    const tokens: Record<string, number> = { [holder]: ++token };
    for (const w of waiters) tokens[w] = ++token;
    return lockOf(`/locks/job-${i}`, holder, waiters, { tokens });
  };
  const all = Array.from({ length: locks }, (_, i) => lockAt(i));
  const run = (setsPerSecond: number) => {
    const graph = new WaitForGraph();
    const order = new LockOrder();
    const detector = new DeadlockDetector();
    let now = 0;
    const load = process.cpuUsage();
    order.observe(graph.replace(all), now);
    const loadMs = cpuMs(load);
    const apply: number[] = [];
    const check: number[] = [];
    const perSet = changesPerSecond / setsPerSecond;
    // The change sets are made before any is timed: what is measured is the diagnosis, not the making of LockStates.
    const sets = Array.from({ length: seconds * setsPerSecond }, () => {
      const changed = new Map<number, LockState>();
      while (changed.size < perSet) {
        const i = Math.floor(random() * locks);
        changed.set(i, (all[i] = lockAt(i)));
      }
      return [...changed.values()];
    });
    // Made just now, the sets fill the young generation: collected here, and not in the first change sets timed.
    global.gc?.();
    sets.forEach((changed, s) => {
      now += 1000 / setsPerSecond;
      const t = process.cpuUsage();
      order.observe(graph.apply({ changed, removed: [] }), now);
      apply.push(cpuMs(t));
      if (s % (5 * setsPerSecond) === 0) {
        const c = process.cpuUsage();
        detector.read(graph.cycles(), now);
        check.push(cpuMs(c));
      }
    });
    const size = graph.size;
    return { loadMs, apply, check, size, cycles: graph.cycles().length, truncated: graph.truncated, pairs: order.size, inversions: order.inversions(now).length };
  };
  // A run not measured first, so that what is measured is the code V8 has compiled, as in a serve or an extension
  // host that has watched for a while: measured first in a fresh process, the sets of 200 timed the compiler (the
  // first 20 took 2–15 ms each, the p50 was 1.2–1.4 ms where the same sets after a run took 0.6 ms).
  run(10);
  const perSecond = run(1);
  const coalesced = run(10);
  return {
    locks,
    owners,
    edges: perSecond.size.edges,
    cycles: perSecond.cycles,
    truncated: Number(perSecond.truncated || coalesced.truncated),
    first_load_ms: round(perSecond.loadMs, 1),
    set_of_200_ms_p50: round(percentile(perSecond.apply, 50), 3),
    set_of_200_ms_p95: round(percentile(perSecond.apply, 95), 3),
    set_of_200_ms_p99: round(percentile(perSecond.apply, 99), 3),
    set_of_20_ms_p50: round(percentile(coalesced.apply, 50), 3),
    set_of_20_ms_p95: round(percentile(coalesced.apply, 95), 3),
    set_of_20_ms_p99: round(percentile(coalesced.apply, 99), 3),
    check_ms_p50: round(percentile(perSecond.check, 50), 3),
    order_pairs: perSecond.pairs,
    inversions: perSecond.inversions,
  };
}

/** CPU milliseconds this process used since `from` (process.cpuUsage). */
function cpuMs(from: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1000;
}

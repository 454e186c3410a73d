/**
 * serve's diagnosis of one connection (issue 22): the wait-for graph kept from every change set of its watch, the lock
 * orders the waits show, and the deadlock detector, which reads the graph after each sync of the watch so that a
 * cycle counts only once a second synced read shows it again. The gauges read it when scraped.
 */
import { DeadlockDetector, type DeadlockReport } from '../../core/diagnosis/detector';
import { LockOrder } from '../../core/diagnosis/inversions';
import { WaitForGraph } from '../../core/diagnosis/waitFor';
import type { ChangeSet } from '../../core/lockState';

/** How often the graph is read after a sync of the watch: a deadlock is confirmed within two of these. */
export const DIAGNOSE_INTERVAL_MS = 5000;

export class ConnectionDiagnosis {
  private readonly graph = new WaitForGraph();
  private readonly detector = new DeadlockDetector();
  private readonly order = new LockOrder();

  /** Every change set of the watch, in order. */
  observe(changes: ChangeSet, now: number): void {
    this.order.observe(this.graph.apply(changes), now);
  }

  /** A read of the graph, made right after the watch was synced with the store. */
  check(now: number): DeadlockReport {
    return this.detector.read(this.graph.cycles(), now);
  }

  /** A new watch begins: its first change set is the whole model again. Lock orders seen before still count. */
  restart(): void {
    this.graph.clear();
    this.detector.reset();
  }

  /** Confirmed deadlocks now. */
  get deadlocks(): number {
    return this.detector.confirmed.length;
  }

  /** Lock pairs seen taken in both orders within the window. */
  inversions(now: number): number {
    return this.order.inversions(now).length;
  }
}

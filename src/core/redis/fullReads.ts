/**
 * When a Redis watch reads everything again. A full read walks the server's whole keyspace (SCAN), which is load on
 * the user's Redis: polls are spaced by what the last read cost (see pollPacing.ts), and full reads asked for by
 * events keep the same spacing.
 */
import { PollPacer, type ReadCost } from './pollPacing';

/** Notifications can be missed (a reconnect, a buffer limit): with them on, a full read still runs this often. */
const SAFETY_RESYNC_MS = 30_000;

export class FullReads {
  readonly pacer: PollPacer;
  /** When the last full read ended, and how long it took (ms): the next one waits for the pacer's gap after it. */
  private lastEnd = 0;
  private lastMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerDone: (() => void) | undefined;
  private pending: Promise<void> | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    pollMs: number,
    /** Runs a task after the watch's reads before it (SnapshotLockWatch.enqueue). */
    private readonly enqueue: (task: () => Promise<void>) => Promise<void>,
    private readonly read: () => Promise<unknown>,
  ) {
    this.pacer = new PollPacer(pollMs);
  }

  /** A full read that started at `started` ended at `now`; true when what it cost changed the polling pace. */
  ended(started: number, now: number, cost: ReadCost | undefined): boolean {
    this.lastEnd = now;
    // What the nodes that answered spent (a redlock instance that timed out is not load to space polls by).
    this.lastMs = cost?.totalMs ?? now - started;
    return cost ? this.pacer.observe(cost) : false;
  }

  /**
   * A full read soon; calls made while one is waiting share it. Not sooner than the pacer's gap after the last one
   * (events, a cluster's notifications, ask for them too: a burst must not walk a big keyspace again and again).
   */
  request(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (!this.pending) {
      const wait = this.lastEnd + this.pacer.gapAfter(this.lastMs) - Date.now();
      const due =
        wait > 0
          ? new Promise<void>((resolve) => {
              this.timerDone = resolve;
              this.timer = setTimeout(resolve, wait);
            })
          : Promise.resolve();
      this.pending = due.then(() =>
        this.enqueue(async () => {
          this.pending = undefined;
          await this.read();
        }),
      );
      this.pending.catch(() => undefined);
    }
    return this.pending;
  }

  /** Polls until stopped; `followed`: notifications carry the changes now, so a poll is only a safety resync. */
  poll(followed: () => boolean): void {
    if (this.stopped) return;
    const ms = this.pollDelay(followed());
    this.pollTimer = setTimeout(() => void this.request().finally(() => this.poll(followed)), ms);
  }

  /** The wait before the next full read. */
  private pollDelay(followed: boolean): number {
    // Never sooner than the last read's cost allows, even when it walked for fair queues too.
    const gap = this.pacer.gapAfter(this.lastMs);
    if (followed) return Math.max(SAFETY_RESYNC_MS, gap);
    return Math.max(this.pacer.intervalMs, gap);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.pollTimer);
    clearTimeout(this.timer);
    this.timerDone?.();
  }
}

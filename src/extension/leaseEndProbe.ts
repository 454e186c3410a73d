import { holdEnd, type LeaseEnd } from '../core/history';
import type { ConnectionRegistry } from './connections';

/**
 * A key deleted while its lease had time left: released (the lease lives on) or gone with its lease (revoked, or its
 * session closed)? One TimeToLive call per lease answers it. The timeline and the lock records both ask, through one
 * probe, so a burst of ends costs each lease one question, at most MAX_PENDING at a time; an unanswerable question
 * (no store, store down) stays unanswered, and is not asked again for RETRY_MS.
 */
export class LeaseEndProbe {
  private readonly pending = new Map<string, LeaseEndListener[]>();
  /** When a question last failed (store down, no permission): not asked again before RETRY_MS. */
  private readonly failedAt = new Map<string, number>();

  constructor(private readonly registry: ConnectionRegistry) {}

  /** `answer` hears once how the lease's key ended; the same listener asking again for a pending lease is heard once. */
  ask(connection: string, lease: string, answer: LeaseEndListener): void {
    const id = `${connection}\0${lease}`;
    const waiting = this.pending.get(id);
    if (waiting) {
      if (!waiting.includes(answer)) waiting.push(answer);
      return;
    }
    const leases = this.registry.get(connection)?.backend?.leases;
    if (!leases || this.pending.size >= MAX_PENDING || Date.now() - (this.failedAt.get(id) ?? -Infinity) < RETRY_MS) return;
    const answers = [answer];
    this.pending.set(id, answers);
    leases
      .lives(lease)
      .then((lives) => {
        this.failedAt.delete(id);
        const end = holdEnd(lease, lives);
        if (end) for (const a of answers) a(end, connection, lease);
      })
      .catch(() => {
        this.failedAt.set(id, Date.now());
        // Bounded: the oldest failures are forgotten first (a Map keeps insertion order).
        if (this.failedAt.size > MAX_FAILED) this.failedAt.delete(this.failedAt.keys().next().value!);
      })
      .finally(() => this.pending.delete(id));
  }
}

export type LeaseEndListener = (end: LeaseEnd, connection: string, lease: string) => void;

/** Leases asked about at once. */
const MAX_PENDING = 16;
const RETRY_MS = 30_000;
const MAX_FAILED = 1000;

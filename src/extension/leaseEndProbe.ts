import { holdEnd, type LeaseEnd } from '../core/history';
import type { ConnectionRegistry } from './connections';

/**
 * A key deleted while its lease had time left: released (the lease lives on) or gone with its lease (revoked, or its
 * session closed)? One TimeToLive call per lease answers it. The timeline and the lock records both ask, through one
 * probe, so a burst of ends costs each lease one question, at most MAX_PENDING at a time; an unanswerable question
 * (no store, store down) stays unanswered.
 */
export class LeaseEndProbe {
  private readonly pending = new Map<string, LeaseEndListener[]>();

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
    if (!leases || this.pending.size >= MAX_PENDING) return;
    const answers = [answer];
    this.pending.set(id, answers);
    leases
      .describe(lease)
      .then((sample) => {
        const end = holdEnd(lease, sample.ttl >= 0);
        if (end) for (const a of answers) a(end, connection, lease);
      })
      .catch(() => undefined)
      .finally(() => this.pending.delete(id));
  }
}

export type LeaseEndListener = (end: LeaseEnd, connection: string, lease: string) => void;

/** Leases asked about at once. */
const MAX_PENDING = 16;

import { bulkhead } from 'cockatiel';
import { call, type EtcdConnection } from './connect';
import { Emitter } from '../emitter';
import { leaseDecimal } from '../keys';
import { observeLease, sampleDue, tellsNews, type LeaseInfo, type LeaseSample } from '../leaseInfo';

/** One `LeaseTimeToLive` call without the attached keys: whether the lease exists (a lease gone answers TTL -1). */
export async function leaseLives(conn: EtcdConnection, id: string): Promise<boolean> {
  const res = await call(conn.client.leaseClient.leaseTimeToLive({ ID: leaseDecimal(id), keys: false }));
  return Number(res.TTL) >= 0;
}

/** One `LeaseTimeToLive` call with the attached keys. An expired lease answers TTL -1, not an error. */
export async function sampleLease(conn: EtcdConnection, id: string): Promise<LeaseSample> {
  const res = await call(conn.client.leaseClient.leaseTimeToLive({ ID: leaseDecimal(id), keys: true }));
  const strip = conn.namespace.length;
  return {
    ttl: Number(res.TTL),
    grantedTtl: Number(res.grantedTTL),
    keys: res.keys.map((k) => (strip ? k.subarray(strip) : k)),
    at: Date.now(),
  };
}

export interface LeaseTrackerOptions {
  /** Concurrent TimeToLive calls at most. */
  readonly concurrency?: number;
  readonly stallFraction?: number;
  /** See WatchOptions.countdowns: false samples a lease only when due and tells only what is news. */
  readonly countdowns?: boolean;
}

/** TTLs of the leases the views show, sampled in sweeps with bounded concurrency. */
export class LeaseTracker {
  private readonly infos = new Map<string, LeaseInfo>();
  private readonly changes = new Emitter<readonly LeaseInfo[]>();
  readonly onDidChange = this.changes.event;
  private readonly limit: ReturnType<typeof bulkhead>;

  constructor(
    private readonly conn: EtcdConnection,
    private readonly options: LeaseTrackerOptions = {},
  ) {
    this.limit = bulkhead(options.concurrency ?? 32, Infinity);
  }

  get(id: string): LeaseInfo | undefined {
    return this.infos.get(id);
  }

  all(): LeaseInfo[] {
    return [...this.infos.values()];
  }

  /**
   * Samples every lease in `ids` (without countdowns, those due) and forgets the others. A lease that fails to sample
   * keeps its last info.
   */
  async sweep(ids: Iterable<string>): Promise<void> {
    const wanted = new Set(ids);
    for (const id of this.infos.keys()) if (!wanted.has(id)) this.infos.delete(id);
    const { stallFraction, countdowns = true } = this.options;
    const now = Date.now();
    const due = countdowns ? [...wanted] : [...wanted].filter((id) => sampleDue(this.infos.get(id), now, stallFraction));
    const updated: LeaseInfo[] = [];
    await Promise.all(
      due.map((id) =>
        this.limit
          .execute(() => sampleLease(this.conn, id))
          .then((sample) => {
            const previous = this.infos.get(id);
            const info = observeLease(previous, id, sample, stallFraction);
            this.infos.set(id, info);
            if (countdowns || tellsNews(previous, info)) updated.push(info);
          })
          .catch(() => undefined),
      ),
    );
    if (updated.length) this.changes.fire(updated);
  }

  dispose(): void {
    this.changes.dispose();
  }
}

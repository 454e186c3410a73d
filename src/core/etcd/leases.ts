import { bulkhead } from 'cockatiel';
import { call, type EtcdConnection } from './connect';
import { Emitter } from '../emitter';
import { leaseDecimal } from '../keys';
import { observeLease, type LeaseInfo, type LeaseSample } from '../leaseInfo';

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

  /** Samples every lease in `ids` and forgets the others. A lease that fails to sample keeps its last info. */
  async sweep(ids: Iterable<string>): Promise<void> {
    const wanted = new Set(ids);
    for (const id of this.infos.keys()) if (!wanted.has(id)) this.infos.delete(id);
    const updated: LeaseInfo[] = [];
    await Promise.all(
      [...wanted].map((id) =>
        this.limit
          .execute(() => sampleLease(this.conn, id))
          .then((sample) => {
            const info = observeLease(this.infos.get(id), id, sample, this.options.stallFraction);
            this.infos.set(id, info);
            updated.push(info);
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

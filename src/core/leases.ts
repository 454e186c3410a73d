import { bulkhead } from 'cockatiel';
import { call, type EtcdConnection } from './connection';
import { Emitter } from './emitter';
import { leaseDecimal } from './keys';

/** What LockLens knows of one lease. etcd never pushes TTLs (watchers do not see keepalives): they are sampled. */
export interface LeaseInfo {
  /** Lowercase hex, as in Go lock keys. */
  readonly id: string;
  readonly state: 'alive' | 'expired';
  readonly grantedTtl: number;
  /** Remaining seconds when sampled at `observedAt`; count down with `remainingTtl`. */
  readonly ttl: number;
  readonly observedAt: number;
  readonly firstSeenAt: number;
  /** When refreshes (keepalives) were detected, newest last, at most MAX_REFRESH_MARKS. */
  readonly refreshes: readonly number[];
  /** The holder is not renewing: the remaining TTL fell below `stallFraction` of the granted TTL. */
  readonly stalled: boolean;
  readonly keys: readonly Buffer[];
}

export interface LeaseSample {
  readonly ttl: number;
  readonly grantedTtl: number;
  readonly keys: readonly Buffer[];
  readonly at: number;
}

export const MAX_REFRESH_MARKS = 32;

/**
 * Folds a new sample into what was known. A refresh is a TTL higher than the previous sample counted down (one second
 * of slack: etcd reports whole seconds). Stalled: Go, etcdctl and the etcd3 client renew every TTL/3, so a healthy
 * lease never drops below 2/3 of its granted TTL; below `stallFraction` (default 1/2) nobody is renewing it.
 */
export function observeLease(previous: LeaseInfo | undefined, id: string, sample: LeaseSample, stallFraction = 0.5): LeaseInfo {
  const expired = sample.ttl < 0;
  let refreshes = previous?.refreshes ?? [];
  if (previous && previous.state === 'alive' && !expired) {
    const expected = previous.ttl - (sample.at - previous.observedAt) / 1000;
    if (sample.ttl > expected + 1) refreshes = [...refreshes, sample.at].slice(-MAX_REFRESH_MARKS);
  }
  return {
    id,
    state: expired ? 'expired' : 'alive',
    grantedTtl: sample.grantedTtl,
    ttl: expired ? 0 : sample.ttl,
    observedAt: sample.at,
    firstSeenAt: previous?.firstSeenAt ?? sample.at,
    refreshes,
    stalled: !expired && sample.grantedTtl > 0 && sample.ttl < sample.grantedTtl * stallFraction,
    keys: sample.keys,
  };
}

/** Seconds left at `now`, counting down from the last sample. */
export function remainingTtl(info: LeaseInfo, now = Date.now()): number {
  if (info.state === 'expired') return 0;
  return Math.max(0, info.ttl - (now - info.observedAt) / 1000);
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

import { observeLease, type LeaseInfo } from '../../src/core/leaseInfo';
import { LockClock } from '../../src/core/lockHealth';
import { LockModel } from '../../src/core/etcd/lockModel';
import type { KeyRecord } from '../../src/core/etcd/records';
import { timelineRows, type TimelineSource } from '../../src/core/timeline';
import type { TimelineRow } from '../../src/shared/timelineData';

/** The timeline unit tests' fake etcd connection and its keys. */

export const T0 = 1_700_000_000_000;
export const HOUR = 3_600_000;
export const LONG_HOLD = 300_000;

export function mutexKey(name: string | Buffer, lease: string, create: number, value = ''): KeyRecord {
  const key = Buffer.concat([Buffer.from(name), Buffer.from(`/${lease}`)]);
  return { key, valuePreview: Buffer.from(value), valueSize: value.length, createRevision: create, modRevision: create, version: 1, lease };
}

export function singleKey(key: string, lease: string, create: number): KeyRecord {
  return { key: Buffer.from(key), valuePreview: Buffer.from('x'), valueSize: 1, createRevision: create, modRevision: create, version: 1, lease };
}

/** One fake connection: a lock model fed by hand, its clock, and lease infos folded from samples as a sweep would. */
export class Fixture {
  readonly model = new LockModel();
  readonly clock = new LockClock();
  readonly leases = new Map<string, LeaseInfo>();
  /** The locks the connection's diagnosis confirmed a deadlock in. */
  readonly deadlocked = new Set<string>();
  now = T0;
  private revision = 1;

  constructor(readonly connection = 'test') {}

  put(...records: KeyRecord[]): void {
    for (const r of records) this.model.put({ ...r, modRevision: Math.max(r.modRevision, ++this.revision) });
    this.clock.observe(this.model.takeChanges(), this.now);
  }

  delete(...keys: (string | Buffer)[]): void {
    for (const k of keys) this.model.delete(Buffer.from(k), ++this.revision);
    this.clock.observe(this.model.takeChanges(), this.now);
  }

  /** A lease sample at `now`: TTL -1 means expired. */
  sample(id: string, ttl: number, grantedTtl = 60): void {
    this.leases.set(id, observeLease(this.leases.get(id), id, { ttl, grantedTtl, keys: [], at: this.now }));
  }

  source(): TimelineSource {
    return { connection: this.connection, hasLeases: true, locks: this.model.locks(), lease: (id) => this.leases.get(id), clock: this.clock, deadlocked: (id) => this.deadlocked.has(id) };
  }

  rows(longHoldMs = LONG_HOLD): TimelineRow[] {
    return timelineRows(this.source(), longHoldMs, this.now);
  }
}


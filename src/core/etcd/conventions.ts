import type { LockKind } from '../lockState';
import type { KeyRecord } from './records';

/**
 * Which lock a key belongs to, by the conventions of the clients that write lock keys to etcd
 * (see docs/etcd-locks.md in the shared docs, and the README's table):
 *
 * - `go-mutex`: `<name>/<lease hex>` with an empty value: Go `concurrency.Mutex`, `etcdctl lock`, the v3lock service
 *   (jetcd); the hex zero-padded to 16 digits too, as `etcdctl lease grant` prints it. Holder: lowest create revision.
 * - `go-election`: the same layout with a non-empty value (the proposal): Go `Election`, `etcdctl elect`.
 * - `etcd3-election`: `<name>/<lease decimal>`: the npm `etcd3` Election.
 * - `recipe-uuid`: `<name>/<uuid>`: the revision-ordered recipe of the seed articles.
 * - `single-key`: anything else is the lock itself; it is held while it exists (etcd3 `Lock`, python-etcd3
 *   `/locks/<name>`, `CreateRevision == 0` recipes).
 */
export type Convention = 'go-mutex' | 'go-election' | 'etcd3-election' | 'recipe-uuid' | 'single-key';

export interface Placement {
  /** The lock's name: the key without its last path segment, or the whole key for a single-key lock. */
  readonly name: Buffer;
  readonly convention: Convention;
}

export const KIND_OF: Record<Convention, LockKind> = {
  'go-mutex': 'queue',
  'recipe-uuid': 'queue',
  'go-election': 'election',
  'etcd3-election': 'election',
  'single-key': 'single',
};

const SLASH = 0x2f;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function placeKey(kv: Pick<KeyRecord, 'key' | 'lease' | 'valueSize'>): Placement {
  const slash = kv.key.lastIndexOf(SLASH);
  if (slash >= 0) {
    const segment = kv.key.subarray(slash + 1).toString('latin1');
    const name = kv.key.subarray(0, slash);
    if (kv.lease !== '' && isLeaseHex(segment, kv.lease)) {
      return { name, convention: kv.valueSize === 0 ? 'go-mutex' : 'go-election' };
    }
    if (UUID.test(segment)) return { name, convention: 'recipe-uuid' };
    if (kv.lease !== '' && segment === BigInt('0x' + kv.lease).toString(10)) {
      return { name, convention: 'etcd3-election' };
    }
  }
  return { name: kv.key, convention: 'single-key' };
}

/**
 * Whether a key's last segment is its lease in hex: as Go writes it (`%x`, `694d7a2b3c01a2f5`) or zero-padded to 16
 * digits (`%016x`, as `etcdctl lease grant` prints a lease, which scripts then write into their keys).
 */
function isLeaseHex(segment: string, lease: string): boolean {
  if (segment === lease) return true;
  return segment.length === 16 && segment.length > lease.length && /^0+$/.test(segment.slice(0, 16 - lease.length)) && segment.endsWith(lease);
}

/**
 * A lock's kind from its members: an election if any member is one (a leader with an empty proposal looks like a
 * mutex key), a queue if any member queues, else single.
 */
export function kindOf(conventions: Iterable<Convention>): LockKind {
  let kind: LockKind = 'single';
  for (const c of conventions) {
    const k = KIND_OF[c];
    if (k === 'election') return k;
    if (k === 'queue') kind = k;
  }
  return kind;
}

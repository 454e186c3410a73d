/**
 * One model from several reads: the independent instances of a redlock set, or the masters of a cluster. Pure, so
 * every case (agreement, a missing instance, a split) is tested without servers.
 *
 * Redlock: the same lock name read on every instance. Instances whose holder is the same (same layout, owner and, for
 * strings, the same token) agree; each group of agreeing instances is one member with `quorum` saying on how many of
 * the configured instances it holds (an unreachable instance counts as not agreeing). The largest group (ties: the one
 * whose first instance comes first in the configuration) is the lock's `holder`; every other group is a further
 * member in `sharedWith`, each with its own quorum, so a split (nobody on a majority, or two claims at once) is shown
 * whole, never hidden: a view sees several holders of an exclusive lock and each one's `on k/n instances`. Waiters
 * (a Redisson fair queue) are those of the holder's first instance. A member's TTL is the lowest PTTL among its
 * agreeing instances: redlock's validity ends with the earliest expiry.
 *
 * Cluster: every key lives on exactly one master, so the reads are a union; each TTL remembers which master to ask.
 */
import { keyId } from '../keys';
import { byName, type LockMember, type LockState } from '../lockState';
import { CONVENTIONS, type Recognized, type TtlSource } from './recognize';

/** Members whose owner is the stored value itself: instances agree only on the same bytes. */
function isStringLayout(m: LockMember): boolean {
  return m.convention === CONVENTIONS.token || m.convention === CONVENTIONS.shedlock;
}

function identity(lock: LockState): string {
  const h = lock.holder;
  if (!h) return '';
  return [h.convention, h.key.toString('hex'), isStringLayout(h) ? h.valuePreview.toString('hex') : h.owner].join('\u0000');
}

/** The TTL id of a redlock member: the key's id and whose it is, so two tokens of one key are sampled apart. */
export function redlockTtlId(lease: string, who: string): string {
  return `${lease}\u0000on\u0000${keyId(Buffer.from(who, 'utf8'))}`;
}

interface Entry {
  readonly lock: LockState;
  readonly instance: number;
}

export function mergeInstances(reads: readonly (Recognized | undefined)[], labels: readonly string[]): Recognized {
  const of = labels.length;
  const byId = new Map<string, Entry[]>();
  reads.forEach((read, instance) => {
    for (const lock of read?.locks ?? []) {
      let list = byId.get(lock.id);
      if (!list) byId.set(lock.id, (list = []));
      list.push({ lock, instance });
    }
  });
  const ttls = new Map<string, TtlSource>();
  const locks: LockState[] = [];
  for (const entries of byId.values()) {
    const groups = new Map<string, Entry[]>();
    for (const e of entries) {
      const id = identity(e.lock);
      let g = groups.get(id);
      if (!g) groups.set(id, (g = []));
      g.push(e);
    }
    const ordered = [...groups.entries()].sort(([ia, a], [ib, b]) => {
      if ((ia === '') !== (ib === '')) return ia === '' ? 1 : -1; // a holder before a free queue
      return b.length - a.length || a[0].instance - b[0].instance;
    });
    const groupMembers = (id: string, group: Entry[]): LockMember[] => {
      const base = group[0].lock;
      const holders = base.holder ? [base.holder, ...(base.sharedWith ?? [])] : [];
      const quorum = { agree: group.length, of, instances: group.map((e) => labels[e.instance]) };
      return holders.map((m) => ({ ...m, lease: mergedLease(m, id, group, reads, labels, ttls), quorum }));
    };
    const [[firstId, first], ...others] = ordered;
    const base = first[0].lock;
    const [holder, ...sharedWith] = groupMembers(firstId, first);
    for (const [id, group] of others) if (id !== '') sharedWith.push(...groupMembers(id, group));
    const baseTtls = reads[first[0].instance]!.ttls;
    for (const w of base.waiters) {
      const s = w.lease ? baseTtls.get(w.lease) : undefined;
      if (s) ttls.set(s.id, { ...s, nodes: [labels[first[0].instance]] });
    }
    locks.push({
      id: base.id,
      name: base.name,
      kind: base.kind,
      holder: holder ?? null,
      ...(sharedWith.length ? { sharedWith } : {}),
      waiters: base.waiters,
      ...(base.permits ? { permits: base.permits } : {}),
    });
  }
  locks.sort(byName);
  return { locks, ttls };
}

/** The lowest PTTL among the agreeing instances, under an id of its own; '' when none of them expires it. */
function mergedLease(m: LockMember, who: string, group: readonly Entry[], reads: readonly (Recognized | undefined)[], labels: readonly string[], ttls: Map<string, TtlSource>): string {
  let lowest: TtlSource | undefined;
  const nodes: string[] = [];
  for (const e of group) {
    const member = e.lock.holder && [e.lock.holder, ...(e.lock.sharedWith ?? [])].find((x) => x.key.equals(m.key));
    const source = member?.lease ? reads[e.instance]!.ttls.get(member.lease) : undefined;
    if (!source || source.ms < 0) continue; // no expiry on that instance
    nodes.push(labels[e.instance]);
    if (!lowest || source.ms < lowest.ms) lowest = source;
  }
  if (!lowest) return '';
  const id = redlockTtlId(lowest.id, who);
  ttls.set(id, { id, ms: lowest.ms, keys: lowest.keys, nodes, ...(isStringLayout(m) ? { value: m.valuePreview } : {}) });
  return id;
}

/** A cluster's masters: each key on one of them, so a union; TTL sources remember their master. */
export function mergeNodes(reads: readonly Recognized[], labels: readonly string[]): Recognized {
  const ttls = new Map<string, TtlSource>();
  const locks = new Map<string, LockState>();
  reads.forEach((read, i) => {
    for (const lock of read.locks) if (!locks.has(lock.id)) locks.set(lock.id, lock);
    for (const [id, s] of read.ttls) ttls.set(id, { ...s, nodes: [labels[i]] });
  });
  return { locks: [...locks.values()].sort(byName), ttls };
}

import { keyId } from '../keys';
import { byId, byName, type ChangeSet, type LockMember, type LockState } from '../lockState';
import { kindOf, placeKey, type Convention } from './conventions';
import type { KeyRecord } from './records';

/**
 * A lock's identity: its name's bytes, plus a mark for single-key locks, so that a key `/locks/foo` and a queue of
 * `/locks/foo/<lease>` keys stay two locks (the mark is outside latin1, so no name can produce it).
 */
export function lockId(name: Uint8Array, convention: Convention): string {
  return convention === 'single-key' ? keyId(name) + SINGLE_MARK : keyId(name);
}

const SINGLE_MARK = '\u0100';

/**
 * An etcd key as a lock member: the record as etcd has it, plus the neutral fields every view reads. The owner is the
 * lease (Go and etcdctl name keys by it), and the fencing token is the create revision.
 */
export interface EtcdMember extends KeyRecord, LockMember {
  readonly convention: Convention;
}

export interface EtcdLockState extends LockState {
  readonly holder: EtcdMember | null;
  readonly waiters: readonly EtcdMember[];
}

interface Group {
  readonly name: Buffer;
  readonly members: Map<string, EtcdMember>;
}

/**
 * The keys under the watched prefixes, grouped into locks. Pure and synchronous: it knows nothing of etcd
 * connections, so every sequence of puts, deletes and reloads can be unit-tested, and the live layer only has to feed
 * it events in revision order.
 */
export class LockModel {
  private readonly groupOfKey = new Map<string, string>();
  private readonly groups = new Map<string, Group>();
  private readonly stateCache = new Map<string, EtcdLockState>();
  private readonly dirty = new Set<string>();
  private resyncedSinceTake = false;
  /** The revision of the last reload, or of the newest event applied since. */
  revision = 0;

  get keyCount(): number {
    return this.groupOfKey.size;
  }

  put(record: KeyRecord): void {
    const kid = keyId(record.key);
    const placement = placeKey(record);
    const gid = lockId(placement.name, placement.convention);
    const previous = this.groupOfKey.get(kid);
    if (previous !== undefined && previous !== gid) this.removeMember(previous, kid);
    let group = this.groups.get(gid);
    if (!group) {
      group = { name: placement.name, members: new Map() };
      this.groups.set(gid, group);
    }
    group.members.set(kid, etcdMember(record, placement.convention));
    this.groupOfKey.set(kid, gid);
    this.touch(gid);
    this.revision = Math.max(this.revision, record.modRevision);
  }

  delete(key: Buffer, revision: number): void {
    const kid = keyId(key);
    const gid = this.groupOfKey.get(kid);
    if (gid !== undefined) this.removeMember(gid, kid);
    this.revision = Math.max(this.revision, revision);
  }

  /**
   * Replaces every key for which `owns` is true with `records` read at `revision`: the reconcile step after a
   * (re)connect or a compaction. Only locks whose members really changed are reported.
   */
  reload(owns: (key: Buffer) => boolean, records: Iterable<KeyRecord>, revision: number): void {
    const fresh = new Map<string, KeyRecord>();
    for (const r of records) fresh.set(keyId(r.key), r);
    for (const [kid, gid] of [...this.groupOfKey]) {
      const member = this.groups.get(gid)!.members.get(kid)!;
      if (owns(member.key) && !fresh.has(kid)) this.removeMember(gid, kid);
    }
    for (const [kid, r] of fresh) {
      const gid = this.groupOfKey.get(kid);
      const current = gid === undefined ? undefined : this.groups.get(gid)!.members.get(kid);
      if (!current || !sameRecord(current, r)) this.put(r);
    }
    this.revision = revision;
    this.resyncedSinceTake = true;
  }

  lock(id: string): EtcdLockState | undefined {
    let state = this.stateCache.get(id);
    if (!state) {
      const group = this.groups.get(id);
      if (!group) return undefined;
      state = toState(id, group);
      this.stateCache.set(id, state);
    }
    return state;
  }

  /** The lock a key is a member of, if the model has the key. */
  lockOfKey(key: Uint8Array): EtcdLockState | undefined {
    const gid = this.groupOfKey.get(keyId(key));
    return gid === undefined ? undefined : this.lock(gid);
  }

  /** Every lock, in no order: for a pass that needs none (a lease sweep's ids; a sort of every name costs). */
  *unordered(): IterableIterator<EtcdLockState> {
    for (const id of this.groups.keys()) yield this.lock(id)!;
  }

  /** Every lock, sorted by name in etcd's byte order (a queue before a single key of the same name). */
  locks(): EtcdLockState[] {
    return [...this.unordered()].sort(byNameThenId);
  }

  hasChanges(): boolean {
    return this.dirty.size > 0 || this.resyncedSinceTake;
  }

  /** Drains what changed since the last call (the coalescing unit for views). */
  takeChanges(): ChangeSet {
    const changed: LockState[] = [];
    const removed: string[] = [];
    for (const id of this.dirty) {
      const state = this.lock(id);
      if (state) changed.push(state);
      else removed.push(id);
    }
    const set = { revision: this.revision, changed, removed, resynced: this.resyncedSinceTake };
    this.dirty.clear();
    this.resyncedSinceTake = false;
    return set;
  }

  private removeMember(gid: string, kid: string): void {
    const group = this.groups.get(gid)!;
    group.members.delete(kid);
    this.groupOfKey.delete(kid);
    if (group.members.size === 0) this.groups.delete(gid);
    this.touch(gid);
  }

  private touch(gid: string): void {
    this.stateCache.delete(gid);
    this.dirty.add(gid);
  }
}

function etcdMember(record: KeyRecord, convention: Convention): EtcdMember {
  return { ...record, convention, expiresWith: record.lease ? 'lease' : 'nothing', owner: record.lease, token: record.createRevision, holds: null, revision: record.modRevision };
}

/** Equal as far as the model shows: after a restored or wiped etcd, revisions repeat with other contents. */
function sameRecord(a: KeyRecord, b: KeyRecord): boolean {
  return (
    a.modRevision === b.modRevision &&
    a.createRevision === b.createRevision &&
    a.version === b.version &&
    a.lease === b.lease &&
    a.valueSize === b.valueSize &&
    a.valuePreview.equals(b.valuePreview)
  );
}

function toState(id: string, group: Group): EtcdLockState {
  // Keys written by one transaction share a create revision: order those by key bytes, as etcd lists them.
  const ordered = [...group.members.values()].sort((a, b) => a.createRevision - b.createRevision || Buffer.compare(a.key, b.key));
  return {
    id,
    name: group.name,
    kind: kindOf(ordered.map((m) => m.convention)),
    holder: ordered[0] ?? null,
    waiters: ordered.slice(1),
  };
}

/** etcd's byte order of names, a queue before a single key of the same name (their ids tell them apart). */
function byNameThenId(a: EtcdLockState, b: EtcdLockState): number {
  return byName(a, b) || byId(a, b);
}

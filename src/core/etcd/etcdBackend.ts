import type { AcquireOptions, QueuePosition, ForceReleaseResult, LeaseOperations, Listing, LockBackend, LockHold, LockOwner, WatchOptions } from '../backend';
import { Emitter } from '../emitter';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';
import type { LockMember, LockState } from '../lockState';
import type { ConnectionProfile } from '../profile';
import { EtcdLockWatch } from './liveWatch';
import { call, EtcdConnection } from './connect';
import { EtcdHistory } from './history';
import { readPrefixes } from './keyspace';
import { LeaseTracker, leaseLives, sampleLease } from './leases';
import { normalizePrefixes } from '../keys';
import { LockModel } from './lockModel';
import { Mutex, type Hold } from './mutex';
import { SingleKeyLock } from './singleKey';
import { prefixRange } from './keyRange';
import { defaultLayout, layoutById } from '../freeNameLayout';
import { ETCD_LAYOUTS } from './layouts';
import { placeKey } from './conventions';
import { toKeyRecord } from './records';
import { revokeLease } from './revoke';
import { Session } from './session';
import { ETCD_CAPABILITIES } from './capabilities';

/**
 * etcd behind the backend contract: the live model is a watch per prefix (EtcdLockWatch), acquire is the Go-compatible
 * Mutex on a session of its own (so releasing is revoking that lease) or on one lease shared by several locks, a stuck holder is freed either by revoking
 * its lease (every key it holds) or by deleting its one key, and a lock's past is replayed from etcd's revisions.
 */
export class EtcdBackend implements LockBackend {
  readonly kind = 'etcd';
  readonly capabilities = ETCD_CAPABILITIES;
  readonly leases: LeaseOperations;
  readonly history: EtcdHistory;

  private constructor(readonly connection: EtcdConnection) {
    this.leases = {
      describe: (id) => sampleLease(connection, id),
      lives: (id) => leaseLives(connection, id),
      revoke: (id) => revokeLease(connection, id),
    };
    this.history = new EtcdHistory(connection);
  }

  static async open(profile: ConnectionProfile): Promise<EtcdBackend> {
    return new EtcdBackend(await EtcdConnection.open(profile));
  }

  watch(prefixes: readonly Uint8Array[], options: WatchOptions = {}): EtcdLockWatch {
    return new EtcdLockWatch(this.connection, prefixes, {
      leaseSampleIntervalMs: options.leaseSampleIntervalMs,
      minNotifyIntervalMs: options.minNotifyIntervalMs,
      countdowns: options.countdowns,
      log: options.log,
    });
  }

  async list(prefixes: readonly Uint8Array[]): Promise<Listing> {
    const read = await readPrefixes(this.connection, normalizePrefixes(prefixes));
    const model = new LockModel();
    model.reload(() => true, read.records, read.revision);
    const locks = model.locks();
    const leases = new LeaseTracker(this.connection);
    await leases.sweep(locks.flatMap((l) => [l.holder, ...l.waiters]).flatMap((m) => (m?.lease ? [m.lease] : [])));
    return { revision: read.revision, locks, lease: (id) => leases.get(id) };
  }

  /** A Go Mutex queue is joined in its layout, a single key waited for in its own; elections are leadership, not locks. */
  acquirable(lock: LockState): boolean {
    return lock.kind === 'queue' || lock.kind === 'single';
  }

  async acquire(name: Uint8Array, options: AcquireOptions): Promise<LockHold> {
    if (options.mode !== undefined) {
      throw new LockLensError('INVALID_ARGUMENT', `etcd has no read/write locks: ${displayKey(name)} is taken without a mode (read/write is for Redisson's RReadWriteLock in Redis)`);
    }
    const shared = options.owner && sessionOf(options.owner);
    const session = shared ?? (await Session.create(this.connection, options.ttlSeconds));
    // Releasing revokes this session's lease; with the call open beforehand, that is one write when the time comes.
    if (!shared) session.prepareRevoke();
    try {
      // The backend's onQueue hears `ahead: 0` once, when the lock is ours, with the revision it became ours at
      // (synchronously, before the hold is set up: the CLI lets its command run there).
      const onQueue = options.onQueue;
      const waiting = { signal: options.signal, onQueue: onQueue && ((p: QueuePosition) => p.ahead > 0 && onQueue(p)), onHeld: onQueue };
      let hold: Hold;
      if ((await layoutOfName(this.connection, name, options.layout)) === 'single-key') {
        hold = await new SingleKeyLock(session, name).acquire({ ...waiting, tryOnly: options.tryOnly });
      } else {
        const mutex = new Mutex(session, name);
        hold = options.tryOnly ? await mutex.tryAcquire() : await mutex.acquire(waiting);
      }
      return new EtcdHold(Buffer.from(name), hold, shared ? undefined : session);
    } catch (e) {
      // A shared lease lives on: the Mutex has already deleted the key it queued with.
      if (!shared) await session.revoke().catch(() => session.dispose());
      throw e;
    }
  }

  /** One lease for several Mutexes, as Go's `concurrency.NewSession`: each lock's key is `<name>/<that lease>`. */
  async openOwner(ttlSeconds: number): Promise<LockOwner> {
    return new EtcdOwner(await Session.create(this.connection, ttlSeconds));
  }

  /** Deletes the member's key if it is still the one the user saw: created at the same revision. */
  async forceRelease(_lock: LockState, member: LockMember): Promise<ForceReleaseResult> {
    const key = this.connection.toEtcd(member.key);
    const res = await call(
      this.connection.client.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: String(member.token ?? 0) }],
        success: [{ request_delete_range: { key } }],
        failure: [],
      }),
    );
    if (!res.succeeded) {
      throw new LockLensError('LOCK_CHANGED', `${displayKey(member.key)} is no longer the key created at revision ${member.token}: nothing was deleted`);
    }
    return { keys: [member.key], action: `deleted the key at revision ${res.header.revision}` };
  }

  describeForceRelease(_lock: LockState, member: LockMember): string {
    const key = displayKey(member.key);
    const lease = member.lease
      ? `Its lease ${member.lease} stays alive, with any other keys it holds: revoke the lease to end them all. `
      : 'The key has no lease, so nothing else would ever have removed it. ';
    return (
      `Deletes the key ${key}, only if it is still the one created at revision ${member.token}. ${lease}` +
      `The owner is not told and may still believe it holds the lock; resources should reject its fencing token ${member.token}.`
    );
  }

  close(): void {
    this.connection.close();
  }

  dispose(): void {
    this.close();
  }
}

/** A lease kept alive for several holds; closing it revokes the lease, deleting whatever key is still on it. */
class EtcdOwner implements LockOwner {
  constructor(readonly session: Session) {}

  get id(): string {
    return this.session.leaseId;
  }

  close(): Promise<void> {
    return this.session.revoke();
  }
}

/**
 * The layout `name` is taken in: a queue when keys are queued under `<name>/` (also beside a key `<name>`, as before
 * there were layouts), a single key when the key `<name>` alone is there, else the one asked for or the default.
 */
async function layoutOfName(conn: EtcdConnection, name: Uint8Array, asked: string | undefined): Promise<string> {
  const layout = asked === undefined ? defaultLayout(ETCD_LAYOUTS) : layoutById(ETCD_LAYOUTS, asked);
  const key = conn.toEtcd(Buffer.from(name));
  const [single, queued] = await Promise.all([
    call(conn.client.kv.range({ key })),
    call(conn.client.kv.range({ ...prefixRange(Buffer.concat([key, Buffer.from('/')])), count_only: true })),
  ]);
  if (Number(queued.count) > 0) return 'go-mutex';
  // The key itself may be a member of its parent's queue (`a/b` in lock `a`): only a key that is a lock of its own.
  const kv = single.kvs[0];
  if (kv && placeKey(toKeyRecord(kv, conn.namespace.length)).convention === 'single-key') return 'single-key';
  return layout.id;
}

function sessionOf(owner: LockOwner): Session {
  if (!(owner instanceof EtcdOwner)) throw new LockLensError('INVALID_ARGUMENT', `owner ${owner.id} is not an etcd lease opened by this connection`);
  return owner.session;
}

/**
 * A Mutex hold, on a session of its own (releasing revokes the lease, which deletes the key in the same write) or on
 * a shared one (`own` undefined: releasing deletes the key, and the lease lives on with the owner's other keys).
 */
class EtcdHold implements LockHold {
  private readonly lostEmitter = new Emitter<LockLensError>();
  readonly onDidLose = this.lostEmitter.event;

  constructor(
    readonly name: Buffer,
    private readonly hold: Hold,
    private readonly own: Session | undefined,
  ) {
    hold.onDidLose((e) => this.lostEmitter.fire(e));
  }

  get key(): Buffer {
    return this.hold.key;
  }
  get owner(): string {
    return this.hold.mutex.session.leaseId;
  }
  get fencingToken(): number {
    return this.hold.fencingToken;
  }
  get revision(): number {
    return this.hold.revision;
  }
  get lost(): LockLensError | undefined {
    return this.hold.lost;
  }

  /**
   * One write deletes the lock key (the next waiter's signal) and ends the lease, where a delete and then a revoke
   * would make the next holder's wake-up compete with a second write.
   */
  async release(): Promise<boolean> {
    if (!this.own) {
      this.lostEmitter.dispose();
      return this.hold.release();
    }
    const session = this.own;
    const wasHeld = !this.hold.lost;
    // Our own key's delete is not a loss to report.
    this.lostEmitter.dispose();
    this.hold.releasing();
    // The revoke is the only step on the next holder's path, and it is written first. Closing the guard's watch (a
    // gRPC cancel: about a millisecond of CPU, mostly error objects and their stack traces) is left for later: on two
    // cores, any CPU the old holder spends while etcd commits and the next holder wakes delays both. A process that
    // exits right after (the CLI) never pays it.
    try {
      await session.revoke();
    } finally {
      // Also when the revoke failed: the guard's watch must not outlive the hold in a long-running host.
      setImmediate(() => this.hold.dispose());
    }
    return wasHeld;
  }

  /**
   * Stops renewing without releasing: the key stays until the lease runs out (what a crashed process leaves). A shared
   * lease is its owner's to end.
   */
  dispose(): void {
    this.hold.dispose();
    this.lostEmitter.dispose();
    this.own?.dispose();
  }
}

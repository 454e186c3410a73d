import type * as vscode from 'vscode';
import type { Capabilities, LockHold, LockMode, QueuePosition } from '../core/backend';
import { Emitter } from '../core/emitter';
import { LockLensError, errorMessage } from '../core/errors';
import { ownerField, type AuditEntry, type AuditLog } from './audit';
import type { StoreConnection, ConnectionRegistry } from './connections';

/** A lock this VS Code window holds, on a lease (or token) of its own. */
export interface HeldLock {
  readonly connection: StoreConnection;
  readonly name: Buffer;
  readonly hold: LockHold;
  /** How the store calls the hold's owner (a lease, a token): read once, as the connection may close before the audit. */
  readonly ownerKind: Capabilities['owner'];
}

export interface AcquireRequest {
  readonly connection: StoreConnection;
  readonly name: Buffer;
  readonly ttl: number;
  /** A read/write lock: for reading or writing. */
  readonly mode?: LockMode;
  /** A semaphore's limit where its store does not keep it (see AcquireOptions.permitLimit). */
  readonly permitLimit?: number;
  /** The layout a free name is taken in (`AcquireOptions.layout`). */
  readonly layout?: string;
  readonly signal?: AbortSignal;
  readonly onQueue?: (position: QueuePosition) => void;
}

/**
 * The locks held from VS Code. Each is taken through its connection's backend, interoperably with the clients that use
 * that name (etcd: the Go-compatible mutex on a lease of its own, so that releasing one is revoking its lease: the key
 * goes at once, and nothing else of ours is touched). All of them are released before their connection closes, and
 * when the extension deactivates.
 */
export class HeldLocks implements vscode.Disposable {
  private readonly held = new Set<HeldLock>();
  /** Acquires still waiting (or connecting), so that closing a connection can stop them first. */
  private readonly attempts = new Set<{ readonly connection: StoreConnection; abort(): void; readonly done: Promise<void> }>();
  private readonly changeEmitter = new Emitter<void>();
  private readonly lostEmitter = new Emitter<{ lock: HeldLock; reason: LockLensError }>();
  readonly onDidChange = this.changeEmitter.event;
  /** A held lock was lost (its key deleted by someone else, or its lease expired). */
  readonly onDidLose = this.lostEmitter.event;

  constructor(
    registry: ConnectionRegistry,
    private readonly audit: AuditLog,
  ) {
    registry.addCloseHook((connection) => this.releaseAll(connection));
  }

  all(): HeldLock[] {
    return [...this.held];
  }

  /**
   * The hold behind a member the model shows on `connection`, if it is ours. The owner is compared too: a Redis token
   * lock's one member is the lock's own key, which another client can hold under the same key once ours has expired.
   */
  holding(connection: StoreConnection, member: { readonly key: Uint8Array; readonly owner: string }): HeldLock | undefined {
    return this.all().find((h) => h.connection === connection && h.hold.key.equals(member.key) && h.hold.owner === member.owner);
  }

  owns(connection: StoreConnection, member: { readonly key: Uint8Array; readonly owner: string }): boolean {
    return this.holding(connection, member) !== undefined;
  }

  /** Waits in the queue until held; cancelling (the signal) leaves the queue and removes what was queued. */
  async acquire(request: AcquireRequest): Promise<HeldLock> {
    const { connection, name, ttl } = request;
    // Closing the connection stops this attempt too (see releaseAll), while the client can still delete its key.
    const closing = new AbortController();
    const signal = request.signal ? AbortSignal.any([request.signal, closing.signal]) : closing.signal;
    let hold: LockHold | undefined;
    let ownerKind: Capabilities['owner'] | undefined;
    const run = (async () => {
      try {
        const backend = await connection.open();
        ownerKind = backend.capabilities.owner;
        hold = await backend.acquire(name, { ttlSeconds: ttl, signal, onQueue: request.onQueue, mode: request.mode, permitLimit: request.permitLimit, layout: request.layout });
        if (hold.lost) throw hold.lost;
        if (signal.aborted) throw new LockLensError('CANCELLED', 'cancelled');
        const lock: HeldLock = { connection, name, hold, ownerKind };
        this.held.add(lock);
        hold.onDidLose((reason) => this.lose(lock, reason));
        this.audit.record({ action: 'acquire', outcome: 'ok', connection: connection.name, lock: name, ...ownerOf(lock), fencingToken: hold.fencingToken ?? undefined, keys: [hold.key] });
        this.changeEmitter.fire();
        return lock;
      } catch (e) {
        const cancelled = signal.aborted;
        this.audit.record({ action: 'acquire', outcome: cancelled ? 'cancelled' : 'failed', connection: connection.name, lock: name, ...ownerField(ownerKind, hold?.owner), detail: cancelled ? undefined : errorMessage(e) });
        await hold?.release().catch(() => hold?.dispose());
        throw e;
      }
    })();
    const attempt = {
      connection,
      abort: () => closing.abort(new LockLensError('CANCELLED', 'the connection is closing')),
      done: run.then(
        () => undefined,
        () => undefined,
      ),
    };
    this.attempts.add(attempt);
    try {
      return await run;
    } finally {
      this.attempts.delete(attempt);
    }
  }

  /** Releases the hold (etcd: revokes its lease, deleting the key in the same revision); the next waiter takes over. */
  async release(lock: HeldLock): Promise<void> {
    if (!this.held.delete(lock)) return;
    this.changeEmitter.fire();
    const { hold } = lock;
    try {
      await hold.release();
      this.audit.record({ action: 'release', outcome: 'ok', connection: lock.connection.name, lock: lock.name, ...ownerOf(lock), fencingToken: hold.fencingToken ?? undefined, keys: [hold.key] });
    } catch (e) {
      this.audit.record({ action: 'release', outcome: 'failed', connection: lock.connection.name, lock: lock.name, ...ownerOf(lock), detail: errorMessage(e) });
      throw e;
    }
  }

  /** Stops the attempts still queueing, then releases what is held: before a connection closes, and at shutdown. */
  async releaseAll(connection?: StoreConnection): Promise<void> {
    const waiting = [...this.attempts].filter((a) => !connection || a.connection === connection);
    waiting.forEach((a) => a.abort());
    await Promise.all(waiting.map((a) => a.done));
    const mine = this.all().filter((h) => !connection || h.connection === connection);
    await Promise.all(mine.map((h) => this.release(h).catch(() => undefined)));
  }

  dispose(): void {
    for (const h of this.held) h.hold.dispose();
    this.held.clear();
    this.changeEmitter.dispose();
    this.lostEmitter.dispose();
  }

  private lose(lock: HeldLock, reason: LockLensError): void {
    if (!this.held.delete(lock)) return;
    // Release what may be left (a lease we stopped trusting can still exist), so the queue behind moves on.
    void lock.hold.release().catch(() => lock.hold.dispose());
    this.audit.record({ action: 'lost', outcome: 'ok', connection: lock.connection.name, lock: lock.name, ...ownerOf(lock), fencingToken: lock.hold.fencingToken ?? undefined, detail: reason.message });
    this.changeEmitter.fire();
    this.lostEmitter.fire({ lock, reason });
  }
}

/** The audit's owner field for a hold (`lease=` on etcd). */
function ownerOf(lock: HeldLock): Pick<AuditEntry, 'lease' | 'owner'> {
  return ownerField(lock.ownerKind, lock.hold.owner);
}

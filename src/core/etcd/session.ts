import type { Lease } from 'etcd3';
import { asLockLensError, call, type EtcdConnection } from './connection';
import { Emitter, type Disposable, type Event } from '../emitter';
import { LockLensError } from '../errors';
import { leaseDecimal, leaseHex } from '../keys';

/** Go's `concurrency.DefaultSessionTTL`. */
export const DEFAULT_SESSION_TTL = 60;

/**
 * A lease kept alive for as long as the session lives: Go's `concurrency.Session`. It says the lease is lost as soon as
 * that is true or can no longer be ruled out: when etcd answers a keepalive with TTL 0, or when no keepalive was
 * acknowledged for a whole TTL (the etcd3 client itself waits 2×TTL, too late for a lock holder).
 */
export class Session implements Disposable {
  private readonly lostEmitter = new Emitter<LockLensError>();
  private lostReason?: LockLensError;
  private deadline?: NodeJS.Timeout;
  private isClosed = false;

  /** Fires once, when the lease is gone or may be gone; a listener added after that is told at once. */
  readonly onDidLose: Event<LockLensError> = (listener) => {
    const reason = this.lostReason;
    if (reason) {
      let listening = true;
      queueMicrotask(() => listening && listener(reason));
      return { dispose: () => (listening = false) };
    }
    return this.lostEmitter.event(listener);
  };

  private constructor(
    readonly conn: EtcdConnection,
    private readonly lease: Lease,
    /** Lowercase hex, as it appears in Go lock keys. */
    readonly leaseId: string,
    readonly ttl: number,
  ) {}

  static async create(conn: EtcdConnection, ttl = DEFAULT_SESSION_TTL): Promise<Session> {
    if (!Number.isInteger(ttl) || ttl < 1) throw new LockLensError('INVALID_ARGUMENT', `a lease TTL is a whole number of seconds ≥ 1 (got ${ttl})`);
    const lease = conn.client.lease(ttl, { autoKeepAlive: true });
    let id: string;
    try {
      id = await lease.grant();
    } catch (e) {
      lease.release();
      throw asLockLensError(e);
    }
    const session = new Session(conn, lease, leaseHex(id), ttl);
    session.armDeadline(ttl);
    lease.on('keepaliveSucceeded', (res) => session.armDeadline(Number(res.TTL)));
    lease.on('lost', (e) => session.lose(new LockLensError('LOCK_LOST', `lease ${session.leaseId} lost: ${e.message}`, { cause: e })));
    return session;
  }

  get lost(): LockLensError | undefined {
    return this.lostReason;
  }

  /** Revoked or disposed by its owner. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Ends the session and revokes its lease, deleting every key attached to it (so any lock is released at once). */
  async revoke(): Promise<void> {
    if (this.isClosed) return;
    this.stop();
    // Revoke before closing the keepalive stream: the etcd3 client resets channels when a stream ends, and the revoke
    // would then wait for a new connection.
    try {
      await call(this.conn.client.leaseClient.leaseRevoke({ ID: leaseDecimal(this.leaseId) }));
    } catch (e) {
      if (!(e instanceof LockLensError && e.code === 'LEASE_NOT_FOUND')) throw e;
    } finally {
      this.lease.release();
    }
  }

  /** Stops renewing without revoking: keys stay until the TTL runs out (what a crashed process leaves behind). */
  dispose(): void {
    if (this.isClosed) return;
    this.stop();
    this.lease.release();
  }

  private stop(): void {
    this.isClosed = true;
    clearTimeout(this.deadline);
    this.lostEmitter.dispose();
  }

  private armDeadline(ttlSeconds: number): void {
    clearTimeout(this.deadline);
    if (this.isClosed) return;
    this.deadline = setTimeout(
      () => this.lose(new LockLensError('LOCK_LOST', `lease ${this.leaseId} may have expired: no keepalive was acknowledged for ${ttlSeconds} s`)),
      ttlSeconds * 1000,
    );
    this.deadline.unref();
  }

  private lose(reason: LockLensError): void {
    if (this.lostReason || this.isClosed) return;
    this.lostReason = reason;
    clearTimeout(this.deadline);
    // Stop renewing: a lease we already call lost must not live on (a leader change can reset its TTL) and keep our
    // keys in queues as phantoms.
    this.lease.release();
    this.lostEmitter.fire(reason);
  }
}

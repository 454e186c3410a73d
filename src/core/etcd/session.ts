import type * as grpc from '@grpc/grpc-js';
import type { Lease } from 'etcd3';
import { asLockLensError, call, withDeadline, type EtcdConnection } from './connect';
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
  private prepared?: PreparedRevoke;

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

  /**
   * Opens the lease's revoke call now, so that `revoke()` later is one message on a call that is already open (see
   * PreparedRevoke). For a holder whose release others wait on: the CLI, where it is the first step of every handoff.
   */
  prepareRevoke(): void {
    if (this.isClosed || this.prepared) return;
    this.prepared = PreparedRevoke.open(this.conn, this.leaseId);
  }

  /** Ends the session and revokes its lease, deleting every key attached to it (so any lock is released at once). */
  async revoke(): Promise<void> {
    if (this.isClosed) return;
    this.stop();
    // Revoke before closing the keepalive stream: the etcd3 client resets channels when a stream ends, and the revoke
    // would then wait for a new connection.
    try {
      // The prepared call if it is still open; if it fails for any reason, the ordinary call (which reports a lease
      // the first one did revoke as not found, and that counts as done).
      const fast = this.prepared?.send();
      // Not used (not open yet, or failed): it must not stay open, or open later, for nothing.
      if (!fast) this.prepared?.cancel();
      // Bounded like every other call: a frozen etcd must not hold a releasing CLI for gRPC's keepalive timeout.
      const revokedFast = fast && (await withDeadline(fast, this.conn.callTimeoutMs).then(() => true, (e: unknown) => isLeaseNotFound(e)));
      if (!revokedFast) {
        this.prepared?.cancel();
        await call(this.conn.client.leaseClient.leaseRevoke({ ID: leaseDecimal(this.leaseId) }));
      }
    } catch (e) {
      if (!isLeaseNotFound(e)) throw e;
    } finally {
      this.lease.release();
    }
  }

  /** Stops renewing without revoking: keys stay until the TTL runs out (what a crashed process leaves behind). */
  dispose(): void {
    if (this.isClosed) return;
    this.stop();
    this.prepared?.cancel();
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

function isLeaseNotFound(e: unknown): boolean {
  return e instanceof LockLensError && e.code === 'LEASE_NOT_FOUND';
}

interface LeaseServiceClient extends grpc.Client {
  leaseRevoke: { path: string; requestSerialize(value: unknown): Buffer; responseDeserialize(buffer: Buffer): unknown };
}

interface Pool {
  withConnection<T>(service: string, fn: (c: { client: LeaseServiceClient; metadata: grpc.Metadata }) => Promise<T>): Promise<T>;
}

/**
 * A LeaseRevoke call opened ahead of time, its request encoded and its response decoder generated: the call's headers
 * go out when it is opened, and `send` writes the one message that makes etcd revoke. On the wire a unary call is a
 * stream with one request message; etcd starts handling it when the message arrives, and a call that never gets one
 * does nothing (closing it, or the process dying, just resets the stream).
 *
 * Through the etcd3 client, a revoke costs the old holder 1-3 ms of JavaScript between its command's exit and the
 * request reaching the socket (call options, retry and breaker policies, gRPC's call set-up, protobufjs encoding on
 * first use), and every next holder waits for it. This way it is a write on an open HTTP/2 stream.
 */
class PreparedRevoke {
  private stream?: grpc.ClientWritableStream<Buffer>;
  private request?: Buffer;
  private failed = false;
  private cancelled = false;
  private readonly result: Promise<void>;
  private settle!: (error?: LockLensError) => void;

  private constructor() {
    this.result = new Promise<void>((resolve, reject) => (this.settle = (e) => (e ? reject(e) : resolve())));
    this.result.catch(() => (this.failed = true));
  }

  static open(conn: EtcdConnection, leaseId: string): PreparedRevoke | undefined {
    const pool = (conn.client as unknown as { pool?: Pool }).pool;
    if (typeof pool?.withConnection !== 'function') return undefined;
    const prepared = new PreparedRevoke();
    // withConnection hands over the Lease service's gRPC client and the call metadata (the auth token, if any); the
    // function opens the call and returns.
    pool
      .withConnection('Lease', async ({ client, metadata }) => {
        if (prepared.cancelled) return;
        const method = client.leaseRevoke;
        prepared.request = method.requestSerialize({ ID: leaseDecimal(leaseId) });
        method.responseDeserialize(Buffer.alloc(0)); // generates the response decoder now, not after the handoff
        const stream = client.makeClientStreamRequest<Buffer, unknown>(method.path, (b) => b, method.responseDeserialize, metadata, {}, (error) =>
          prepared.settle(error ? asLockLensError(error) : undefined),
        );
        stream.on('error', () => undefined);
        prepared.stream = stream;
      })
      .catch((e: unknown) => prepared.settle(asLockLensError(e)));
    return prepared;
  }

  /** Revokes: resolves once etcd did, rejects with the reason it did not. Undefined if the call is not open (any more). */
  send(): Promise<void> | undefined {
    if (!this.stream || !this.request || this.failed || this.cancelled) return undefined;
    this.stream.write(this.request);
    this.stream.end();
    return this.result;
  }

  cancel(): void {
    this.cancelled = true;
    this.stream?.cancel();
  }
}

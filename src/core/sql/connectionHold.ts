/**
 * A SQL lock held on a connection of its own (a PostgreSQL advisory lock, a MySQL GET_LOCK): the lock is the
 * connection's and goes when the connection ends, so keeping the hold is keeping the connection.
 *
 * The lock has no TTL; the store sets its session up so that the server ends it, freeing the lock, within about
 * `ttlSeconds` of hearing nothing from LockLens (PostgreSQL's TCP keepalives, MySQL's wait_timeout). The hold pings
 * every third of the TTL (at most a minute apart), which keeps an idle session alive, and counts the lock lost when a
 * ping has gone unanswered for 0.9×TTL since the last answer: by the TTL the server will have freed it. Without that
 * deadline a connection that goes silent (a cut network, no close seen by either end) leaves the ping waiting for ever
 * and the hold reported held after the server freed the lock.
 */
import type { LockHold } from '../backend';
import type { ScopedHold } from '../connectionScope';
import { Emitter, type Event } from '../emitter';
import { LockLensError } from '../errors';
import { displayKey } from '../keys';

/** The store's side of a hold: its connection, what it sends, and its words for what went wrong. */
export interface HeldConnection {
  /** The server's name, for messages: "PostgreSQL", "MySQL". */
  readonly store: string;
  /** What frees the lock of a session the server stops hearing from, in words. */
  readonly freedWhenSilent: string;
  /** Calls `listener` when the connection fails (with its error) or ends. */
  onEnd(listener: (error?: unknown) => void): void;
  /** Why the lock is lost, from what ended the connection or failed a ping. */
  lossReason(error?: unknown): string;
  /** One round trip; resolves false when the connection no longer holds the lock. */
  ping(): Promise<boolean>;
  /** Gives the lock back; resolves true when the connection still held it. */
  unlock(): Promise<boolean>;
  /** Ends the connection politely, after `unlock`. */
  close(): Promise<void>;
  /** Ends the connection at once: a lock reported lost must not be kept by what is left of it. */
  destroy(): void;
}

export interface HoldIdentity {
  readonly name: Buffer;
  /** The member that holds, as the lock's members show it ("pid 123", "connection 12"). */
  readonly key: Buffer;
  readonly owner: string;
  readonly ttlSeconds: number;
}

/** The pings keep at least this pace, whatever the TTL. */
const MAX_PING_MS = 60_000;
/** Nor closer than this, however short the TTL. */
const MIN_PING_MS = 100;
/** The share of the TTL after which silence counts as loss: before the server acts on it, not after. */
const SILENCE_SHARE = 0.9;

export class ConnectionHold implements LockHold, ScopedHold {
  readonly revision = null;
  readonly fencingToken = null;
  readonly name: Buffer;
  readonly key: Buffer;
  readonly owner: string;
  private readonly ttlMs: number;
  private readonly lostEmitter = new Emitter<LockLensError>();
  readonly onDidLose: Event<LockLensError> = this.lostEmitter.event;
  private lostError: LockLensError | undefined;
  private isEnded = false;
  private pingTimer: NodeJS.Timeout | undefined;
  private heardAt = Date.now();

  constructor(
    identity: HoldIdentity,
    private readonly connection: HeldConnection,
  ) {
    ({ name: this.name, key: this.key, owner: this.owner } = identity);
    this.ttlMs = identity.ttlSeconds * 1000;
    connection.onEnd((e) => this.lose(connection.lossReason(e)));
    this.schedulePing();
  }

  get lost(): LockLensError | undefined {
    return this.lostError;
  }

  get ended(): boolean {
    return this.isEnded;
  }

  private schedulePing(): void {
    this.pingTimer = setTimeout(() => void this.ping(), Math.max(MIN_PING_MS, Math.min(MAX_PING_MS, this.ttlMs / 3)));
    this.pingTimer.unref?.();
  }

  private async ping(): Promise<void> {
    if (this.isEnded) return;
    const sentAt = Date.now();
    const silenceMs = SILENCE_SHARE * this.ttlMs;
    const silence = setTimeout(() => {
      this.lose(`nothing was heard from ${this.connection.store} for ${Math.round(silenceMs / 100) / 10} s, ${SILENCE_SHARE * 100}% of the TTL: ${this.connection.freedWhenSilent}`);
    }, Math.max(0, this.heardAt + silenceMs - sentAt));
    try {
      const holds = await this.connection.ping();
      this.heardAt = sentAt;
      if (!holds) this.lose(`${this.key.toString()} no longer holds it`);
    } catch (e) {
      this.lose(this.connection.lossReason(e));
    } finally {
      clearTimeout(silence);
    }
    if (!this.isEnded) this.schedulePing();
  }

  private stop(): void {
    this.isEnded = true;
    clearTimeout(this.pingTimer);
  }

  private lose(why: string, error = new LockLensError('LOCK_LOST', `lost ${displayKey(this.name)}: ${why}`)): void {
    if (this.isEnded) return;
    this.stop();
    this.lostError = error;
    this.lostEmitter.fire(error);
    this.connection.destroy();
  }

  /** The backend's connection is closing: lost now; ending our own connection frees the lock. */
  abandon(error: LockLensError): void {
    this.lose('', error);
  }

  async release(): Promise<boolean> {
    if (this.isEnded) return false;
    this.stop();
    this.lostEmitter.dispose();
    try {
      return await this.connection.unlock();
    } catch {
      // The connection went before the unlock: the lock went with it.
      return false;
    } finally {
      await this.connection.close().catch(() => this.connection.destroy());
    }
  }

  dispose(): void {
    void this.release().catch(() => undefined);
  }
}

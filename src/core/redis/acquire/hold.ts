/**
 * Keeping a hold, whatever the recipe that took it: it renews itself every TTL/3 and says at once when a renewal finds
 * it gone, or when the TTL of the last confirmed renewal runs out: a holder is never silently assumed.
 */
import type { LockHold } from '../../backend';
import { Emitter, type Event } from '../../emitter';
import { LockLensError, errorMessage } from '../../errors';
import { displayKey } from '../../keys';
import { storeError } from '../keyspaceReader';
import { validUntil } from './timing';

/** How soon a renewal that failed (an error, not a refusal) is tried again. */
const RENEW_RETRY_MS = 250;

export abstract class RenewingHold implements LockHold {
  readonly fencingToken = null;
  readonly revision = null;
  private readonly lostEmitter = new Emitter<LockLensError>();
  readonly onDidLose: Event<LockLensError> = this.lostEmitter.event;
  private lostError: LockLensError | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Fires when the TTL of the last confirmed renewal runs out: the hold cannot be vouched for after that. */
  private expiryTimer: NodeJS.Timeout | undefined;
  private lastFailure: unknown;
  private isEnded = false;

  constructor(
    readonly name: Buffer,
    readonly key: Buffer,
    readonly owner: string,
    protected readonly ttlMs: number,
    /** See validUntil: from the acquiring command's send time. */
    until: number,
  ) {
    this.extend(until);
    this.schedule();
  }

  get lost(): LockLensError | undefined {
    return this.lostError;
  }

  /** Released or lost: nothing keeps it alive any more. */
  get ended(): boolean {
    return this.isEnded;
  }

  /**
   * The connection it was held through is closing: it cannot be renewed or released from here any more, so it is
   * lost now (its renewal stops) rather than after a whole TTL of failed renewals. The key expires by its TTL.
   */
  abandon(error: LockLensError): void {
    this.lose(error);
  }

  /** true: still ours and renewed; false: gone or changed. Throws when the store could not be asked. */
  protected abstract renew(): Promise<boolean>;
  /** true: released by us; false: it was not ours any more. */
  protected abstract unlock(): Promise<boolean>;

  /** Every TTL/3 while renewals succeed; sooner after one failed, so that a passing fault gets several more tries before the TTL runs out. */
  private schedule(afterFailure = false): void {
    const every = Math.max(50, Math.floor(this.ttlMs / 3));
    this.timer = setTimeout(() => void this.tick(), afterFailure ? Math.min(every, RENEW_RETRY_MS) : every);
  }

  /**
   * Re-arms the loss deadline. It runs on its own timer, not after a renewal settles: a renewal can hang for the whole
   * command timeout (a frozen server, a dead link), and the key may expire, and be taken by another client, meanwhile.
   */
  private extend(until: number): void {
    clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(() => this.expire(), Math.max(0, until - Date.now()));
  }

  private expire(): void {
    if (this.isEnded) return;
    const why = this.lastFailure === undefined ? 'Redis did not answer' : errorMessage(this.lastFailure);
    this.lose(new LockLensError('LOCK_LOST', `lost ${displayKey(this.name)}: could not renew it before its TTL ran out (${why})`, { cause: this.lastFailure }));
    // A renewal may still land late and keep the key ours for another TTL, blocking everyone for nothing: delete it if
    // it is still ours (compare-and-delete, so never someone else's), queued behind that renewal on the connection.
    void this.unlock().catch(() => undefined);
  }

  private async tick(): Promise<void> {
    if (this.isEnded) return;
    const sentAt = Date.now();
    try {
      if (!(await this.renew())) {
        return this.lose(new LockLensError('LOCK_LOST', `lost ${displayKey(this.name)}: the key was deleted or taken by someone else`));
      }
      if (!this.isEnded) this.extend(validUntil(sentAt, this.ttlMs));
    } catch (e) {
      this.lastFailure = e;
      if (!this.isEnded) this.schedule(true);
      return;
    }
    if (!this.isEnded) this.schedule();
  }

  protected lose(error: LockLensError): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.stopTimers();
    this.lostError = error;
    this.lostEmitter.fire(error);
  }

  private stopTimers(): void {
    clearTimeout(this.timer);
    clearTimeout(this.expiryTimer);
  }

  async release(): Promise<boolean> {
    if (this.isEnded) return false;
    this.isEnded = true;
    this.stopTimers();
    try {
      return await this.unlock();
    } catch (e) {
      throw storeError(e);
    } finally {
      this.lostEmitter.dispose();
    }
  }

  dispose(): void {
    void this.release().catch(() => undefined);
  }
}

import type { LockWatch } from './backend';
import { LockLensError } from './errors';

/** A hold a backend hands out that its connection's end must end too. */
export interface ScopedHold {
  readonly name: Buffer;
  /** Released or lost: nothing keeps it alive any more. */
  readonly ended: boolean;
  /** The connection is closing: lost now, with `error`, rather than after failing to keep itself alive. */
  abandon(error: LockLensError): void;
}

/**
 * What a backend's close must end besides its clients: the watches it opened, the holds it handed out (each lost at
 * once, saying why), and the acquires still waiting (aborted: they could only fail later, or open new clients).
 */
export class ConnectionScope<H extends ScopedHold> {
  private readonly watches = new Set<LockWatch>();
  private readonly holds = new Set<H>();
  private readonly closing = new AbortController();
  private isClosed = false;

  constructor(
    /** The store's name, for messages ("the Redis connection is closed"). */
    private readonly store: string,
    /** Why a hold is lost when the connection closes under it (what becomes of what it left in the store). */
    private readonly closedWhileHeld: (name: Buffer) => LockLensError,
  ) {}

  get closed(): boolean {
    return this.isClosed;
  }

  checkOpen(): void {
    if (this.isClosed) throw new LockLensError('CLOSED', `the ${this.store} connection is closed`);
  }

  /** The signal an acquire waits with: the caller's, and the connection's closing. */
  signal(own: AbortSignal | undefined): AbortSignal {
    return own ? AbortSignal.any([own, this.closing.signal]) : this.closing.signal;
  }

  /** Disposed of when the connection closes, forgotten when disposed before. */
  watch<W extends LockWatch>(watch: W): W {
    this.watches.add(watch);
    const dispose = watch.dispose.bind(watch);
    watch.dispose = () => {
      this.watches.delete(watch);
      dispose();
    };
    return watch;
  }

  /** Kept until it ends, to be lost when the connection closes; lost at once if it already has. */
  hold<T extends H>(hold: T): T {
    for (const h of this.holds) if (h.ended) this.holds.delete(h);
    if (this.isClosed) hold.abandon(this.closedWhileHeld(hold.name));
    else this.holds.add(hold);
    return hold;
  }

  /** Ends everything in the scope; false when it was closed already. Holds first: they say they are lost now. */
  close(): boolean {
    if (this.isClosed) return false;
    this.isClosed = true;
    this.closing.abort(new LockLensError('CLOSED', `the ${this.store} connection was closed while waiting for the lock`));
    for (const h of [...this.holds]) h.abandon(this.closedWhileHeld(h.name));
    this.holds.clear();
    for (const w of [...this.watches]) w.dispose();
    return true;
  }
}

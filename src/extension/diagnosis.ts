/**
 * The diagnosis of each connection the extension watches (issue 22): a ConnectionDiagnosis per connection fed by
 * every change set and TTL sample of its watch. A deadlock is confirmed only by reads made after the watch synced
 * with the store: a change set that leaves the graph with a cycle (or a confirmed cycle to clear) asks for a synced
 * read a moment later, and a read that leaves a cycle unconfirmed asks for the next, so no cycle is ever told from one
 * stale read. Free of `vscode`, so that it is tested as it is: the views listen to `onDidChange`.
 */
import type { LockWatch } from '../core/backend';
import { ConnectionDiagnosis } from '../core/diagnosis/connectionDiagnosis';
import type { Cycle } from '../core/diagnosis/cycle';
import type { DeadlockReport } from '../core/diagnosis/detector';
import type { Inversion } from '../core/diagnosis/inversions';
import type { TtlFit } from '../core/diagnosis/ttlFit';
import type { ObservedHold } from '../core/holdObservation';
import { Emitter, type Disposable, type Event } from '../core/emitter';
import type { LeaseInfo } from '../core/leaseInfo';
import type { LockClock } from '../core/lockHealth';
import type { ChangeSet, LockState } from '../core/lockState';

/** What this module reads of a connection (a StoreConnection). */
export interface DiagnosedConnection {
  readonly name: string;
  readonly watch: LockWatch | undefined;
  readonly clock: LockClock;
}

/** What this module listens to (the ConnectionRegistry). */
export interface DiagnosisSource<C extends DiagnosedConnection> {
  readonly onDidChangeLocks: Event<{ readonly connection: C; readonly changes: ChangeSet }>;
  readonly onDidChangeLeases: Event<{ readonly connection: C; readonly infos: readonly LeaseInfo[] }>;
  readonly onDidChange: Event<void>;
  all(): readonly C[];
}

/** What the diagnosis says of one lock, for its row, its tooltip, the Lock History view and the report. */
export interface LockFindings {
  /** Confirmed deadlocks that hold or wait in it. */
  readonly deadlocks: readonly Cycle[];
  readonly ttlFit: TtlFit | undefined;
}

export const NO_FINDINGS: LockFindings = { deadlocks: [], ttlFit: undefined };

/** How long after a change set the synced read is made: a burst of change sets asks for one read. */
export const CHECK_DELAY_MS = 1000;

interface Watched {
  readonly diagnosis: ConnectionDiagnosis;
  watch: LockWatch | undefined;
  timer?: NodeJS.Timeout;
  checking: boolean;
}

export class Diagnoses<C extends DiagnosedConnection> implements Disposable {
  private readonly connections = new Map<C, Watched>();
  private readonly changeEmitter = new Emitter<{ readonly connection: C; readonly report: DeadlockReport }>();
  /** A read confirmed or cleared deadlocks on a connection. */
  readonly onDidChange = this.changeEmitter.event;
  private readonly subscriptions: Disposable[];

  constructor(
    source: DiagnosisSource<C>,
    private readonly delayMs = CHECK_DELAY_MS,
  ) {
    this.subscriptions = [
      source.onDidChangeLocks(({ connection, changes }) => this.observe(connection, changes)),
      source.onDidChangeLeases(({ connection, infos }) => this.connections.get(connection)?.diagnosis.observeLeases(infos)),
      source.onDidChange(() => {
        const present = new Set(source.all());
        for (const [c, w] of this.connections) if (!present.has(c)) this.forget(c, w);
      }),
      this.changeEmitter,
    ];
  }

  /** The connection's diagnosis, or undefined before its first change set. */
  of(connection: C): ConnectionDiagnosis | undefined {
    return this.connections.get(connection)?.diagnosis;
  }

  /** What the diagnosis says of the lock; `holds` are its holds measured (LockStats), for its TTL fit. */
  findings(connection: C, lock: LockState, holds: readonly ObservedHold[]): LockFindings {
    const d = this.of(connection);
    return d ? { deadlocks: d.cyclesOf(lock.id), ttlFit: d.ttlFit(lock, holds) } : NO_FINDINGS;
  }

  /** The lock-order inversions the lock is one of the two locks of. */
  inversionsOf(connection: C, lockId: string, now = Date.now()): Inversion[] {
    return (this.of(connection)?.inversionList(now) ?? []).filter((i) => i.locks[0].id === lockId || i.locks[1].id === lockId);
  }

  dispose(): void {
    for (const w of this.connections.values()) clearTimeout(w.timer);
    this.subscriptions.forEach((s) => s.dispose());
  }

  private observe(connection: C, changes: ChangeSet): void {
    const watch = connection.watch;
    if (!watch) return;
    let w = this.connections.get(connection);
    if (!w) this.connections.set(connection, (w = { diagnosis: new ConnectionDiagnosis(), watch, checking: false }));
    if (w.watch !== watch) {
      // A new watch: its first change set is the whole model again, and what was confirmed is no longer evidence.
      w.watch = watch;
      const cleared = w.diagnosis.cycles;
      w.diagnosis.restart();
      if (cleared.length) this.changeEmitter.fire({ connection, report: { confirmed: [], appeared: [], cleared } });
    }
    w.diagnosis.observe(changes, Date.now(), (lock, holder) => connection.clock.holdingSince(lock, holder)?.at);
    if (w.diagnosis.unsettled) this.schedule(connection, w);
  }

  private schedule(connection: C, w: Watched): void {
    if (w.timer || w.checking) return;
    w.timer = setTimeout(() => {
      w.timer = undefined;
      void this.check(connection, w);
    }, this.delayMs);
  }

  /** A read of the graph once the watch caught up with the store; a cycle still unconfirmed asks for another. */
  private async check(connection: C, w: Watched): Promise<void> {
    const watch = w.watch;
    if (!watch || connection.watch !== watch) return;
    w.checking = true;
    try {
      await watch.sync();
    } catch {
      return; // not live: the next change set asks again
    } finally {
      w.checking = false;
    }
    if (connection.watch !== watch || this.connections.get(connection) !== w) return;
    const report = w.diagnosis.check(Date.now());
    if (report.appeared.length || report.cleared.length) this.changeEmitter.fire({ connection, report });
    if (w.diagnosis.pending) this.schedule(connection, w);
  }

  private forget(connection: C, w: Watched): void {
    clearTimeout(w.timer);
    this.connections.delete(connection);
  }
}

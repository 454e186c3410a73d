import type { LockBackend, LockWatch } from '../../src/core/backend';
import { toProfile, type ConnectionSettings } from '../../src/core/connectionSettings';
import type { Cycle } from '../../src/core/diagnosis/cycle';
import type { Inversion } from '../../src/core/diagnosis/inversions';
import type { TtlFit } from '../../src/core/diagnosis/ttlFit';
import { Emitter } from '../../src/core/emitter';
import { displayKey } from '../../src/core/keys';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import { memberLiveness, type Liveness } from '../../src/core/liveness';
import { LockClock } from '../../src/core/lockHealth';
import { holderCount, members, type ChangeSet } from '../../src/core/lockState';
import { LockStats } from '../../src/core/lockStats';
import { openBackend } from '../../src/core/stores';
import { Diagnoses } from '../../src/extension/diagnosis';

/** What the diagnosis of one connection says at one moment, as VS Code would show it. */
export interface Findings {
  readonly deadlocks: readonly Cycle[];
  readonly inversions: readonly Inversion[];
  readonly ttlFits: readonly TtlFit[];
  /** Every holder of every lock, with what its liveness says. */
  readonly holders: readonly { readonly lock: string; readonly owner: string; readonly liveness: Liveness }[];
}

/**
 * One connection watched and diagnosed as the extension does it: its watch feeds a LockClock (connections.ts), the
 * lock statistics (lockRecords.ts) and the extension's own Diagnoses, with the extension's default sample and poll
 * intervals, so that a test reads what VS Code would tell of it.
 */
export class DiagnosedWatch {
  readonly clock = new LockClock();
  readonly stats = new LockStats();
  private readonly locksEmitter = new Emitter<{ readonly connection: DiagnosedWatch; readonly changes: ChangeSet }>();
  private readonly leasesEmitter = new Emitter<{ readonly connection: DiagnosedWatch; readonly infos: readonly LeaseInfo[] }>();
  private readonly diagnoses: Diagnoses<DiagnosedWatch>;
  readonly watch: LockWatch;

  private constructor(
    readonly name: string,
    private readonly backend: LockBackend,
    prefixes: readonly string[],
  ) {
    this.diagnoses = new Diagnoses<DiagnosedWatch>({
      onDidChangeLocks: this.locksEmitter.event,
      onDidChangeLeases: this.leasesEmitter.event,
      onDidChange: new Emitter<void>().event,
      all: () => [this],
    });
    const watch = backend.watch(
      prefixes.map((p) => Buffer.from(p)),
      { leaseSampleIntervalMs: 2000, pollIntervalMs: 1000 },
    );
    this.watch = watch;
    const options = { hasLeases: backend.leases !== undefined, hasRevisions: backend.history !== undefined, sampledTtls: backend.capabilities.ttl, lease: (id: string) => watch.lease(id) };
    watch.onDidChangeLocks((changes) => {
      this.clock.observe(changes);
      this.locksEmitter.fire({ connection: this, changes });
      this.stats.observe(name, changes, options);
    });
    watch.onDidChangeLeases((infos) => {
      this.leasesEmitter.fire({ connection: this, infos });
      this.stats.observeLeases(name, infos);
    });
  }

  /** A connection of the demo's (demo/connections.ts), watching from now. */
  static async open(settings: ConnectionSettings): Promise<DiagnosedWatch> {
    const backend = await openBackend(toProfile(settings, {}, []));
    const watched = new DiagnosedWatch(settings.name, backend, settings.prefixes ?? []);
    await watched.watch.start();
    return watched;
  }

  findings(now = Date.now()): Findings {
    const d = this.diagnoses.of(this);
    const locks = this.watch.locks();
    return {
      deadlocks: d?.cycles ?? [],
      inversions: d?.inversionList(now) ?? [],
      ttlFits: locks.flatMap((l) => this.diagnoses.findings(this, l, this.stats.holds(this.name, l.id)).ttlFit ?? []),
      holders: locks.flatMap((l) =>
        members(l)
          .slice(0, holderCount(l))
          .map((m) => ({ lock: displayKey(l.name), owner: m.owner, liveness: memberLiveness(m, m.lease ? this.watch.lease(m.lease) : undefined, now) })),
      ),
    };
  }

  dispose(): void {
    this.diagnoses.dispose();
    this.watch.dispose();
    this.backend.close();
  }
}

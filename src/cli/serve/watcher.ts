/**
 * One connection of serve's config, watched for as long as serve runs: its backend opened, its prefixes watched, its
 * change sets turned into LockEvents. A store that cannot be opened or read is tried again forever, with capped
 * exponential backoff and jitter; once watching, the store's own watch reconnects and resyncs by itself. Read-only:
 * it never acquires or releases.
 */
import { ExponentialBackoff, type IBackoff } from 'cockatiel';
import type { LeaseOperations, LiveState, LiveStatus, LockBackend, LockWatch } from '../../core/backend';
import { toProfile } from '../../core/connectionSettings';
import type { Disposable } from '../../core/emitter';
import { errorMessage } from '../../core/errors';
import { holdEnd, type HoldEnd } from '../../core/history';
import type { ObserveOptions } from '../../core/holdObservation';
import { normalizePrefixes } from '../../core/keys';
import type { LeaseInfo } from '../../core/leaseInfo';
import type { LockEvent } from '../../core/lockEventTypes';
import { LockEvents, type LockNow, type Observed } from '../../core/lockEvents';
import type { LockState } from '../../core/lockState';
import type { LockTableSpec } from '../../core/profile';
import { sleep } from '../../core/sleep';
import { openBackend, storeOf } from '../../core/stores';
import type { ServeConnection } from './config';
import { ConnectionDiagnosis, DIAGNOSE_INTERVAL_MS } from '../../core/diagnosis/connectionDiagnosis';
import type { Log } from './log';
import type { Watched } from './metrics';

export interface WatcherOptions {
  readonly log: Log;
  readonly lockTables: readonly LockTableSpec[];
  /**
   * Every batch of the watch's events, in order (a change set's, with how etcd holds ended asked of the store), and
   * whether the change set was a full read of the store (the first, or one after a break: what it did not find is gone).
   */
  readonly onEvents: (events: readonly LockEvent[], read: { readonly connection: string; readonly store: string; readonly full: boolean }) => void;
  /** First and greatest pause between tries to open the store (ms). */
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
  /** How often the wait-for graph is read (DIAGNOSE_INTERVAL_MS). */
  readonly diagnoseIntervalMs?: number;
}

const BACKOFF = { initialMs: 500, maxMs: 30_000 };
const LEASE_SAMPLE_MS = 2000;
/**
 * Pushed changes are gathered this long before they are read (WatchOptions.readDelayMs): a handoff is one read, not
 * two, for a metric scraped every 15 s. Both ends of a hold are seen that much later: its duration is as exact as before,
 * within the change sets' own coalescing (100 ms).
 */
const READ_DELAY_MS = 100;

export class ConnectionWatcher implements Watched {
  private readonly events: LockEvents;
  private readonly diagnosis = new ConnectionDiagnosis();
  private diagnosing?: NodeJS.Timeout;
  private readonly backoff: ExponentialBackoff<unknown>;
  private backend?: LockBackend;
  private watch?: LockWatch;
  private subscriptions: Disposable[] = [];
  private status: LiveStatus = { state: 'loading' };
  private readonly stopped = new AbortController();
  private running = false;
  /** Batches of events in order: settling how etcd holds ended asks the store, and must not reorder them. */
  private delivery: Promise<void> = Promise.resolve();
  /** Its first full read is done (readiness). */
  ready = false;
  private resolveFirstRead!: () => void;
  /** Resolves at its first full read. */
  readonly firstRead = new Promise<void>((resolve) => (this.resolveFirstRead = resolve));

  constructor(
    private readonly connection: ServeConnection,
    private readonly options: WatcherOptions,
  ) {
    this.events = new LockEvents(connection.settings.name);
    const { initialMs, maxMs } = options.backoff ?? BACKOFF;
    this.backoff = new ExponentialBackoff({ initialDelay: initialMs, maxDelay: maxMs });
  }

  get name(): string {
    return this.connection.settings.name;
  }

  get store(): string {
    return storeOf(this.connection.settings.store).kind;
  }

  get state(): LiveState {
    return this.status.state;
  }

  get up(): boolean {
    return this.watch !== undefined && this.status.state === 'live';
  }

  unorderedLocks(): Iterable<LockState> {
    return this.watch?.unordered() ?? [];
  }

  lock(id: string): LockState | undefined {
    return this.watch?.lock(id);
  }

  lease(id: string): LeaseInfo | undefined {
    return this.watch?.lease(id);
  }

  now(lockId: string): LockNow | undefined {
    return this.events.now(lockId);
  }

  deadlockCycles(): number {
    return this.diagnosis.deadlocks;
  }

  lockOrderInversions(now: number): number {
    return this.diagnosis.inversions(now);
  }

  start(): void {
    if (!this.running) void this.run();
    this.running = true;
  }

  /**
   * Stops watching and closes the store's connection; resolves once every event seen was delivered. An open still
   * under way (a store slow to answer) is not waited for: it closes what it opened when it ends.
   */
  async close(): Promise<void> {
    this.stopped.abort();
    this.stopWatch();
    this.status = { state: 'closed' };
    await this.delivery;
  }

  private async run(): Promise<void> {
    let pause: IBackoff<unknown> | undefined;
    while (!this.stopped.signal.aborted) {
      try {
        await this.open();
        return;
      } catch (e) {
        this.stopWatch();
        if (this.stopped.signal.aborted) return;
        pause = (pause ?? this.backoff).next(undefined);
        const retryInMs = Math.round(pause.duration);
        this.status = { state: 'reconnecting' };
        this.options.log('warn', 'cannot watch the store; trying again', { connection: this.name, store: this.store, error: errorMessage(e), retryInMs });
        await sleep(retryInMs, this.stopped.signal);
      }
    }
  }

  private async open(): Promise<void> {
    const { settings, secrets } = this.connection;
    const backend = await openBackend(toProfile(settings, secrets, this.options.lockTables));
    if (this.stopped.signal.aborted) return backend.close();
    this.backend = backend;
    const prefixes = normalizePrefixes(settings.prefixes.map((p) => Buffer.from(p)));
    // No countdowns: a TTL's is read when scraped. Redis' 2,000 counted down and etcd's leases asked and told every 2 s
    // were two fifths of what serve cost with nothing changing (docs/BENCHMARKS.md, serve, the third round).
    const log = (m: string) => this.options.log('warn', m, { connection: this.name, store: this.store });
    const watch = backend.watch(prefixes, { leaseSampleIntervalMs: LEASE_SAMPLE_MS, pollIntervalMs: this.connection.pollMs, countdowns: false, readDelayMs: READ_DELAY_MS, log });
    this.watch = watch;
    this.events.restart();
    this.diagnosis.restart();
    const observe: ObserveOptions = { hasLeases: backend.leases !== undefined, hasRevisions: backend.history !== undefined, sampledTtls: backend.capabilities.ttl, lease: (id) => watch.lease(id), ownerLives: (id) => watch.ownerLives?.(id) };
    this.subscriptions = [
      watch.onDidChangeLocks((changes) => {
        this.diagnosis.observe(changes, Date.now());
        this.deliver(this.events.observe(changes, observe, Date.now()), backend.leases, changes.resynced);
      }),
      watch.onDidChangeLeases((infos) => this.events.observeLeases(infos)),
      watch.onDidChangeStatus((status) => this.noteStatus(status)),
    ];
    await watch.start();
    this.diagnosing = setInterval(() => void this.diagnose(watch), this.options.diagnoseIntervalMs ?? DIAGNOSE_INTERVAL_MS);
    this.ready = true;
    this.resolveFirstRead();
    this.noteStatus(watch.status.state === 'loading' ? { ...watch.status, state: 'live' } : watch.status);
  }

  private noteStatus(status: LiveStatus): void {
    if (this.stopped.signal.aborted) return;
    const was = this.status;
    this.status = status;
    if (was.state === status.state && was.error?.message === status.error?.message) return;
    const level = status.state === 'live' ? 'info' : 'warn';
    const fields = { connection: this.name, store: this.store, state: status.state, ...(status.error ? { error: status.error.message } : {}), ...(status.detail ? { detail: status.detail } : {}) };
    this.options.log(level, status.state === 'live' ? 'watching' : `watch ${status.state}`, fields);
  }

  private deliver(observed: Observed, leases: LeaseOperations | undefined, full: boolean): void {
    const read = { connection: this.name, store: this.store, full };
    this.delivery = this.delivery
      .then(async () => this.options.onEvents(leases && observed.unsettled.length ? await settled(observed, leases) : observed.events, read))
      .catch((e: unknown) => this.options.log('error', 'handling lock events failed', { connection: this.name, error: errorMessage(e) }));
  }

  /**
   * Reads the graph, once the watch has caught up with the store when there is a cycle to confirm or clear, and logs
   * deadlocks found and cleared. Only then: the sync of a store that is read rather than streamed is a whole read (a
   * SCAN of Redis, every znode under ZooKeeper's roots, a SQL poll), which at 10,000 locks was most of what serve cost
   * with nothing happening (docs/BENCHMARKS.md, serve). The read without a sync still forgets a cycle seen once and gone.
   */
  private async diagnose(watch: LockWatch): Promise<void> {
    if (this.diagnosis.unsettled) {
      try {
        await watch.sync();
      } catch {
        return; // not live: the next tick reads again
      }
    }
    if (this.watch !== watch) return;
    const { appeared, cleared } = this.diagnosis.check(Date.now());
    const fields = { connection: this.name, store: this.store };
    for (const c of appeared) this.options.log('warn', 'deadlock', { ...fields, owners: c.members.length });
    for (const c of cleared) this.options.log('info', 'deadlock cleared', { ...fields, owners: c.members.length });
  }

  private stopWatch(): void {
    clearInterval(this.diagnosing);
    this.subscriptions.forEach((s) => s.dispose());
    this.subscriptions = [];
    this.watch?.dispose();
    this.watch = undefined;
    this.backend?.close();
    this.backend = undefined;
  }
}

/**
 * How the unsettled holds ended, asked of the store (does the lease of a deleted key live on?). An unanswered question
 * leaves the end unknown (null), as the store cannot be asked later about a lease long gone either.
 */
async function settled({ events, unsettled }: Observed, leases: LeaseOperations): Promise<LockEvent[]> {
  const ends = new Map<LockEvent, HoldEnd>();
  // One question per lease: a session's locks released together share it.
  const asked = new Map<string, Promise<boolean | undefined>>();
  const lives = (lease: string) => asked.get(lease) ?? asked.set(lease, leases.lives(lease).catch(() => undefined)).get(lease)!;
  await Promise.all(
    unsettled.map(async ({ event, lease }) => {
      const end = holdEnd(lease, await lives(lease));
      if (end) ends.set(event, end);
    }),
  );
  return events.map((e) => (ends.has(e) ? { ...e, how: ends.get(e)! } : e));
}

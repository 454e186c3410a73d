/**
 * serve's /metrics (prom-client). Gauges are computed when scraped, from the watches' live models in memory, so a
 * scrape never waits on a store; counters and histograms are fed by the watches' LockEvents. Which locks have series
 * of their own is lockSeries.ts's. Owners and tokens are never labels: a Redis lock's token is enough to release it.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { LiveState } from '../../core/backend';
import type { LeaseInfo } from '../../core/leaseInfo';
import type { LockEvent } from '../../core/lockEventTypes';
import type { LockNow } from '../../core/lockEvents';
import type { MatchedForceRelease } from '../../core/recording/recordedHold';
import { holderCount, type LockKind, type LockMember, type LockState } from '../../core/lockState';
import { displayKey } from '../../core/keys';
import { remainingTtl } from '../../core/leaseInfo';
import { lockSeries, type Counts, type Listing, type LockRow, type NamePolicy, type Series } from './lockSeries';
import type { Mutable } from '../../shared/mutable';

/** What the metrics read of one connection's watch. */
export interface Watched {
  readonly name: string;
  readonly store: string;
  readonly state: LiveState;
  readonly up: boolean;
  /** Every lock, in no order: a scrape sorts them by its own measure, ties by name (lockSeries.ts). */
  unorderedLocks(): Iterable<LockState>;
  lock(id: string): LockState | undefined;
  lease(id: string): LeaseInfo | undefined;
  now(lockId: string): LockNow | undefined;
  /** Deadlocks confirmed now, and lock pairs seen taken in both orders within the window (diagnosis.ts). */
  deadlockCycles(): number;
  lockOrderInversions(now: number): number;
}

const STATES: readonly LiveState[] = ['loading', 'live', 'resyncing', 'reconnecting', 'closed'];
const STORE = ['connection', 'store'] as const;
const LOCK = ['connection', 'store', 'lock', 'kind'] as const;
const KIND = ['connection', 'store', 'kind'] as const;

/**
 * The summaries of prom-client's event-loop delay histogram. It samples with a timer every 10 ms, which alone cost about
 * 0.5 % of a core in serve (0.9 % in a bare Node process), a tenth of serve with nothing changing (docs/BENCHMARKS.md,
 * serve, the eleventh round); sampled coarser, each delay it records is at least that period, so its figures would tell
 * the period, not the lag.
 */
const EVENT_LOOP_DELAY_SUMMARIES = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'].map((s) => `nodejs_eventloop_lag_${s}_seconds`);

/**
 * prom-client's process and Node.js metrics, less EVENT_LOOP_DELAY_SUMMARIES: `nodejs_eventloop_lag_seconds`, measured
 * at each scrape, stays. Their histogram still runs, once a second (the precision), where it costs nothing.
 */
function processMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1000 });
  for (const name of EVENT_LOOP_DELAY_SUMMARIES) registry.removeSingleMetric(name);
}

/** A lock's counts, and what names it once it is gone: one object, not two, for each of 10,000 locks. */
interface Tally extends Mutable<Counts> {
  readonly name: string;
  readonly kind: LockKind;
  lastActive: number;
}

const zero = (): Mutable<Counts> => ({ acquisitions: 0, handoffs: 0, expiries: 0, ownerLosses: 0, forceReleases: 0 });
/** The counts of a lock nothing was counted for, shared by every such row (see rowOf). */
const NONE: Counts = Object.freeze(zero());

export class ServeMetrics {
  readonly registry = new Registry();
  /** Counter totals per connection and lock id, kept while the lock is in the watch or among the latest gone. */
  private readonly tallies = new Map<string, Map<string, Tally>>();
  /** Totals of locks gone long ago, per connection and kind: counted under `__other__` so no counter goes back. */
  private readonly retired = new Map<string, Map<LockKind, Mutable<Counts>>>();
  private readonly holdSeconds: Histogram<(typeof KIND)[number]>;
  private readonly waitSeconds: Histogram<(typeof KIND)[number]>;
  private listing?: Listing;
  /**
   * Per connection, the names shown of the locks in the watch at the last scrape, by id (a lock's id is its name's
   * bytes): decoding every name again was a tenth of a scrape of 10,000 locks (docs/BENCHMARKS.md, serve).
   */
  private names = new Map<string, Map<string, string>>();

  constructor(
    private readonly watched: readonly Watched[],
    private readonly policy: NamePolicy,
    version: string,
    private readonly clock: () => number = Date.now,
  ) {
    const registers = [this.registry];
    processMetrics(this.registry);
    new Gauge({ name: 'locklens_build_info', help: 'Always 1: the version of locklens serving these metrics.', labelNames: ['version'], registers }).set({ version }, 1);
    const perStore = (name: string, help: string, value: (w: Watched) => number) =>
      new Gauge({ name, help, labelNames: STORE, registers, collect: collectOf((g) => this.watched.forEach((w) => g.set(labels(w), value(w)))) });
    perStore('locklens_store_up', '1 while the watch of the connection is live, else 0.', (w) => Number(w.up));
    new Gauge({
      name: 'locklens_store_watch_state',
      help: 'How the connection is kept current: 1 for its state now (loading, live, resyncing, reconnecting, closed), 0 for the others.',
      labelNames: [...STORE, 'state'],
      registers,
      collect: collectOf((g) => this.watched.forEach((w) => STATES.forEach((state) => g.set({ connection: w.name, store: w.store, state }, Number(w.state === state))))),
    });
    perStore('locklens_deadlock_cycles', 'Deadlocks now: cycles of owners each holding a lock another waits in, seen again after a sync.', (w) => w.deadlockCycles());
    perStore('locklens_lock_order_inversions', 'Lock pairs seen taken in both orders (held one while waiting for the other) within the last hour.', (w) => w.lockOrderInversions(this.clock()));
    perStore('locklens_locks', 'How many locks the watch of the connection sees.', (w) => this.lockCount(w));
    perStore('locklens_locks_unlisted', `Locks in the watch without series of their own (beyond --max-locks, or names dropped), summed into lock="__other__".`, (w) => this.current().unlisted.get(w.name) ?? 0);
    const perLock = (name: string, help: string, value: (s: Series) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: LOCK,
        registers,
        collect: collectOf((g) => {
          for (const s of this.current().series) {
            const v = s.present ? value(s) : null;
            if (v !== null) g.set(lockLabels(s), v);
          }
        }),
      });
    perLock('locklens_lock_holders', 'Members holding the lock now.', (s) => s.holders);
    perLock('locklens_lock_waiters', 'Members queued for the lock now.', (s) => s.waiters);
    perLock('locklens_lock_oldest_hold_seconds', 'How long its holder has held the lock (found holding: at least that long); 0 when free.', (s) => s.holdSeconds);
    perLock('locklens_lock_oldest_wait_seconds', 'How long its longest-queued member has waited; 0 when none waits.', (s) => s.waitSeconds);
    perLock('locklens_lock_ttl_seconds', 'The least TTL left among its holders (no series when none is sampled).', (s) => s.ttlSeconds);
    perLock('locklens_lock_renewal_stalled', '1 when a holder\'s TTL is not being renewed.', (s) => Number(s.stalled));
    perLock('locklens_lock_holder_never_expires', '1 when a holder has nothing to expire it: held until someone deletes it.', (s) => Number(s.neverExpires));
    const counter = (name: string, help: string, key: keyof Counts) =>
      new Counter({
        name,
        help,
        labelNames: LOCK,
        registers,
        collect: collectOf((c) => {
          for (const s of this.current().series) c.inc(lockLabels(s), s.counts[key]);
        }),
      });
    counter('locklens_lock_acquisitions_total', 'Holds seen beginning (not those found in place at a first read or a reload).', 'acquisitions');
    counter('locklens_lock_handoffs_total', 'Holds that began as another ended, taken by a member that was queued for it.', 'handoffs');
    counter('locklens_lock_expiries_total', 'Holds seen ending by their TTL running out (the store said so, or its countdown was seen to end).', 'expiries');
    counter('locklens_lock_owner_losses_total', "Holds seen ending with their owner's session or connection (a ZooKeeper session gone, a SQL connection closed).", 'ownerLosses');
    // A read-only watcher sees no force release: the recorded history tells them (`locklens unlock --force --data DIR`).
    counter('locklens_lock_force_releases_total', 'Holds force-released through LockLens, as its recorded history tells (serve with data:).', 'forceReleases');
    this.holdSeconds = new Histogram({ name: 'locklens_lock_hold_duration_seconds', help: 'How long holds seen from start to end lasted.', labelNames: KIND, registers, buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400] });
    this.waitSeconds = new Histogram({ name: 'locklens_lock_wait_duration_seconds', help: 'How long waits seen from start to end lasted, granted or given up.', labelNames: KIND, registers, buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900] });
  }

  /** Counts a watch's events; call it with every batch, in order. */
  count(events: readonly LockEvent[]): void {
    for (const e of events) {
      const store = this.watched.find((w) => w.name === e.connection)?.store ?? '';
      const t = this.tally(e.connection, e.lockId, e.lock, e.kind, e.at);
      const kind = { connection: e.connection, store, kind: e.kind };
      if (e.type === 'holdStarted') {
        if (e.exact) t.acquisitions++;
        if (e.handoff) t.handoffs++;
      } else if (e.type === 'holdEnded') {
        if (e.how === 'expired') t.expiries++;
        if (e.how === 'ownerLost') t.ownerLosses++;
        if (e.heldMs !== null) this.holdSeconds.observe(kind, e.heldMs / 1000);
      } else if (e.type === 'waitEnded' && e.waitedMs !== null) {
        this.waitSeconds.observe(kind, e.waitedMs / 1000);
      }
    }
  }

  /** Counts LockLens's force releases, as the recorded history matched them with the holds they ended. */
  countForceReleases(found: readonly MatchedForceRelease[], now = Date.now()): void {
    for (const m of found) this.tally(m.connection, m.lockId, m.lock, m.kind, now).forceReleases++;
  }

  private tally(connection: string, lockId: string, name: string, kind: LockKind, at: number): Tally {
    const tallies = this.tallies.get(connection) ?? this.tallies.set(connection, new Map()).get(connection)!;
    const t = tallies.get(lockId) ?? tallies.set(lockId, { name, kind, lastActive: at, ...zero() }).get(lockId)!;
    t.lastActive = Math.max(t.lastActive, at);
    return t;
  }

  /** The series of this scrape: worked out once for every gauge and counter that asks during it. */
  private current(): Listing {
    if (!this.listing) {
      this.listing = lockSeries(this.rows(), this.policy);
      queueMicrotask(() => (this.listing = undefined));
    }
    return this.listing;
  }

  /** How many locks `w`'s watch has at this scrape: the names the scrape's rows were made with. */
  private lockCount(w: Watched): number {
    this.current();
    return this.names.get(w.name)?.size ?? 0;
  }

  /** A row per lock in the watches and per lock gone whose counters are kept. */
  private rows(): LockRow[] {
    const now = this.clock();
    const rows: LockRow[] = [];
    for (const w of this.watched) {
      const tallies = this.tallies.get(w.name) ?? new Map<string, Tally>();
      this.retire(w, tallies);
      const known = this.names.get(w.name);
      const names = new Map<string, string>();
      for (const lock of w.unorderedLocks()) {
        const name = known?.get(lock.id) ?? displayKey(lock.name);
        names.set(lock.id, name);
        rows.push(rowOf(w, lock, name, tallies.get(lock.id), now));
      }
      this.names.set(w.name, names);
      for (const [id, t] of tallies) if (!w.lock(id)) rows.push(idleRow(w, t.name, t.kind, t, false, t.lastActive));
      for (const [kind, counts] of this.retired.get(w.name) ?? []) rows.push(idleRow(w, '', kind, counts, true, 0));
    }
    return rows;
  }

  /** Keeps the counters of at most maxLocks locks gone from the watch (the latest active); the rest go to `__other__`. */
  private retire(w: Watched, tallies: Map<string, Tally>): void {
    const gone: [string, Tally][] = [];
    for (const entry of tallies) if (!w.lock(entry[0])) gone.push(entry);
    if (gone.length <= this.policy.maxLocks) return;
    for (const [id, t] of gone.sort(byLatestActive).slice(this.policy.maxLocks)) {
      const byKind = this.retired.get(w.name) ?? this.retired.set(w.name, new Map()).get(w.name)!;
      const sum = byKind.get(t.kind) ?? byKind.set(t.kind, zero()).get(t.kind)!;
      sum.acquisitions += t.acquisitions;
      sum.handoffs += t.handoffs;
      sum.expiries += t.expiries;
      sum.ownerLosses += t.ownerLosses;
      sum.forceReleases += t.forceReleases;
      tallies.delete(id);
    }
  }
}

function byLatestActive([, a]: [string, Tally], [, b]: [string, Tally]): number {
  return b.lastActive - a.lastActive;
}

function labels(w: Watched): Record<(typeof STORE)[number], string> {
  return { connection: w.name, store: w.store };
}

function lockLabels(s: Series): Record<(typeof LOCK)[number], string> {
  return { connection: s.connection, store: s.store, lock: s.lock, kind: s.kind };
}

/*
 * A scrape's rows are made by these two functions alone, each a literal of the same fields in the same order, and the
 * scrape's passes over them are written as loops in functions that live as long as serve, not as callbacks made anew
 * per scrape: rows of several shapes (spreads of a shared part) and callbacks made per scrape had V8 drop and
 * recompile the scrape's optimized code at every scrape (docs/BENCHMARKS.md, serve, the sixth round).
 */

/** A lock gone from the watch whose counters are kept, or (retired) the sum of those long gone. */
function idleRow(w: Watched, name: string, kind: LockKind, counts: Counts, retired: boolean, lastActive: number): LockRow {
  return {
    connection: w.name,
    store: w.store,
    name,
    kind,
    counts,
    present: false,
    retired,
    holders: 0,
    waiters: 0,
    holdSeconds: 0,
    waitSeconds: 0,
    ttlSeconds: null,
    stalled: false,
    neverExpires: false,
    lastActive,
  };
}

/**
 * Written out field by field: spreading a shared row and then overriding its fields made V8 build every row on its
 * slow path, a third of a scrape of 10,000 locks (docs/BENCHMARKS.md, serve). Its holders are walked without building
 * arrays, as every lock is at every scrape, and its counts are the lock's tally itself, not a copy: lockSeries copies
 * what it sums, in the same tick.
 */
function rowOf(w: Watched, lock: LockState, name: string, tally: Tally | undefined, now: number): LockRow {
  let ttlSeconds: number | null = null;
  let stalled = false;
  let neverExpires = false;
  const shared = lock.sharedWith ?? NO_MEMBERS;
  for (let i = -1; lock.holder && i < shared.length; i++) {
    const m = i < 0 ? lock.holder : shared[i];
    if (m.expiresWith === 'nothing') neverExpires = true;
    const info = m.lease ? w.lease(m.lease) : undefined;
    if (info?.state !== 'alive') continue;
    const ttl = remainingTtl(info, now);
    ttlSeconds = ttlSeconds === null ? ttl : Math.min(ttlSeconds, ttl);
    stalled ||= info.stalled;
  }
  const since = w.now(lock.id);
  return {
    connection: w.name,
    store: w.store,
    name,
    kind: lock.kind,
    counts: tally ?? NONE,
    present: true,
    retired: false,
    holders: holderCount(lock),
    waiters: lock.waiters.length,
    holdSeconds: ageSeconds(since?.heldSince, now),
    waitSeconds: ageSeconds(since?.waitingSince, now),
    ttlSeconds,
    stalled,
    neverExpires,
    lastActive: tally?.lastActive ?? 0,
  };
}

const NO_MEMBERS: readonly LockMember[] = [];

function ageSeconds(since: number | null | undefined, now: number): number {
  return since == null ? 0 : Math.max(0, (now - since) / 1000);
}

/** A collect that starts from nothing each scrape: series of locks gone are not left behind. */
function collectOf<M extends { reset(): void }>(fill: (metric: M) => void): (this: M) => void {
  return function (this: M) {
    this.reset();
    fill(this);
  };
}

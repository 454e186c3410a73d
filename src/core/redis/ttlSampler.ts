/**
 * The TTLs of what a Redis watch's lock members expire with: sampled by every read, and in between by a sweep every
 * sample interval (PTTL for keys, the deadline for a fair waiter), so that views count down and see a holder stall.
 * A key whose TTL changes the server tells of (keyspace notifications, which say `expire`, `persist`, `set`, `del` and
 * `expired`, each followed at once by a read of its lock: not in a cluster) is not asked: its last sample counted down is what PTTL would say.
 * With 1,000 such keys that was 500 PTTL a second for nothing (see BENCHMARKS, "Load on the store"). A key whose count
 * ran out is asked, so that an expiry Redis has not yet acted on is found as soon as before.
 */
import type { LeaseInfo } from '../leaseInfo';
import { members, type LockState } from '../lockState';
import type { TtlSource } from './recognize';
import type { Topology } from './topology';
import { TtlTable } from './ttlTable';

export class TtlSampler {
  private readonly ttls = new TtlTable();
  private sources = new Map<string, TtlSource>();
  /** How many members of the watch's locks expire with each TTL: one no member refers to any more is forgotten. */
  private readonly refs = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly topology: Topology,
    private readonly sampleMs: number,
    /** Leases whose TTL samples changed. */
    private readonly changed: (infos: readonly LeaseInfo[]) => void,
    /** A key the sweep found gone: the lock it belongs to is to be read now rather than at the next poll. */
    private readonly expired: (key: Buffer) => void,
    /** The server says when a key expires (see LeaseInfo.expiryEvents). */
    private readonly expiryEvents: () => boolean = () => false,
    /** The server tells every change of this key's TTL now (keyspace notifications on, the key among those followed). */
    private readonly told: (key: Buffer) => boolean = () => false,
    /**
     * Whether a told key's countdown is folded in and told at every sweep (WatchOptions.countdowns); else only when it
     * crosses the stall line, so that a quiet sweep of 2,000 such keys builds and tells nothing.
     */
    private readonly countdowns = true,
  ) {}

  lease(id: string): LeaseInfo | undefined {
    const info = this.ttls.get(id);
    return info && this.stamped(info);
  }

  /** The server said `key` expired: true when it is one of the keys sampled (its info is then told, once). */
  toldExpired(key: Buffer): boolean {
    const told = [...this.sources.values()].filter((s) => s.deadline === undefined && s.keys[0]?.equals(key)).flatMap((s) => this.ttls.expire(s.id) ?? []);
    if (told.length) this.changed(this.allStamped(told));
    return told.length > 0;
  }

  private allStamped(infos: readonly LeaseInfo[]): LeaseInfo[] {
    const stamped: LeaseInfo[] = [];
    for (const info of infos) stamped.push(this.stamped(info));
    return stamped;
  }

  /**
   * `info` marked with whether the server tells expiries now (it may stop: a CONFIG SET of its notifications). The mark
   * is made once per sample, not at every read (serve's scrapes read every holder's TTL, and copies made at each were
   * 2-3 % of its samples), and takes the sample's place in the table, so that a lease is kept once, not twice
   * (docs/BENCHMARKS.md, serve, the tenth round).
   */
  private stamped(info: LeaseInfo): LeaseInfo {
    const told = this.expiryEvents();
    return (info.expiryEvents ?? false) === told ? info : this.ttls.markExpiryEvents(info, told);
  }

  /** A full read's TTL sources: they replace all there were. */
  replace(sources: Map<string, TtlSource>): void {
    this.sources = sources;
  }

  /** A partial read's TTL sources. */
  add(sources: Map<string, TtlSource>): void {
    for (const [id, s] of sources) this.sources.set(id, s);
  }

  /** A full read's samples folded in: whatever no member of `locks` (every lock now) refers to is forgotten. */
  observe(samples: readonly TtlSource[], now: number, locks: Iterable<LockState>): void {
    this.refs.clear();
    for (const lock of locks) for (const id of leasesOf(lock)) this.refs.set(id, (this.refs.get(id) ?? 0) + 1);
    for (const id of [...this.sources.keys()]) if (!this.refs.has(id)) this.sources.delete(id);
    this.fold(samples, now, this.ttls.retain(this.refs, now));
  }

  /**
   * A partial read's samples folded in, given the locks it replaced (`before`, as they were) and what they are now
   * (`after`; undefined: gone). Counting who refers to each TTL, rather than walking every lock to find the ones no
   * lock refers to any more, made a notification's read cost the same whatever the keyspace (docs/BENCHMARKS.md, serve).
   */
  observeChanged(samples: readonly TtlSource[], now: number, before: readonly (LockState | undefined)[], after: readonly (LockState | undefined)[]): void {
    const dropped = new Set<string>();
    for (const lock of before) {
      if (!lock) continue;
      for (const id of leasesOf(lock)) {
        const n = (this.refs.get(id) ?? 0) - 1;
        if (n > 0) this.refs.set(id, n);
        else (this.refs.delete(id), dropped.add(id));
      }
    }
    for (const lock of after) if (lock) for (const id of leasesOf(lock)) this.refs.set(id, (this.refs.get(id) ?? 0) + 1);
    for (const s of samples) if (!this.refs.has(s.id)) dropped.add(s.id);
    for (const id of dropped) if (this.refs.has(id)) dropped.delete(id);
    for (const id of dropped) this.sources.delete(id);
    this.fold(samples, now, this.ttls.drop(dropped, now));
  }

  private fold(samples: readonly TtlSource[], now: number, gone: LeaseInfo[]): void {
    const referred: TtlSource[] = [];
    for (const s of samples) if (this.refs.has(s.id)) referred.push(s);
    const changed = this.ttls.observe(referred, now);
    if (changed.length || gone.length) this.changed(this.allStamped([...changed, ...gone]));
  }

  /** Sweeps every sample interval until stopped. */
  start(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.sweep().catch(() => undefined).finally(() => this.start()), this.sampleMs);
  }

  // Loops, not callbacks made per sweep: see byName (lockState.ts) on what V8 does with those every few seconds.
  async sweep(): Promise<void> {
    if (this.stopped) return;
    const now = Date.now();
    const counted: TtlSource[] = [];
    const keyed: TtlSource[] = [];
    const waiting: TtlSource[] = [];
    for (const s of this.sources.values()) {
      const left = s.deadline === undefined && this.told(s.keys[0]) ? this.ttls.countedDown(s.id, now) : undefined;
      if (left === undefined) (s.deadline === undefined ? keyed : waiting).push(s);
      else if (this.countdowns || this.ttls.stallTurns(s.id, left, s.stallFraction)) counted.push({ ...s, ms: left });
    }
    let pttls: (number | undefined)[];
    try {
      pttls = await this.topology.pttls(keyed);
    } catch {
      return; // the next poll reports the connection
    }
    const samples = counted;
    for (let i = 0; i < keyed.length; i++) {
      const ms = pttls[i];
      samples.push({ ...keyed[i], ms: ms === undefined || ms === -1 ? keyed[i].ms : ms });
    }
    for (const s of waiting) samples.push({ ...s, ms: Math.max(0, s.deadline! - now) });
    const changed = this.ttls.observe(samples, now);
    if (changed.length) this.changed(this.allStamped(changed));
    // A key that expired is a lock gone (or a fair lock left with waiters): read it now rather than at the next poll.
    for (let i = 0; i < keyed.length; i++) if (pttls[i] === -2) this.expired(keyed[i].keys[0]);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

/** The TTL id (`lease`) of each member of `lock` that has one, once per member. */
function leasesOf(lock: LockState): string[] {
  return members(lock).flatMap((m) => (m.lease ? [m.lease] : []));
}

/**
 * Redis TTLs as LeaseInfo. Redis never says what TTL a key was given, only what is left (PTTL), so the granted TTL is
 * the highest value seen since the last refresh (or the first sample): a Redisson watchdog renewing a 30 s lease every
 * 10 s shows as a TTL that jumps back up, and a holder that stopped renewing as one that falls below half of it.
 */
import { belowStallLine, observeLease, remainingTtl, type LeaseInfo } from '../leaseInfo';
import type { TtlSource } from './recognize';

/** PTTL is exact to the millisecond: a rise of more than this since the last sample counted down is a refresh. */
const REFRESH_SLACK_S = 0.25;

export class TtlTable {
  private readonly infos = new Map<string, LeaseInfo>();
  private readonly peaks = new Map<string, number>();

  get(id: string): LeaseInfo | undefined {
    return this.infos.get(id);
  }

  /** Milliseconds left by `id`'s last sample counted down to `at`; undefined without a live sample, or once it ran out. */
  countedDown(id: string, at = Date.now()): number | undefined {
    const info = this.infos.get(id);
    const left = info && info.state === 'alive' ? remainingTtl(info, at) * 1000 : 0;
    return left > 0 ? left : undefined;
  }

  /**
   * Whether a sample of `ms` left, `id`'s countdown, would turn its stalled flag (see observeLease): any other such
   * sample only tells the countdown again.
   */
  stallTurns(id: string, ms: number, stallFraction = 0.5): boolean {
    const info = this.infos.get(id);
    return !info || belowStallLine(ms / 1000, this.peaks.get(id) ?? 0, stallFraction) !== info.stalled;
  }

  ids(): string[] {
    return [...this.infos.keys()];
  }

  /** Folds samples in; returns the infos that were sampled. `ms` -2 (or any negative but -1): expired. */
  observe(sources: Iterable<TtlSource>, at = Date.now()): LeaseInfo[] {
    const out: LeaseInfo[] = [];
    for (const s of sources) {
      const previous = this.infos.get(s.id);
      const ttl = s.ms < 0 ? -1 : s.ms / 1000;
      let peak = this.peaks.get(s.id);
      if (ttl >= 0) {
        const expected = previous && previous.state === 'alive' ? previous.ttl - (at - previous.observedAt) / 1000 : undefined;
        const refreshed = expected !== undefined && ttl > expected + REFRESH_SLACK_S;
        peak = peak === undefined || refreshed ? ttl : Math.max(peak, ttl);
        this.peaks.set(s.id, peak);
      }
      const info = observeLease(previous, s.id, { ttl, grantedTtl: peak ?? 0, keys: s.keys, at }, s.stallFraction);
      this.infos.set(s.id, info);
      out.push(info);
    }
    return out;
  }

  /**
   * The server said `id`'s key expired: its info, marked so (undefined when not known, or told already). A sweep's
   * PTTL may have found it gone first: its expiry is what evicted it then.
   */
  expire(id: string, at = Date.now()): LeaseInfo | undefined {
    const info = this.infos.get(id);
    if (!info || info.expiryTold) return undefined;
    const gone = info.state === 'alive' ? observeLease(info, id, { ttl: -1, grantedTtl: info.grantedTtl, keys: info.keys, at }) : info;
    const told = { ...gone, expiryTold: true };
    this.infos.set(id, told);
    return told;
  }

  /** `info` marked with whether the server's expiry events tell of it; in the table's place when it is the table's. */
  markExpiryEvents(info: LeaseInfo, told: boolean): LeaseInfo {
    const marked = { ...info, expiryEvents: told };
    if (this.infos.get(info.id) === info) this.infos.set(info.id, marked);
    return marked;
  }

  /** Forgets ids no longer referred to; returns them marked expired, once, for views still showing them. */
  retain(live: ReadonlyMap<string, unknown> | ReadonlySet<string>, at = Date.now()): LeaseInfo[] {
    const unused: string[] = [];
    for (const id of this.infos.keys()) if (!live.has(id)) unused.push(id);
    return this.drop(unused, at);
  }

  /** Forgets `ids`; returns those known marked expired, once, for views still showing them. */
  drop(ids: Iterable<string>, at = Date.now()): LeaseInfo[] {
    const gone: LeaseInfo[] = [];
    for (const id of ids) {
      const info = this.infos.get(id);
      if (!info) continue;
      this.infos.delete(id);
      this.peaks.delete(id);
      if (info.state === 'alive') gone.push(observeLease(info, id, { ttl: -1, grantedTtl: info.grantedTtl, keys: info.keys, at }));
    }
    return gone;
  }

  clear(): void {
    this.infos.clear();
    this.peaks.clear();
  }
}

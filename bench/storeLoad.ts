import { round } from './stats';

/**
 * What LockLens's live watch (the backend's `watch`, with the tree's and serve's defaults: TTLs sampled every 2 s, a
 * store without notifications read every 1 s) sends the store it watches, read from the server's own counters, beside
 * what a peer tool costs the same server. Every figure is a difference of two counter snapshots, so what else talks to
 * the server is taken out by measuring it alone: the counter read itself (two snapshots back to back) and the load
 * generator (its changes alone, the same rate and length). The watch's first read is not in any window: it is told
 * apart as `initial_*`.
 */

/** A server's counters: requests (commands, packets, messages, statements: the store's own unit) and bytes. */
export interface Counters {
  readonly requests: number;
  /** What the server received and sent, bytes; undefined where the server counts none (PostgreSQL; ZooKeeper's sent). */
  readonly bytesIn?: number;
  readonly bytesOut?: number;
  /** Requests by kind (command, gRPC method, statement), to tell what a watch spends them on. */
  readonly byKind: ReadonlyMap<string, number>;
}

export interface Stopper {
  stop(): Promise<void>;
}

/** A refreshing peer's connection, open. */
export interface Refresher {
  refresh(): Promise<unknown>;
  close(): Promise<unknown> | void;
}

/** One store, its 1,000 locks made in its clients' common layout. */
export interface LoadTarget {
  counters(): Promise<Counters>;
  /** Changes the locks `perSecond` times a second (a holder replaced) until stopped. */
  changes(perSecond: number): Stopper;
  /** LockLens's live watch over the locks' prefix, started (its first read done). */
  watch(): Promise<Stopper>;
  /**
   * The peer tool: one that reads everything again every `refreshMs` (its cost is that of one refresh, measured alone,
   * and per second at that period), or one that streams, as etcdctl watch does (its cost is per second, quiet and
   * under the changes).
   */
  readonly peer: { readonly refreshMs: number; open(): Promise<Refresher> } | { readonly refreshMs?: undefined; start(): Promise<Stopper> };
}

interface Delta {
  requests: number;
  bytesIn: number;
  bytesOut: number;
  byKind: Map<string, number>;
}

function minus(a: Counters, b: Counters): Delta {
  const byKind = new Map<string, number>();
  for (const [k, v] of a.byKind) if (v - (b.byKind.get(k) ?? 0) !== 0) byKind.set(k, v - (b.byKind.get(k) ?? 0));
  return { requests: a.requests - b.requests, bytesIn: (a.bytesIn ?? NaN) - (b.bytesIn ?? NaN), bytesOut: (a.bytesOut ?? NaN) - (b.bytesOut ?? NaN), byKind };
}

function less(a: Delta, b: Delta): Delta {
  const byKind = new Map(a.byKind);
  for (const [k, v] of b.byKind) byKind.set(k, (byKind.get(k) ?? 0) - v);
  return { requests: a.requests - b.requests, bytesIn: a.bytesIn - b.bytesIn, bytesOut: a.bytesOut - b.bytesOut, byKind };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The counters' difference over `ms`, with whatever was started before. */
async function window(target: LoadTarget, ms: number): Promise<Delta> {
  const before = await target.counters();
  await sleep(ms);
  return minus(await target.counters(), before);
}

/**
 * `label_req_s`, `label_in_b_s`, `label_out_b_s` (where the server counts bytes) and the kinds that make up most
 * of the requests, per second (`unit` `_per_refresh` with `seconds` 1: per refresh).
 */
function rates(label: string, d: Delta, seconds: number, unit = '_s'): Record<string, number> {
  const out: Record<string, number> = { [`${label}_req${unit}`]: round(d.requests / seconds, 1) };
  if (!Number.isNaN(d.bytesIn)) out[`${label}_in_b${unit}`] = round(d.bytesIn / seconds, 0);
  if (!Number.isNaN(d.bytesOut)) out[`${label}_out_b${unit}`] = round(d.bytesOut / seconds, 0);
  const kinds = [...d.byKind].filter(([, v]) => Math.abs(v) / seconds >= 0.05).sort((a, b) => b[1] - a[1]).slice(0, 8);
  for (const [k, v] of kinds) out[`${label}_${k}${unit}`] = round(v / seconds, 1);
  return out;
}

/** How many locks each store holds while measured. */
export const LOCKS = 1000;

/**
 * The phases, each `quietMs` or `changeMs` long: the counter read alone; the changes alone; LockLens quiet (30 s: one
 * period of a Redis watch's safety read, which falls in it); LockLens under the changes; the peer (see measurePeer).
 */
export async function storeLoad(target: LoadTarget, options: { quietMs?: number; changeMs?: number; perSecond?: number } = {}) {
  const { quietMs = 30_000, changeMs = 10_000, perSecond: rate = 50 } = options;
  const self = minus(await target.counters(), await target.counters());
  const underChanges = async (): Promise<Delta> => {
    const changes = target.changes(rate);
    try {
      return await window(target, changeMs);
    } finally {
      await changes.stop();
    }
  };
  const generator = less(await underChanges(), self);

  const beforeStart = await target.counters();
  const watch = await target.watch();
  let initial: Delta;
  let quiet: Delta;
  let changing: Delta;
  try {
    // The first read and whatever it set off (TTLs of new members sampled soon after) settle first.
    await sleep(1000);
    initial = less(minus(await target.counters(), beforeStart), self);
    quiet = less(await window(target, quietMs), self);
    changing = less(less(await underChanges(), self), generator);
  } finally {
    await watch.stop();
  }

  const peerFigures = await measurePeer(target, quietMs, changeMs, underChanges, self, generator);
  const q = quietMs / 1000;
  const c = changeMs / 1000;
  return {
    locks: LOCKS,
    changes_per_s: rate,
    quiet_s: q,
    change_s: c,
    ...rates('initial', initial, 1, ''),
    ...rates('quiet', quiet, q),
    ...rates('change', changing, c),
    ...peerFigures,
    ...rates('generator', generator, c),
  };
}

/** The mean of several windows. */
function mean(deltas: readonly Delta[]): Delta {
  const n = deltas.length;
  const out: Delta = { requests: 0, bytesIn: 0, bytesOut: 0, byKind: new Map() };
  for (const d of deltas) {
    out.requests += d.requests / n;
    out.bytesIn += d.bytesIn / n;
    out.bytesOut += d.bytesOut / n;
    for (const [k, v] of d.byKind) out.byKind.set(k, (out.byKind.get(k) ?? 0) + v / n);
  }
  return out;
}

/** How many refreshes of a refreshing peer are measured, one at a time. */
const PEER_REFRESHES = 3;

/** A refreshing peer: one refresh at a time, per refresh and per second at its period; a streaming one: quiet and under the changes. */
async function measurePeer(target: LoadTarget, quietMs: number, changeMs: number, underChanges: () => Promise<Delta>, self: Delta, generator: Delta) {
  const { peer } = target;
  if (peer.refreshMs !== undefined) {
    const refresher = await peer.open();
    const deltas: Delta[] = [];
    try {
      for (let i = 0; i < PEER_REFRESHES; i++) {
        const before = await target.counters();
        await refresher.refresh();
        deltas.push(less(minus(await target.counters(), before), self));
      }
    } finally {
      await refresher.close();
    }
    const each = mean(deltas);
    return { peer_refresh_s: peer.refreshMs / 1000, ...rates('peer', each, 1, '_per_refresh'), ...rates('peer', each, peer.refreshMs / 1000) };
  }
  const streaming = await peer.start();
  try {
    const quiet = less(await window(target, quietMs), self);
    const changing = less(less(await underChanges(), self), generator);
    return { ...rates('peer_quiet', quiet, quietMs / 1000), ...rates('peer_change', changing, changeMs / 1000) };
  } finally {
    await streaming.stop();
  }
}

/** Runs `tick` `perSecond` times a second, one at a time (a slow tick delays the next), until stopped. */
export function paced(perSecond: number, tick: (i: number) => Promise<unknown>): Stopper {
  let stopped = false;
  const done = (async () => {
    const t0 = performance.now();
    for (let i = 0; !stopped; i++) {
      const wait = t0 + (i * 1000) / perSecond - performance.now();
      if (wait > 0) await sleep(wait);
      if (!stopped) await tick(i);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

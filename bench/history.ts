import { randomUUID } from 'node:crypto';
import type { IRequestOp } from 'etcd3';
import { EtcdHistory } from '../src/core/etcd/history';
import type { Bench } from './scenarios';
import { round } from './stats';

/**
 * `history_replay`: about `events` events in one lock's range (a queue of UUID-recipe keys, one in four on a lease:
 * each transaction queues a key and takes one from the round before out), then `EtcdHistory.replay` of that lock,
 * timed, with a 10 ms interval timer's worst lateness meanwhile: how long the views would have stood still.
 */
export async function historyReplay(b: Bench, events = 100_000, perRound = 64) {
  const name = `bench/history/${randomUUID().slice(0, 8)}`;
  const { ID: lease } = await b.load.client.leaseClient.leaseGrant({ TTL: 600 });
  let previous: Buffer[] = [];
  for (let written = 0; written < events; ) {
    const round = Array.from({ length: perRound }, () => Buffer.from(`${name}/${randomUUID()}`));
    await Promise.all(
      round.map((key, i) => {
        const success: IRequestOp[] = [{ request_put: { key, value: Buffer.alloc(0), lease: i % 4 === 0 ? lease : undefined } }];
        if (previous[i]) success.push({ request_delete_range: { key: previous[i] } });
        written += success.length;
        return b.load.client.kv.txn({ success });
      }),
    );
    previous = round;
  }
  const { history, ms, leaseMs, maxStall } = await timedReplay(b, name);
  await b.load.client.leaseClient.leaseRevoke({ ID: lease });
  if (history.events < events) throw new Error(`history_replay read ${history.events} of ${events} events`);
  return {
    events: history.events,
    holds: history.holds.length,
    store_revisions: history.toRevision,
    ms: round(ms, 0),
    lease_phase_ms: round(leaseMs, 0),
    max_stall_ms: round(maxStall, 1),
  };
}

/**
 * `history_leases`: `holds` holds of one lock, each on its own lease, as `etcdctl lock` runs leave them (one lease a
 * run), half of the leases still alive; then `EtcdHistory.replay`, whose last phase asks each lease how it is.
 */
export async function historyLeases(b: Bench, holds = 2000) {
  const name = `bench/leases/${randomUUID().slice(0, 8)}`;
  const leases: string[] = [];
  for (let i = 0; i < holds; i += 64) {
    const granted = await Promise.all(Array.from({ length: Math.min(64, holds - i) }, () => b.load.client.leaseClient.leaseGrant({ TTL: 600 })));
    leases.push(...granted.map((g) => g.ID));
  }
  for (const id of leases) {
    const key = Buffer.from(`${name}/${BigInt(id).toString(16)}`);
    await b.load.client.kv.put({ key, value: Buffer.alloc(0), lease: id });
    await b.load.client.kv.deleteRange({ key });
  }
  for (let i = 0; i < leases.length; i += 128) await Promise.all(leases.slice(i, i + 128).filter((_, j) => j % 2).map((ID) => b.load.client.leaseClient.leaseRevoke({ ID })));
  const { history, ms, leaseMs, maxStall } = await timedReplay(b, name);
  for (let i = 0; i < leases.length; i += 128) await Promise.all(leases.slice(i, i + 128).filter((_, j) => j % 2 === 0).map((ID) => b.load.client.leaseClient.leaseRevoke({ ID })));
  if (history.holds.length !== holds) throw new Error(`history_leases replayed ${history.holds.length} of ${holds} holds`);
  return { holds, ms: round(ms, 0), lease_phase_ms: round(leaseMs, 0), max_stall_ms: round(maxStall, 1) };
}

/**
 * `EtcdHistory.replay` of `name` beside a 10 ms interval timer: how long it took, how long its last phase (asking
 * leases) took, and the timer's worst lateness (how long views would have stood still).
 */
async function timedReplay(b: Bench, name: string) {
  let leasesFrom = 0;
  let maxStall = 0;
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    maxStall = Math.max(maxStall, now - last - 10);
    last = now;
  }, 10);
  const t0 = performance.now();
  try {
    const history = await new EtcdHistory(b.conn).replay(Buffer.from(name), {
      onLeaseProgress: (asked) => {
        if (asked === 0) leasesFrom = performance.now();
      },
    });
    const end = performance.now();
    return { history, ms: end - t0, leaseMs: end - leasesFrom, maxStall };
  } finally {
    clearInterval(ticker);
  }
}

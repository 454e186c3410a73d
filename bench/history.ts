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
  let maxStall = 0;
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    maxStall = Math.max(maxStall, now - last - 10);
    last = now;
  }, 10);
  const t0 = performance.now();
  const history = await new EtcdHistory(b.conn).replay(Buffer.from(name));
  const ms = performance.now() - t0;
  clearInterval(ticker);
  await b.load.client.leaseClient.leaseRevoke({ ID: lease });
  if (history.events < events) throw new Error(`history_replay read ${history.events} of ${events} events`);
  return {
    events: history.events,
    holds: history.holds.length,
    store_revisions: history.toRevision,
    ms: round(ms, 0),
    max_stall_ms: round(maxStall, 1),
  };
}

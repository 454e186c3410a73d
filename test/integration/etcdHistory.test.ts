import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { historyJson } from '../../src/cli/commands/history';
import { EtcdHistory } from '../../src/core/etcd/history';
import { isLockLensError } from '../../src/core/errors';
import { between, historyFixture, type HistoryDoc } from '../harness/historyFixture';

/**
 * The etcd replay behind `locklens history` (EtcdHistory), against a real etcd: cancelling it, asking leases how holds
 * ended, and a compaction while it reads. The command's own tests are in cliHistory.test.ts.
 */

describe('locklens history: the acceptance case (three etcdctl lock runs that came and went)', () => {
  const f = historyFixture();

  test('a replay that is cancelled rejects with CANCELLED, before it starts or while it reads', async () => {
    const history = new EtcdHistory(await f.connect());
    await assert.rejects(history.replay(Buffer.from('jobs'), { signal: AbortSignal.abort() }), (e) => isLockLensError(e, 'CANCELLED'));
    // A name with no event keeps its watches waiting for the end of history: abort while they do.
    const abort = new AbortController();
    const reading = history.replay(Buffer.from('nothing/yet'), { signal: abort.signal, onProgress: () => undefined });
    setTimeout(() => abort.abort(), 50);
    await assert.rejects(reading, (e) => isLockLensError(e, 'CANCELLED'));
  });
});

describe('locklens history: how far back it reads', () => {
  const f = historyFixture();

  test('asking each ended hold’s lease how it ended is told as it goes and stops when cancelled', async () => {
    const conn = await f.connect();
    const leases = 30;
    for (let i = 0; i < leases; i++) {
      const { ID } = await conn.client.leaseClient.leaseGrant({ TTL: 600 });
      const key = Buffer.from(`leased/${BigInt(ID).toString(16)}`);
      await conn.client.kv.put({ key, value: Buffer.alloc(0), lease: ID });
      await conn.client.kv.deleteRange({ key });
    }
    const history = new EtcdHistory(conn);
    const told: [number, number][] = [];
    const replayed = await history.replay(Buffer.from('leased'), { onLeaseProgress: (asked, of) => told.push([asked, of]) });
    assert.deepEqual(told[0], [0, leases]);
    assert.deepEqual(told.at(-1), [leases, leases]);
    assert.equal(told.length, leases + 1);
    assert.deepEqual(new Set(replayed.holds.map((h) => h.end)), new Set(['released']), 'each key deleted while its lease lives');

    const abort = new AbortController();
    let asked = 0;
    await assert.rejects(
      history.replay(Buffer.from('leased'), {
        signal: abort.signal,
        onLeaseProgress: (n) => {
          asked = n;
          if (n === 2) abort.abort();
        },
      }),
      (e) => isLockLensError(e, 'CANCELLED'),
    );
    assert.ok(asked < leases, `stopped after ${asked} of ${leases} leases`);
  });
});

describe('locklens history when etcd compacts while it reads', () => {
  const f = historyFixture();

  test('the read starts over from the compaction revision: the keys present then, and every event after it', async () => {
    const conn = await f.connect();
    // 3,000 revisions of the queue, one event each, then 67,000 of other keys: over 64,000 revisions, the windows
    // are wider than one batch, so the first window's watch must start again after its first batch, whatever the
    // other windows read meanwhile. The compaction lands before it does.
    const keys: Buffer[] = [];
    for (let i = 0; i < 3000; i++) {
      if (keys.length > 4 && i % 2) await conn.client.kv.deleteRange({ key: keys.shift()! });
      else {
        keys.push(Buffer.from(`busy/${(0x1000 + i).toString(16)}`));
        await conn.client.kv.put({ key: keys.at(-1)!, value: Buffer.alloc(0) });
      }
    }
    const { current: lastEvent } = await new EtcdHistory(conn).span(Buffer.from('busy'));
    let filler = 0;
    await Promise.all(
      Array.from({ length: 128 }, async () => {
        while (filler < 67_000) await conn.client.kv.put({ key: Buffer.from(`filler/${filler++ % 100}`), value: Buffer.alloc(0) });
      }),
    );
    const { oldest, current } = await new EtcdHistory(conn).span(Buffer.from('busy'));
    assert.equal(oldest, 1);
    const compactAt = lastEvent - 500;
    let compacted = false;
    const replayed = await new EtcdHistory(conn).replay(Buffer.from('busy'), {
      onProgress: () => {
        if (compacted) return;
        compacted = true;
        // Synchronously, so that it lands before the watch the read starts again after this batch.
        execFileSync('etcdctl', ['--endpoints', f.ep, 'compact', String(compactAt)], { env: { ...process.env, ETCDCTL_API: '3' } });
      },
    });
    assert.ok(compacted);
    assert.equal(replayed.compactedAt, compactAt);
    assert.equal(replayed.fromRevision, compactAt);
    assert.equal(replayed.toRevision, current);
    assert.equal(replayed.skippedBefore, null);
    assert.equal(replayed.events, lastEvent - compactAt, 'one event a revision after the compaction revision, none before it');
    assert.equal(replayed.holds[0].beforeHistory, true);
    await f.assertGoMutexOrder(historyJson(replayed) as HistoryDoc, between(compactAt, lastEvent + 1));
    assert.deepEqual(await new EtcdHistory(conn).span(Buffer.from('busy')), { oldest: compactAt, current });
  });
});

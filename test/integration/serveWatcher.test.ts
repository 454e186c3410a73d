import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { loadConfig } from '../../src/cli/serve/config';
import { ConnectionWatcher } from '../../src/cli/serve/watcher';
import { sleep } from '../../src/core/sleep';
import { eventually } from '../harness/etcd';
import { startRedis, type RedisServer } from '../harness/redis';

/**
 * serve's watch of one connection, against a real Redis with keyspace notifications on (so the watch itself reads the
 * keyspace whole only every 30 s): the diagnosis reads the wait-for graph every tick, but asks the store for a whole
 * read only when the graph has a cycle to confirm or clear.
 */
describe('serve: a connection watcher', () => {
  let redis: RedisServer;
  let client: Redis;
  let dir: string;

  before(async () => {
    redis = await startRedis({ notify: 'KEA' });
    client = new Redis(redis.url);
    dir = mkdtempSync(join(tmpdir(), 'locklens-serve-watcher-'));
  });

  after(async () => {
    client?.disconnect();
    await redis?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const scans = async () => Number(/cmdstat_scan:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);

  test('with no cycle in the graph, the diagnosis ticks never read the store whole', async () => {
    for (let i = 0; i < 5; i++) await client.set(`locks:l${i}`, crypto.randomUUID(), 'PX', 600_000, 'NX');
    const file = join(dir, 'serve.yml');
    writeFileSync(file, `connections:\n  - { name: r, store: redis, endpoints: ['${redis.url}'], prefixes: ['locks:'] }\n`);
    const [connection] = loadConfig(file).connections;
    const watcher = new ConnectionWatcher(connection, { log: () => undefined, lockTables: [], onEvents: () => undefined, diagnoseIntervalMs: 20 });
    try {
      watcher.start();
      await eventually(() => watcher.ready && [...watcher.unorderedLocks()].length === 5, 10_000, 'the five locks');
      const before = await scans();
      // Fifty ticks: a sync each would be fifty whole reads.
      await sleep(1000);
      assert.equal(watcher.state, 'live');
      // The watch's own safety read (every 30 s) may fall in this second; fifty may not.
      assert.ok((await scans()) - before <= 1, `${(await scans()) - before} SCANs in 50 ticks`);
    } finally {
      await watcher.close();
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'mocha';
import Redis from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import * as vscode from 'vscode';
import type { HeldLock } from '../../../src/extension/heldLocks';
import { startRedis, type RedisServer } from '../../harness/redis';
import { isLockNode, storeSuite } from './fixture';

/**
 * A Redis semaphore in the Locks tree, against a real redis-server and npm redis-semaphore peers: its row counts the
 * permits and each holder has a row of its own; Acquire Lock asks for the limit the store does not keep and takes a
 * permit beside the peers; Force Release takes back the one permit shown.
 */
describe('Redis semaphores in the Locks tree', function () {
  const CONNECTION = 'e2e-semaphores';
  const suite = storeSuite(CONNECTION);
  const { sync, confirmations } = suite;
  let redis: RedisServer;
  let client: Redis;

  before(async () => {
    redis = await startRedis({ notify: 'KEA' });
    client = new Redis(redis.url, { protocol: 2 });
    await suite.connect({ store: 'redis', endpoints: [redis.url], prefixes: ['semaphore:'] });
  });

  after(async () => {
    client?.disconnect();
    await redis?.dispose();
  });

  const lockRow = () => {
    const node = suite.lockRow('semaphore:jobs');
    assert.ok(node && isLockNode(node), 'the semaphore has a lock row');
    return { node, item: suite.api.tree.getTreeItem(node) };
  };
  const tooltip = () => {
    const { node, item } = lockRow();
    return (suite.api.tree.resolveTreeItem(item, node).tooltip as vscode.MarkdownString).value.replace(/\\/g, '').replace(/&nbsp;/g, ' ');
  };

  it('counts the permits on its row, a row per holder; Acquire asks for the limit and takes a permit beside the peers; Force Release frees the one shown', async () => {
    const peers = [0, 1].map(() => new Semaphore(client, 'jobs', 3, { acquireTimeout: 10_000 }));
    for (const p of peers) await p.acquire();
    suite.peer({ dispose: () => void Promise.all(peers.map((p) => p.release())) });
    await sync();
    assert.match(String(lockRow().item.description), /^held (<1m|\d+m) · 2 permits$/);
    assert.equal(lockRow().item.contextValue, 'lock+semaphore+acquirable');
    assert.match(tooltip(), /Kind: semaphore \(redis-semaphore Semaphore \(npm\)\)/);
    assert.match(tooltip(), /Permits: 2 held, limit not recorded \(its clients state it\)/);
    assert.deepEqual(suite.rowsUnder(lockRow().node).map((r) => r.item.label).sort(), peers.map((p) => p.identifier).sort());

    suite.stubs.inputs((o) => (/Permits of/.test(o.title ?? '') ? '3' : (o.value ?? ''))).warnings((_m, items) => items[0]);
    const held = (await vscode.commands.executeCommand('locklens.acquireLock', lockRow().node)) as HeldLock;
    assert.ok(held, JSON.stringify(suite.stubs.shown));
    assert.ok(suite.stubs.shown.some((s) => s.kind === 'input' && /the semaphore's limit, as its clients state it/i.test(s.message)), JSON.stringify(suite.stubs.shown));
    assert.equal(confirmations().length, 0, 'a permit was free: nothing to confirm');
    await sync();
    assert.match(String(lockRow().item.description), / · 3 permits$/);
    const rows = suite.rowsUnder(lockRow().node);
    assert.equal(rows.filter((r) => /held by you/.test(String(r.item.description))).length, 1, JSON.stringify(rows.map((r) => r.item.description)));

    const shown = rows.find((r) => r.item.label === peers[1].identifier)!;
    await vscode.commands.executeCommand('locklens.forceRelease', shown.node);
    assert.match(confirmations().at(-1)?.message ?? '', /semaphore:jobs/);
    assert.deepEqual((await client.zrange('semaphore:jobs', '0', '-1')).sort(), [peers[0].identifier, held.hold.owner].sort(), 'only the permit shown went');
  });

  it("an RSemaphore's row says how many permits are left and that its holders are not recorded, with nothing to open", async () => {
    // Under the prefix as a Redisson RSemaphore named so: a counter, and a Redisson client waiting on its channel.
    await client.set('semaphore:slots', '1');
    const waiter = new Redis(redis.url, { protocol: 2 });
    suite.peer({ dispose: () => waiter.disconnect() });
    await waiter.subscribe('redisson_sc:{semaphore:slots}');
    await sync();
    const node = suite.lockRow('semaphore:slots');
    assert.ok(node && isLockNode(node));
    const item = suite.api.tree.getTreeItem(node);
    assert.equal(item.description, '1 permit left, holders not recorded');
    assert.equal(item.collapsibleState, vscode.TreeItemCollapsibleState.None);
    assert.equal(item.contextValue, 'lock+semaphore', 'no Acquire: a permit taken could not be told from the others');
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'mocha';
import type { LockLensApi } from '../../../src/extension/extension';
import type { EtcdBackend } from '../../../src/core/etcd/etcdBackend';
import { activateWithConnection, removeConnectionSetting } from './fixture';
import type { LockTreeNode } from '../../../src/extension/tree/nodes';
import { eventually, startEtcd, type EtcdServer } from '../../harness/etcd';

describe('Locks tree: live updates, coalescing, identity and staleness', function () {
  let etcd: EtcdServer;
  let api: LockLensApi;
  const CONNECTION = 'live';

  const connectionNode = () => api.tree.getChildren().find((n) => n.connection.name === CONNECTION)!;
  const prefixNode = () => api.tree.getChildren(connectionNode())[0];

  before(async () => {
    etcd = await startEtcd();
    api = await activateWithConnection(CONNECTION, etcd.endpoint, ['/burst/']);
  });

  after(async () => {
    await removeConnectionSetting(CONNECTION);
    await etcd?.dispose();
  });

  it('a burst of 3,000 writes redraws the tree a few times, not 3,000 times, and ends equal to etcd', async () => {
    const fires: number[] = [];
    const listener = api.tree.onDidChangeTreeData(() => fires.push(Date.now()));
    const conn = (api.registry.get(CONNECTION)!.backend as EtcdBackend).connection;
    const start = Date.now();
    try {
      // 3,000 single-key locks in transactions of 100 puts, all sent at once.
      await Promise.all(
        Array.from({ length: 30 }, (_, t) =>
          conn.client.kv.txn({
            success: Array.from({ length: 100 }, (_, i) => ({ request_put: { key: Buffer.from(`/burst/k${t * 100 + i}`), value: Buffer.from('x') } })),
          }),
        ),
      );
      const elapsed = Date.now() - start;
      await api.registry.get(CONNECTION)!.watch!.sync();
      await eventually(() => api.tree.getChildren(prefixNode()).length === 3000, 10_000, '3,000 rows');
      const duringBurst = fires.filter((t) => t <= start + elapsed).length;
      // The model tells views at most once per 100 ms; the tree adds at most one redraw per event-loop turn.
      assert.ok(fires.length < 3000 / 10, `${fires.length} redraws for 3,000 writes`);
      assert.ok(duringBurst <= Math.ceil(elapsed / 100) + 2, `${duringBurst} redraws during a ${elapsed} ms burst`);
    } finally {
      listener.dispose();
    }
  });

  it('nodes keep their identity and ids across refreshes, so expansion and selection survive', async () => {
    const first = api.tree.getChildren(prefixNode()).slice(0, 5);
    await etcd.etcdctl(['put', '/burst/k1', 'changed']);
    await api.registry.get(CONNECTION)!.watch!.sync();
    const again = api.tree.getChildren(prefixNode()).slice(0, 5);
    assert.deepEqual(again, first);
    for (let i = 0; i < first.length; i++) assert.equal(again[i], first[i], 'the same node object');
    assert.deepEqual(
      again.map((n: LockTreeNode) => api.tree.getTreeItem(n).id),
      first.map((n: LockTreeNode) => api.tree.getTreeItem(n).id),
    );
  });

  it('while etcd is down the connection says reconnecting and its rows are marked stale; then it recovers', async () => {
    await etcd.stop();
    try {
      await eventually(() => api.registry.get(CONNECTION)!.state === 'reconnecting', 20_000, 'reconnecting');
      const conn = api.tree.getTreeItem(connectionNode());
      assert.match(String(conn.description), /^reconnecting/);
      assert.equal(conn.contextValue, 'connection+reconnecting');
      assert.match(String(api.tree.getTreeItem(prefixNode()).description), /stale for/);
      const row = api.tree.getTreeItem(api.tree.getChildren(prefixNode())[0]);
      assert.match(String(row.description), /stale/);
    } finally {
      await etcd.start();
    }
    await eventually(() => api.registry.get(CONNECTION)!.state === 'connected', 30_000, 'connected again');
    assert.doesNotMatch(String(api.tree.getTreeItem(prefixNode()).description), /stale/);
  });
});

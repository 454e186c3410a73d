import assert from 'node:assert/strict';
import { after, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import type { LockLensApi } from '../../../src/extension/extension';
import { ZkConnection, ensembleOf } from '../../../src/core/zookeeper/connect';
import { eventually } from '../../harness/etcd';
import { KazooLock } from '../../harness/kazoo';
import { startZooKeeper, type ZooKeeperServer } from '../../harness/zookeeper';
import { auditText, menuCommands, storeSuite } from './fixture';

/**
 * The Locks tree and the lock commands on a ZooKeeper connection, against a real ZooKeeper and kazoo's own Lock: what
 * each row offers (a session is no lease: no Revoke Lease, no Copy Lease ID; a czxid is a fencing token), an acquire
 * from a script that queues behind kazoo's holder and holds only after it, Force Release guarded by the node shown and
 * refused in read-only mode, and what the Lock History records of a kazoo hold.
 */
describe('Locks tree and commands against a real ZooKeeper', function () {
  const CONNECTION = 'e2e-zookeeper';
  const ROOT = '/zt';
  const suite = storeSuite(CONNECTION);
  const { sync, errors, confirmations, lockRow, memberRows } = suite;
  let server: ZooKeeperServer;
  let raw: ZkConnection;
  let api: LockLensApi;

  const kazoo = (path: string, identifier: string) => suite.peer(new KazooLock(`127.0.0.1:${server.port}`, path, { identifier, sessionSeconds: 10 }));

  before(async () => {
    server = await startZooKeeper();
    const { url, spec } = ensembleOf({ endpoints: [server.url], dialTimeoutMs: 5000 });
    raw = await ZkConnection.open(spec, url.servers);
    api = await suite.connect({ store: 'zookeeper', endpoints: [server.url], prefixes: [ROOT] });
  });

  after(async () => {
    await raw?.close();
    await server?.dispose();
  });

  it('rows are named by the node\'s data and say session and token (the node name in the tooltip), offer Force Release, Copy Owner and Copy Fencing Token on a holder, and never Revoke Lease or Copy Lease ID', async () => {
    const holder = kazoo('/zt/menu', 'menu-holder');
    const [, node, session] = (await holder.until(['acquired'])).split(' ');
    await kazoo('/zt/menu', 'menu-waiter').until(['waiting']);
    await eventually(async () => (await sync(), memberRows('/zt/menu').length === 2), 10_000, 'holder and waiter in the tree');
    const [held, waiting] = memberRows('/zt/menu');
    // kazoo writes its identifier as the node's data: who holds, where the node's name is a uuid and a sequence.
    assert.equal(held.item.label, 'menu-holder');
    assert.equal(waiting.item.label, 'menu-waiter');
    assert.match(String(held.item.description), new RegExp(`^holder · held [^·]+ · session ${session} · token \\d+`));
    assert.doesNotMatch(String(held.item.description), /TTL|lease/);
    assert.deepEqual(menuCommands(held.item.contextValue!), [
      'locklens.copyFencingToken',
      'locklens.copyIncidentReport',
      'locklens.copyKey',
      'locklens.copyOwner',
      'locklens.forceRelease',
      'locklens.openTimeline',
      'locklens.showHistory',
    ]);
    assert.ok(!menuCommands(waiting.item.contextValue!).includes('locklens.forceRelease'), 'a waiter holds nothing');
    await vscode.commands.executeCommand('locklens.copyOwner', held.node);
    assert.equal(await vscode.env.clipboard.readText(), session);
    const tooltip = (api.tree.resolveTreeItem(held.item, held.node).tooltip as vscode.MarkdownString).value;
    assert.match(tooltip, new RegExp(`Session: ${session}`));
    assert.ok(tooltip.replace(/\\/g, '').includes(node), `the node's name in the tooltip (markdown-escaped): ${tooltip}`);
    assert.doesNotMatch(tooltip, /Remaining TTL/);
  });

  it('Acquire from a script queues behind kazoo\'s holder and holds only once it released; Release deletes our node', async () => {
    const holder = kazoo('/zt/shared', 'py-holder');
    await holder.until(['acquired']);
    await sync();
    const acquiring = vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '/zt/shared', ttl: 10 });
    await eventually(async () => (await sync(), memberRows('/zt/shared').length === 2), 10_000, 'our node queued behind kazoo');
    assert.equal(api.heldLocks.all().length, 0, 'not held while kazoo holds');
    holder.release();
    await acquiring;
    const [mine] = api.heldLocks.all();
    assert.ok(mine, JSON.stringify(errors()));
    assert.match(mine.hold.key.toString(), /^\/zt\/shared\/[0-9a-f]{32}__lock__\d{10}$/, 'kazoo\'s layout, as the lock already had');
    await sync();
    const [ours] = memberRows('/zt/shared');
    assert.match(String(ours.item.description), /held by you/);
    await vscode.commands.executeCommand('locklens.releaseLock', ours.node);
    assert.equal(api.heldLocks.all().length, 0);
    assert.deepEqual(await raw.client.children('/zt/shared'), [], 'our node is gone');
  });

  it('Force Release deletes the node shown, after a confirmation saying the holder is not told; audited; kazoo\'s waiter takes over', async () => {
    const holder = kazoo('/zt/stuck', 'stuck-holder');
    const node = (await holder.until(['acquired'])).split(' ')[1];
    const waiter = kazoo('/zt/stuck', 'next');
    await waiter.until(['waiting']);
    await eventually(async () => (await sync(), memberRows('/zt/stuck').length === 2), 10_000, 'holder and waiter in the tree');
    const [held] = memberRows('/zt/stuck');
    suite.stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', held.node);
    const detail = confirmations().at(-1)?.detail ?? '';
    assert.match(detail, /NOT told/, detail);
    await waiter.until(['acquired']);
    assert.equal(await raw.client.data(`/zt/stuck/${node}`), undefined, 'the holder\'s node is gone');
    await eventually(() => /forceRelease ok connection="e2e-zookeeper" lock="\/zt\/stuck" owner="[0-9a-f]+" token=\d+/.test(auditText(api)), 10_000, 'the audit line');
  });

  it('read-only refuses Force Release even with a row, and asks nothing', async () => {
    const holder = kazoo('/zt/ro', 'ro-holder');
    const node = (await holder.until(['acquired'])).split(' ')[1];
    await eventually(async () => (await sync(), memberRows('/zt/ro').length === 1), 10_000, 'the holder in the tree');
    await vscode.workspace.getConfiguration('locklens').update('readOnly', true, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('locklens.forceRelease', memberRows('/zt/ro')[0].node);
    assert.ok(errors().some((e) => /read-only mode/.test(e)), JSON.stringify(errors()));
    assert.equal(confirmations().length, 0);
    assert.ok(await raw.client.data(`/zt/ro/${node}`), 'kazoo still holds');
  });

  it('Lock History records kazoo\'s holds by session; how one ended is not said where the server refuses cons (nothing tells whether its session lived on)', async () => {
    const first = kazoo('/zt/hist', 'h1');
    const session = (await first.until(['acquired'])).split(' ')[2];
    await eventually(async () => (await sync(), memberRows('/zt/hist').length === 1), 10_000, 'the lock in the tree');
    const lockId = api.tree.lock(lockRow('/zt/hist')!)!.id;
    first.release();
    await first.until(['released']);
    await eventually(() => api.records.stats.holds(CONNECTION, lockId)[0]?.endedAt !== null, 10_000, 'the hold ended');
    const [hold] = api.records.stats.holds(CONNECTION, lockId);
    assert.deepEqual([hold.owner, hold.acquiredExact, hold.endedExact, hold.end], [session, true, true, null]);
    assert.ok(hold.token !== null && hold.token > 0, 'its czxid as fencing token');
  });
});

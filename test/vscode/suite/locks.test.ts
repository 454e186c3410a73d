import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, afterEach, before, beforeEach, describe, it } from 'mocha';
import * as vscode from 'vscode';
import type { LockLensApi } from '../../../src/extension/extension';
import type { LockTreeNode } from '../../../src/extension/tree/nodes';
import { Procs } from '../../harness/cli';
import { eventually, startEtcd, type EtcdServer } from '../../harness/etcd';
import { activateWithConnection, auditText, drawnOnlyByTheTest, menuCommands, removeConnectionSetting, userDataDir, walk } from './fixture';
import { WindowStubs } from './windowStubs';
import { confirmJoin, joinsQueue } from '../../../src/extension/commands/acquirePrompts';

/**
 * Keys under a prefix as etcdctl sees them, in create-revision order. The lease is read from the key (Go and etcdctl
 * name it `<lock>/<lease hex>`): etcdctl's JSON prints lease IDs as numbers beyond JSON's exact integers.
 */
async function keysOf(etcd: EtcdServer, prefix: string): Promise<{ key: string; lease: string; create: number }[]> {
  const out = JSON.parse(await etcd.etcdctl(['get', '--prefix', prefix, '-w', 'json'])) as { kvs?: { key: string; create_revision: number }[] };
  return (out.kvs ?? [])
    .map((kv) => Buffer.from(kv.key, 'base64').toString())
    .map((key, i) => ({ key, lease: key.slice(key.lastIndexOf('/') + 1), create: out.kvs![i].create_revision }))
    .sort((a, b) => a.create - b.create);
}

describe('Locks tree and commands against a real etcd', function () {
  let etcd: EtcdServer;
  let api: LockLensApi;
  let procs: Procs;
  let stubs: WindowStubs;
  const CONNECTION = 'e2e';

  /** Walks the tree as VS Code would: root → connection → prefix → locks. */
  function lockRows(): { node: LockTreeNode; item: vscode.TreeItem }[] {
    const connection = api.tree.getChildren().find((n) => n.connection.name === CONNECTION)!;
    const [prefix] = api.tree.getChildren(connection);
    return api.tree.getChildren(prefix).map((node) => ({ node, item: api.tree.getTreeItem(node) }));
  }

  function lockRow(label: string) {
    const row = lockRows().find((r) => r.item.label === label);
    assert.ok(row, `no lock row '${label}' in ${JSON.stringify(lockRows().map((r) => r.item.label))}`);
    return row;
  }

  function memberRows(label: string) {
    return api.tree.getChildren(lockRow(label).node).map((node) => ({ node, item: api.tree.getTreeItem(node) }));
  }

  const sync = () => api.registry.get(CONNECTION)!.watch!.sync();

  before(async () => {
    etcd = await startEtcd();
    api = await activateWithConnection(CONNECTION, etcd.endpoint, ['/locks/']);
  });

  after(async () => {
    await removeConnectionSetting(CONNECTION);
    await etcd?.dispose();
  });

  beforeEach(() => {
    procs = new Procs(etcd.endpoint);
    stubs = new WindowStubs().messages();
  });

  afterEach(async () => {
    stubs.restore();
    await procs.dispose();
    await vscode.workspace.getConfiguration('locklens').update('readOnly', undefined, vscode.ConfigurationTarget.Global);
  });

  it('shows the etcdctl lock holder, then its waiters in create-revision order, with lease, TTL and token', async () => {
    for (let i = 0; i < 3; i++) {
      procs.etcdctl(['lock', '/locks/jobs', 'sleep', '120']);
      await eventually(async () => (await keysOf(etcd, '/locks/jobs/')).length === i + 1, 10_000, `etcdctl lock #${i + 1} queued`);
    }
    const inEtcd = await keysOf(etcd, '/locks/jobs/');
    await sync();
    await api.registry.get(CONNECTION)!.watch!.sweep();
    const rows = memberRows('jobs');
    assert.deepEqual(
      rows.map((r) => r.item.label),
      inEtcd.map((k) => k.lease),
      'holder first, then waiters by create revision',
    );
    const descriptions = rows.map((r) => String(r.item.description));
    assert.match(descriptions[0], /^holder · held [^·]+ · TTL \d+s · token \d+/);
    assert.match(descriptions[1], /^waiter #1 · waiting [^·]+ · TTL \d+s/);
    assert.match(descriptions[2], /^waiter #2 · /);
    assert.ok(descriptions[0].includes(`token ${inEtcd[0].create}`), descriptions[0]);
    assert.equal(rows[0].item.contextValue, 'member+leased+other+holder+token');
    assert.deepEqual(
      menuCommands(rows[0].item.contextValue!),
      ['locklens.copyFencingToken', 'locklens.copyIncidentReport', 'locklens.copyKey', 'locklens.copyLeaseId', 'locklens.forceRelease', 'locklens.openTimeline', 'locklens.revokeLease', 'locklens.showHistory', 'locklens.showLeaseDetails'],
      'an etcdctl holder: revoke its lease or force-release its key; its owner is the lease (Copy Lease ID, no Copy Owner)',
    );
    assert.equal(rows[1].item.contextValue, 'member+leased+other+token');
    assert.ok(!menuCommands(rows[1].item.contextValue!).includes('locklens.forceRelease'), 'a waiter holds nothing to force-release');
    assert.match(String(lockRow('jobs').item.description), /2 waiting/);
  });

  it('Acquire lock takes a Go-compatible key, shows it as yours, and Release deletes it', async () => {
    await vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '/locks/by-hand', ttl: 30 });
    const [held] = api.heldLocks.all();
    assert.ok(held, 'the lock is held from VS Code');
    const keys = await keysOf(etcd, '/locks/by-hand/');
    assert.deepEqual(keys.map((k) => k.key), [`/locks/by-hand/${held.hold.owner}`]);
    await sync();
    const [row] = memberRows('by-hand');
    assert.equal(row.item.contextValue, 'member+leased+own+holder+token');
    const menu = menuCommands(row.item.contextValue!);
    assert.ok(menu.includes('locklens.releaseLock') && !menu.includes('locklens.forceRelease'), `ours: Release, never Force Release (${menu})`);
    assert.match(String(row.item.description), /held by you/);

    await vscode.commands.executeCommand('locklens.releaseLock', row.node);
    assert.equal(api.heldLocks.all().length, 0);
    assert.deepEqual(await keysOf(etcd, '/locks/by-hand/'), []);
    assert.match(await etcd.etcdctl(['lease', 'timetolive', held.hold.owner]), /already expired|not found/i, 'the lease was revoked');
  });

  it('Acquire lock queues behind an etcdctl holder and holds after it releases', async () => {
    procs.etcdctl(['lock', '/locks/queue', 'sleep', '3']);
    await eventually(async () => (await keysOf(etcd, '/locks/queue/')).length === 1, 10_000, 'etcdctl holds');
    const [etcdctlKey] = await keysOf(etcd, '/locks/queue/');
    await vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '/locks/queue', ttl: 30 });
    const [held] = api.heldLocks.all();
    assert.ok(held && held.hold.fencingToken! > etcdctlKey.create, 'LockLens queued after etcdctl');
    assert.deepEqual((await keysOf(etcd, '/locks/queue/')).map((k) => k.key), [`/locks/queue/${held.hold.owner}`], 'etcdctl had released');
    await vscode.commands.executeCommand('locklens.releaseLock', held);
  });

  it("Acquire on a lock that is one key (python-etcd3's, npm etcd3's Lock) asks to wait, not to join a queue", async () => {
    const lease = /lease ([0-9a-f]+) granted/.exec(await etcd.etcdctl(['lease', 'grant', '60']))![1];
    await etcd.etcdctl(['put', '/locks/one-key', 'theirs', `--lease=${lease}`]);
    await sync();
    const connection = api.registry.get(CONNECTION)!;
    const backend = await connection.open();
    const lock = connection.watch!.locks().find((l) => l.name.toString() === '/locks/one-key')!;
    assert.ok(lock && backend.acquirable(lock), 'a single key is offered to Acquire');
    assert.equal(joinsQueue(backend, lock), false, 'its clients keep no queue');
    assert.equal(joinsQueue(backend, undefined), true, "a new name joins Go's Mutex queue");
    const asked: string[] = [];
    stubs.warnings((message) => (asked.push(message), undefined));
    assert.equal(await confirmJoin(connection, backend, lock.name, undefined), false, 'not answered: not taken');
    assert.match(asked[0], /^"\/locks\/one-key" is held by .*\. Wait for it\?$/);
    await etcd.etcdctl(['lease', 'revoke', lease]);
  });

  it('Revoke lease asks first, listing the keys and the lock it frees; the next waiter takes over', async () => {
    for (let i = 0; i < 2; i++) {
      procs.etcdctl(['lock', '/locks/stuck', 'sleep', '120']);
      await eventually(async () => (await keysOf(etcd, '/locks/stuck/')).length === i + 1, 10_000, `etcdctl lock #${i + 1} queued`);
    }
    const [holder, waiter] = await keysOf(etcd, '/locks/stuck/');
    await sync();
    const holderRow = memberRows('stuck')[0];

    stubs.warnings(() => undefined);
    await vscode.commands.executeCommand('locklens.revokeLease', holderRow.node);
    assert.equal((await keysOf(etcd, '/locks/stuck/')).length, 2, 'dismissing the confirmation revokes nothing');

    stubs.warnings((_message, items) => items[0]);
    await vscode.commands.executeCommand('locklens.revokeLease', holderRow.node);
    const confirmation = stubs.shown.filter((s) => s.kind === 'warning').at(-1)!;
    assert.match(confirmation.message, new RegExp(`Revoke lease ${holder.lease}`));
    assert.ok(confirmation.detail?.includes(holder.key), confirmation.detail);
    assert.ok(confirmation.detail?.includes(`/locks/stuck → next holder ${waiter.key}`), confirmation.detail);
    assert.deepEqual((await keysOf(etcd, '/locks/stuck/')).map((k) => k.key), [waiter.key]);
    await sync();
    assert.equal(memberRows('stuck')[0].item.label, waiter.lease, 'the waiter now holds');
  });

  it('tells at once when a held lock is lost, and Disconnect releases what is held', async () => {
    await vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '/locks/lost', ttl: 30 });
    const [held] = api.heldLocks.all();
    await etcd.etcdctl(['lease', 'revoke', held.hold.owner]);
    await eventually(() => stubs.shown.some((m) => m.kind === 'error' && /You lost the lock "\/locks\/lost"/.test(m.message)), 10_000, 'the lost-lock message');
    assert.equal(api.heldLocks.all().length, 0);

    await vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '/locks/on-disconnect', ttl: 30 });
    assert.equal((await keysOf(etcd, '/locks/on-disconnect/')).length, 1);
    const connection = api.tree.getChildren().find((n) => n.connection.name === CONNECTION)!;
    await vscode.commands.executeCommand('locklens.disconnect', connection);
    assert.deepEqual(await keysOf(etcd, '/locks/on-disconnect/'), [], 'disconnecting revoked the lease of the held lock');
    assert.equal(api.heldLocks.all().length, 0);
    await vscode.commands.executeCommand('locklens.connect', connection);
    await eventually(() => api.registry.get(CONNECTION)!.state === 'connected', 20_000, 'connected again');
  });

  it('Disconnect stops an acquire still queueing: its key is deleted, nothing is held', async () => {
    procs.etcdctl(['lock', '/locks/queued', 'sleep', '120']);
    await eventually(async () => (await keysOf(etcd, '/locks/queued/')).length === 1, 10_000, 'etcdctl holds');
    const acquiring = vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '/locks/queued', ttl: 30 });
    await eventually(async () => (await keysOf(etcd, '/locks/queued/')).length === 2, 10_000, 'LockLens queued');
    const connection = api.tree.getChildren().find((n) => n.connection.name === CONNECTION)!;
    await vscode.commands.executeCommand('locklens.disconnect', connection);
    await acquiring;
    assert.equal(api.heldLocks.all().length, 0);
    assert.equal((await keysOf(etcd, '/locks/queued/')).length, 1, 'the queued key was deleted before the client closed');
    await vscode.commands.executeCommand('locklens.connect', connection);
    await eventually(() => api.registry.get(CONNECTION)!.state === 'connected', 20_000, 'connected again');
  });

  it('Revoke from a row refuses when the key moved to another lease since the row was drawn', async () => {
    // etcdctl prints lease IDs zero-padded to 16 digits; lock keys and LockLens do not pad.
    const grant = async () => BigInt('0x' + (await etcd.etcdctl(['lease', 'grant', '60'])).match(/lease ([0-9a-f]+) granted/)![1]).toString(16);
    const [first, second] = [await grant(), await grant()];
    await drawnOnlyByTheTest();
    await etcd.etcdctl(['put', '--lease', first, '/locks/single-moved', 'x']);
    await sync();
    const row = lockRows().find((r) => r.item.label === 'single-moved')!;
    assert.match(String(row.item.description), new RegExp(`lease ${first}`));
    await etcd.etcdctl(['put', '--lease', second, '/locks/single-moved', 'x']);
    await sync();
    stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.revokeLease', row.node);
    assert.ok(stubs.shown.some((m) => m.kind === 'error' && m.message.includes(`moved from lease ${first} to lease ${second}`)), JSON.stringify(stubs.shown));
    assert.match(await etcd.etcdctl(['lease', 'timetolive', second]), /remaining\(\d+s\)/, 'the new lease was not revoked');
  });

  it('Force Release from a row refuses when the key was created again since the row was drawn (another fencing token)', async () => {
    await drawnOnlyByTheTest();
    await etcd.etcdctl(['put', '/locks/fr-recreated', 'x']);
    await sync();
    const row = lockRows().find((r) => r.item.label === 'fr-recreated')!;
    const [first] = await keysOf(etcd, '/locks/fr-recreated');
    assert.match(String(row.item.description), new RegExp(`token ${first.create}`));
    await etcd.etcdctl(['del', '/locks/fr-recreated']);
    // The delete and the put in two change sets, as a loaded machine delivers them: the lock goes (its row is
    // forgotten) and comes back as a new row, while the row on screen still stands for the first key.
    await sync();
    await etcd.etcdctl(['put', '/locks/fr-recreated', 'y']);
    const [second] = await keysOf(etcd, '/locks/fr-recreated');
    await sync();
    stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', row.node);
    assert.equal(stubs.shown.filter((s) => s.kind === 'warning').length, 0, 'nothing is asked about a key the user did not see');
    assert.ok(stubs.shown.some((m) => m.kind === 'error' && m.message.includes(`token ${first.create}, now none, token ${second.create}`)), JSON.stringify(stubs.shown));
    assert.deepEqual(await keysOf(etcd, '/locks/fr-recreated'), [second], 'the new key is left alone');

    const redrawn = lockRows().find((r) => r.item.label === 'fr-recreated')!;
    await vscode.commands.executeCommand('locklens.forceRelease', redrawn.node);
    assert.match(stubs.shown.filter((s) => s.kind === 'warning').at(-1)?.detail ?? '', new RegExp(`created at revision ${second.create}`));
    assert.deepEqual(await keysOf(etcd, '/locks/fr-recreated'), [], 'the key shown is deleted');
  });

  it('Copy Key / Lease ID / Fencing Token and Show Lease Details give the member\'s values', async () => {
    procs.etcdctl(['lock', '/locks/details', 'sleep', '120']);
    await eventually(async () => (await keysOf(etcd, '/locks/details/')).length === 1, 10_000, 'etcdctl holds');
    const [key] = await keysOf(etcd, '/locks/details/');
    await sync();
    const [row] = memberRows('details');
    await vscode.commands.executeCommand('locklens.copyKey', row.node);
    assert.equal(await vscode.env.clipboard.readText(), key.key);
    await vscode.commands.executeCommand('locklens.copyLeaseId', row.node);
    assert.equal(await vscode.env.clipboard.readText(), key.lease);
    await vscode.commands.executeCommand('locklens.copyFencingToken', row.node);
    assert.equal(await vscode.env.clipboard.readText(), String(key.create));
    await vscode.commands.executeCommand('locklens.showLeaseDetails', row.node);
    const details = stubs.shown.filter((m) => m.kind === 'info').at(-1)!;
    assert.match(details.message, new RegExp(`Lease ${key.lease}`));
    assert.match(details.detail ?? '', /Remaining TTL: \d+s of 10s granted/);
    assert.ok(details.detail?.includes(key.key), details.detail);
  });

  it('read-only mode refuses acquire, release, revoke and force-release, and changes nothing in etcd', async () => {
    procs.etcdctl(['lock', '/locks/ro', 'sleep', '120']);
    await eventually(async () => (await keysOf(etcd, '/locks/ro/')).length === 1, 10_000, 'etcdctl holds');
    const [key] = await keysOf(etcd, '/locks/ro/');
    await vscode.workspace.getConfiguration('locklens').update('readOnly', true, vscode.ConfigurationTarget.Global);
    stubs.warnings((_m, items) => items[0]);

    await vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '/locks/ro-new', ttl: 30 });
    await vscode.commands.executeCommand('locklens.revokeLease', { connection: CONNECTION, lease: key.lease });
    await vscode.commands.executeCommand('locklens.releaseLock');
    await vscode.commands.executeCommand('locklens.forceRelease', { connection: CONNECTION, lock: '/locks/ro' });
    const errors = stubs.shown.filter((s) => s.kind === 'error').map((s) => s.message);
    assert.equal(errors.length, 4, JSON.stringify(errors));
    for (const e of errors) assert.match(e, /read-only mode/);
    assert.deepEqual(await keysOf(etcd, '/locks/ro-new/'), []);
    assert.deepEqual((await keysOf(etcd, '/locks/ro/')).map((k) => k.key), [key.key]);
    assert.equal(stubs.shown.filter((s) => s.kind === 'warning').length, 0, 'no confirmation was even asked');
  });

  it('a workspace can neither add a connection nor turn read-only off', async () => {
    const config = () => vscode.workspace.getConfiguration('locklens');
    assert.ok(vscode.workspace.workspaceFolders?.length, 'the test window has a folder open');
    try {
      await config().update('connections', [{ name: 'from-workspace', endpoints: ['198.51.100.1:2379'], username: 'root' }], vscode.ConfigurationTarget.Workspace);
      await config().update('readOnly', true, vscode.ConfigurationTarget.Global);
      await config().update('readOnly', false, vscode.ConfigurationTarget.Workspace);
      await api.registry.sync();
      assert.equal(api.registry.get('from-workspace'), undefined, 'connections come from user settings only');
      assert.ok(api.registry.get(CONNECTION), 'the user\'s connections are still there');
      await vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '/locks/ws-ro', ttl: 30 });
      assert.deepEqual(await keysOf(etcd, '/locks/ws-ro/'), [], 'still read-only');
      assert.ok(stubs.shown.some((m) => m.kind === 'error' && /read-only mode/.test(m.message)));
    } finally {
      await config().update('connections', undefined, vscode.ConfigurationTarget.Workspace);
      await config().update('readOnly', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });

  it('every mutation is in the audit log, and a connection password is in SecretStorage only: never in settings or logs', async () => {
    const password = `pw-${Date.now()}-never-logged`;
    await vscode.commands.executeCommand('locklens.addConnection', { name: 'secretive', endpoints: [etcd.endpoint], username: 'alice', password, prefixes: [] });
    assert.equal((await api.secrets.get('secretive')).password, password, 'kept in SecretStorage');
    const stored = JSON.stringify(vscode.workspace.getConfiguration('locklens').inspect('connections'));
    assert.ok(stored.includes('alice') && !stored.includes(password), 'settings hold the user, not the password');
    await vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '/locks/audited', ttl: 30 });
    await vscode.commands.executeCommand('locklens.releaseLock');

    // settings.json is under <user data>/User, next to the logs.
    const userData = userDataDir(api);
    const files = () => walk(userData).filter((f) => !/\.vscdb(\.backup)?$/.test(f)); // the .vscdb files are SecretStorage's own store
    const audit = () => auditText(api);
    await eventually(
      () => /acquire ok connection="e2e" lock="\/locks\/audited" lease=[0-9a-f]+ token=\d+/.test(audit()) && /release ok connection="e2e" lock="\/locks\/audited"/.test(audit()),
      10_000,
      'acquire and release in the audit log file',
    );
    assert.ok(files().some((f) => f.endsWith('settings.json')), `settings.json is under ${userData}`);
    for (const file of files()) assert.ok(!readFileSync(file, 'latin1').includes(password), `the password leaked into ${file}`);

    stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.removeConnection', api.tree.getChildren().find((n) => n.connection.name === 'secretive'));
    assert.equal((await api.secrets.get('secretive')).password, undefined, 'removing the connection deletes its secrets');
  });
});

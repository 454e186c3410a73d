import assert from 'node:assert/strict';
import { after, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import type { LockLensApi } from '../../../src/extension/extension';
import type { HeldLock } from '../../../src/extension/heldLocks';
import type { LockTreeNode } from '../../../src/extension/tree/nodes';
import { eventually } from '../../harness/etcd';
import { startRedis, type RedisServer } from '../../harness/redis';
import { FakeRedisson, OTHER_UUID, REDISSON_UUID } from '../../harness/redisson';
import { addConnection, auditText, drawnOnlyByTheTest, isLockNode, isMemberNode, menuCommands, removeConnectionSetting, storeSuite } from './fixture';

/**
 * The Locks tree and the lock commands on a Redis connection, against a real redis-server: which menu items each row
 * offers (from the package.json when clauses and the rows' contextValues), Force Release acting only on what a row
 * showed, read-only mode, and Edit Connection keeping the store and a password-only login.
 */
describe('Locks tree and commands against a real Redis', function () {
  const CONNECTION = 'e2e-redis';
  const PREFIX = 'rt:';
  const suite = storeSuite(CONNECTION);
  const { sync, errors, confirmations } = suite;
  let redis: RedisServer;
  let withPassword: RedisServer;
  let redisson: FakeRedisson;
  let api: LockLensApi;

  /** The rows under the prefix, drawn. */
  const rows = (parent: LockTreeNode = suite.prefixRow()) => suite.rowsUnder(parent);

  function row(label: string, parent?: LockTreeNode) {
    const all = rows(parent);
    const found = all.find((r) => r.item.label === label);
    assert.ok(found, `no row '${label}' in ${JSON.stringify(all.map((r) => r.item.label))}`);
    return found;
  }

  before(async () => {
    redis = await startRedis({ notify: 'KEA' });
    withPassword = await startRedis({ password: 'pw-redis-e2e' });
    redisson = FakeRedisson.connect(redis.url);
    api = await suite.connect({ store: 'redis', endpoints: [redis.url], prefixes: [PREFIX] });
  });

  after(async () => {
    redisson?.dispose();
    await removeConnectionSetting('e2e-redis-pw');
    await redis?.dispose();
    await withPassword?.dispose();
  });

  it('offers Force Release and Copy Owner on others\' holders, Release on ours, and never Revoke Lease, Copy Lease ID or Copy Fencing Token', async () => {
    await redis.cli(['SET', 'rt:token', 'tok-menu', 'PX', '60000']);
    const field = `${OTHER_UUID}:7`;
    assert.equal(await redisson.fairLock('rt:fair', 7, 60_000, OTHER_UUID), null);
    assert.notEqual(await redisson.fairLock('rt:fair', 8, 60_000, OTHER_UUID), null, 'the second thread waits');
    await vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: 'rt:mine', ttl: 30 });
    await sync();

    const token = row('token');
    assert.equal(token.item.contextValue, 'member+other+holder+owner');
    assert.deepEqual(menuCommands(token.item.contextValue!), ['locklens.copyIncidentReport', 'locklens.copyKey', 'locklens.copyOwner', 'locklens.forceRelease', 'locklens.openTimeline', 'locklens.showHistory']);
    await vscode.commands.executeCommand('locklens.copyOwner', token.node);
    assert.equal(await vscode.env.clipboard.readText(), 'tok-menu');

    const [holder, waiter] = rows(row('fair').node);
    assert.equal(holder.item.label, field);
    assert.deepEqual(menuCommands(holder.item.contextValue!), ['locklens.copyIncidentReport', 'locklens.copyKey', 'locklens.copyOwner', 'locklens.forceRelease', 'locklens.openTimeline', 'locklens.showHistory']);
    assert.equal(waiter.item.contextValue, 'member+other+owner', 'a waiter holds nothing: no Force Release');
    assert.deepEqual(menuCommands(waiter.item.contextValue!), ['locklens.copyIncidentReport', 'locklens.copyKey', 'locklens.copyOwner', 'locklens.openTimeline', 'locklens.showHistory']);

    const mine = row('mine');
    assert.match(String(mine.item.description), /held by you/);
    assert.equal(mine.item.contextValue, 'member+own+holder+owner');
    assert.deepEqual(menuCommands(mine.item.contextValue!), ['locklens.copyIncidentReport', 'locklens.copyKey', 'locklens.copyOwner', 'locklens.openTimeline', 'locklens.releaseLock', 'locklens.showHistory']);
    await vscode.commands.executeCommand('locklens.releaseLock', mine.node);
    assert.equal(api.heldLocks.all().length, 0, 'Release Lock from our row releases our hold');
    assert.equal(await redis.cli(['EXISTS', 'rt:mine']), '0');

    // Called anyway (a keybinding, a script), Copy Fencing Token says why there is nothing to copy.
    await vscode.commands.executeCommand('locklens.copyFencingToken', token.node);
    assert.ok(errors().some((e) => /no fencing token/.test(e)), JSON.stringify(errors()));
    // A Redisson lock with a queue is one to join: Acquire Lock shows on its row.
    assert.ok(menuCommands(row('fair').item.contextValue!).includes('locklens.acquireLock'), row('fair').item.contextValue);
  });

  it('Acquire on a read/write lock row asks Read or Write: read holds beside a Redisson reader, shown as yours, and Release ends it; write from a script waits for the reader', async () => {
    assert.equal(await redisson.readLock('rt:report', 1, 60_000), null);
    await sync();
    const lockRow = row('report');
    assert.equal(lockRow.item.contextValue, 'lock+readwrite+acquirable');
    assert.ok(menuCommands(lockRow.item.contextValue!).includes('locklens.acquireLock'), lockRow.item.contextValue);

    suite.stubs
      .picks((items) => items.find((i) => i.label === 'Read'))
      .inputs((o) => o.value ?? '')
      .warnings((_m, items) => items[0]);
    const held = (await vscode.commands.executeCommand('locklens.acquireLock', lockRow.node)) as HeldLock;
    assert.ok(held, JSON.stringify(suite.stubs.shown));
    const pick = suite.stubs.shown.find((s) => s.kind === 'pick');
    assert.equal(pick?.message, 'Lock mode (read or write)');
    assert.equal(pick?.detail, 'Read\nWrite');
    assert.equal(confirmations().length, 0, 'reading beside readers waits for no one: nothing to confirm');
    assert.match(held.hold.owner, /^[0-9a-f-]{36}:\d+$/);
    assert.deepEqual(await redisson.client.hgetall('rt:report'), { mode: 'read', [`${REDISSON_UUID}:1`]: '1', [held.hold.owner]: '1' });

    await sync();
    const members = rows(row('report').node);
    assert.equal(members.length, 2);
    const mine = members.filter((m) => /held by you/.test(String(m.item.description)));
    assert.equal(mine.length, 1, JSON.stringify(members.map((m) => m.item.description)));
    assert.equal(mine[0].item.contextValue, 'member+own+holder+owner');
    await vscode.commands.executeCommand('locklens.releaseLock', mine[0].node);
    assert.equal(api.heldLocks.all().length, 0);
    assert.deepEqual(await redisson.client.hkeys('rt:report').then((k) => k.sort()), [`${REDISSON_UUID}:1`, 'mode']);

    // From a script: no mode on a read/write lock is refused with the reason; write waits until the reader leaves.
    await vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: 'rt:report', ttl: 30 });
    assert.ok(errors().some((e) => /rt:report is a Redisson read\/write lock: choose read or write/.test(e)), JSON.stringify(errors()));
    const writing = vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: 'rt:report', ttl: 30, mode: 'write' }) as Thenable<HeldLock>;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(api.heldLocks.all().length, 0, 'the writer waits for the Redisson reader');
    assert.equal(await redisson.readUnlock('rt:report', 1), 1);
    const writer = await writing;
    assert.match(writer.hold.owner, /^[0-9a-f-]{36}:\d+:write$/);
    assert.notEqual(await redisson.readLock('rt:report', 1), null, 'a Redisson reader now waits for us');
    await vscode.commands.executeCommand('locklens.releaseLock', writer);
    assert.equal(await redis.cli(['EXISTS', 'rt:report']), '0');
  });

  it('Force Release from a row refuses when the token lock changed hands since the row was drawn, and frees what it shows', async () => {
    await drawnOnlyByTheTest();
    await redis.cli(['SET', 'rt:moved', 'tok-A']);
    await sync();
    const shown = row('moved');
    assert.match(String(shown.item.description), /owner tok-A/);
    await redis.cli(['SET', 'rt:moved', 'tok-B']);
    await sync();

    suite.stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', shown.node);
    assert.deepEqual(confirmations(), [], 'nothing is asked about a lock the user did not see');
    assert.ok(errors().some((e) => /changed hands since it was shown \(owner tok-A, now tok-B\)/.test(e)), JSON.stringify(errors()));
    assert.equal(await redis.cli(['GET', 'rt:moved']), 'tok-B', 'the new holder keeps it');

    // Drawn again, the row shows tok-B; it changes hands once more while the confirmation is open: the store refuses.
    const redrawn = row('moved');
    suite.stubs.warnings(async (_m, items) => {
      await redis.cli(['SET', 'rt:moved', 'tok-C']);
      return items[0];
    });
    await vscode.commands.executeCommand('locklens.forceRelease', redrawn.node);
    assert.match(confirmations().at(-1)?.message ?? '', /from tok-B/);
    assert.ok(errors().some((e) => /no longer held by tok-B: nothing was released/.test(e)), JSON.stringify(errors()));
    assert.equal(await redis.cli(['GET', 'rt:moved']), 'tok-C');

    // Shown as it is, confirmed: deleted, and audited with the owner released.
    await sync();
    const current = row('moved');
    suite.stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', current.node);
    const confirmation = confirmations().at(-1)!;
    assert.match(confirmation.message, /Force-release "rt:moved" from tok-C on e2e-redis\?/);
    assert.equal(await redis.cli(['EXISTS', 'rt:moved']), '0');
    await eventually(() => /forceRelease ok connection="e2e-redis" lock="rt:moved" owner="tok-C" keys=\["rt:moved"\] detail="deleted the key"/.test(auditText(api)), 10_000, 'the audit line');
  });

  it('Force Release of a Redisson holder audits the hash it deleted, not the holder\'s field', async () => {
    assert.equal(await redisson.lock('rt:billing', 3, 60_000, REDISSON_UUID), null);
    await sync();
    const [holder] = rows(row('billing').node);
    suite.stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', holder.node);
    assert.equal(await redis.cli(['EXISTS', 'rt:billing']), '0', JSON.stringify(suite.stubs.shown));
    const field = `${REDISSON_UUID}:3`;
    await eventually(() => new RegExp(`forceRelease ok connection="e2e-redis" lock="rt:billing" owner="${field}" keys=\\["rt:billing"\\]`).test(auditText(api)), 10_000, 'the audit line');
  });

  it('refuses Force Release on a waiter, and in read-only mode even when called with a row or arguments', async () => {
    assert.equal(await redisson.fairLock('rt:queue', 1, 60_000, OTHER_UUID), null);
    assert.notEqual(await redisson.fairLock('rt:queue', 2, 60_000, OTHER_UUID), null);
    await redis.cli(['SET', 'rt:ro', 'tok-ro']);
    await sync();
    const [, waiter] = rows(row('queue').node);
    suite.stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', waiter.node);
    assert.ok(errors().some((e) => /waiting, not holding/.test(e)), JSON.stringify(errors()));
    assert.equal(await redis.cli(['HLEN', 'rt:queue']), '1', 'the holder is untouched');

    await vscode.workspace.getConfiguration('locklens').update('readOnly', true, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('locklens.forceRelease', row('ro').node);
    await vscode.commands.executeCommand('locklens.forceRelease', { connection: CONNECTION, lock: 'rt:ro' });
    assert.equal(errors().filter((e) => /read-only mode/.test(e)).length, 2, JSON.stringify(errors()));
    assert.equal(confirmations().length, 0, 'no confirmation was even asked');
    assert.equal(await redis.cli(['GET', 'rt:ro']), 'tok-ro');
  });

  it('Force Release from a script with the owner it saw refuses once another holds the lock, and frees it while that one does', async () => {
    await redis.cli(['SET', 'rt:scripted', 'tok-seen']);
    await sync();
    await redis.cli(['SET', 'rt:scripted', 'tok-now']);
    await sync();
    suite.stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', { connection: CONNECTION, lock: 'rt:scripted', owner: 'tok-seen' });
    assert.ok(errors().some((e) => e === '"rt:scripted" is held by tok-now now, not by tok-seen: nothing was released.'), JSON.stringify(errors()));
    assert.equal(confirmations().length, 0);
    assert.equal(await redis.cli(['GET', 'rt:scripted']), 'tok-now');
    await vscode.commands.executeCommand('locklens.forceRelease', { connection: CONNECTION, lock: 'rt:scripted', owner: 'tok-now' });
    assert.equal(confirmations().length, 1, 'still confirmed');
    assert.equal(await redis.cli(['EXISTS', 'rt:scripted']), '0');
  });

  it('records the holds of a token lock for Lock History: released when deleted with time left, expired when its PX ran out', async () => {
    const lockId = async () => {
      await sync();
      return api.registry.get(CONNECTION)!.watch!.locks().find((l) => l.name.toString() === 'rt:hist')?.id;
    };
    await redis.cli(['SET', 'rt:hist', 'tok-released', 'PX', '60000']);
    const id = await eventually(lockId, 10_000, 'rt:hist in the model');
    const holds = () => api.records.stats.holds(CONNECTION, id);
    const until = (check: () => boolean, what: string) =>
      eventually(check, 10_000, what).catch((e: Error) => {
        throw new Error(`${e.message}; recorded: ${JSON.stringify(holds())}`);
      });
    await redis.cli(['DEL', 'rt:hist']);
    await until(() => holds()[0]?.end === 'released', 'the first hold released');
    await redis.cli(['SET', 'rt:hist', 'tok-expired', 'PX', '1500']);
    await until(() => holds()[1]?.end === 'expired', 'the second hold expired');
    assert.deepEqual(holds().map((h) => [h.owner, h.token, h.acquiredRevision, h.acquiredExact]), [
      ['tok-released', null, null, true],
      ['tok-expired', null, null, true],
    ]);
    const figures = api.records.stats.figures(CONNECTION, id)!;
    assert.equal(figures.holds, 2);
    assert.equal(figures.hold?.count, 2);
    assert.ok(figures.hold!.max >= 1000, `a 1.5 s hold seen: ${JSON.stringify(figures)}`);
  });

  it('tooltips show a key of markup as text: no HTML, no markdown, no command links', async () => {
    const key = 'rt:<img src=x onerror=alert(1)>**bold**[run](command:locklens.refresh)';
    await redis.cli(['SET', key, 'tok-html']);
    await sync();
    // Its colons make a folder of its name (`rt:<img …>…(command:`), or the prefix row's name when it is alone: plain text.
    const prefixRow = api.tree.getTreeItem(suite.prefixRow());
    const folders = rows().filter((r) => !isLockNode(r.node) && !isMemberNode(r.node));
    for (const r of [{ item: prefixRow }, ...folders]) assert.notEqual(typeof r.item.tooltip, 'object', `${String(r.item.label)}: a tooltip of names is never markdown`);
    const node = suite.lockRow(key);
    assert.ok(node, JSON.stringify(rows().map((r) => r.item.label)));
    const item = api.tree.resolveTreeItem(api.tree.getTreeItem(node), node);
    const md = item.tooltip as vscode.MarkdownString;
    assert.equal(md.isTrusted, false);
    assert.notEqual(md.supportHtml, true);
    assert.ok(md.value.includes('\\*\\*bold\\*\\*'), md.value);
    assert.ok(md.value.includes('\\[run\\]\\(command:locklens.refresh\\)'), md.value);
    assert.ok(!md.value.includes('**bold**'), md.value);
  });

  it('Edit Connection keeps a Redis connection a Redis one, and a password-only login (requirepass) stays on unless turned off', async () => {
    const name = 'e2e-redis-pw';
    await addConnection(api, { name, store: 'redis', endpoints: [withPassword.url], password: 'pw-redis-e2e', prefixes: [PREFIX] });
    const node = () => api.tree.getChildren().find((n) => n.connection.name === name)!;

    // Every step answered with its default, as a user pressing Enter through the flow.
    suite.stubs.inputs((o) => o.value ?? '').picks((items) => items.find((i) => i.picked));
    await vscode.commands.executeCommand('locklens.editConnection', node());
    const settings = () => vscode.workspace.getConfiguration('locklens').get<{ name: string; store?: string }[]>('connections')!.find((c) => c.name === name);
    assert.equal(settings()?.store, 'redis', JSON.stringify(settings()));
    assert.ok(!suite.stubs.shown.some((s) => s.kind === 'input' && /Namespace/.test(s.message)), 'no etcd namespace step for Redis');
    const auth = suite.stubs.shown.find((s) => s.kind === 'pick' && /\(3\/4\)/.test(s.message));
    assert.ok(auth, JSON.stringify(suite.stubs.shown));
    assert.equal((await api.secrets.get(name)).password, 'pw-redis-e2e', 'the stored password is kept');
    await api.registry.get(name)!.refresh();
    await eventually(() => api.registry.get(name)?.state === 'connected', 20_000, 'still connected with its password');
    assert.equal(api.registry.get(name)!.backend?.kind, 'redis');

    // "No authentication" picked: the password goes (and the server then refuses).
    suite.stubs.picks((items, options) => (/\(3\/4\)/.test(options.title ?? '') ? items.find((i) => !i.picked) : items.find((i) => i.picked)));
    await vscode.commands.executeCommand('locklens.editConnection', node());
    assert.equal((await api.secrets.get(name)).password, undefined, 'turning authentication off deletes the password');
  });
});

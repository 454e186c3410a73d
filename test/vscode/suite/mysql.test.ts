import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import type { LockLensApi } from '../../../src/extension/extension';
import type { LockTreeNode } from '../../../src/extension/tree/nodes';
import { eventually } from '../../harness/etcd';
import { ADMIN, startMariaDb, type MariaDbServer } from '../../harness/mariadb';
import { PyMysqlLock } from '../../harness/pymysql';
import { auditText, menuCommands, storeSuite, userDataDir } from './fixture';

/**
 * The Locks tree and the lock commands on a MySQL connection, against a real MariaDB 10.11 and PyMySQL peers: a member
 * is a connection (named by its id, described by user and client, its statement in the tooltip), with no lease, TTL
 * or fencing token; the password reaches SecretStorage only; an acquire from a script waits in GET_LOCK behind
 * PyMySQL's holder; Force Release kills the holding connection after a confirmation that names it; a lock name of
 * markup is shown as text.
 */
describe('Locks tree and commands against a real MariaDB', function () {
  const CONNECTION = 'e2e-mariadb';
  const suite = storeSuite(CONNECTION);
  const { sync, errors, confirmations, lockRow, memberRows } = suite;
  let server: MariaDbServer;
  let api: LockLensApi;

  const pymysql = (name: string) => suite.peer(new PyMysqlLock({ port: server.port, ...ADMIN }, name));
  /** A tooltip's text as read: MarkdownString.appendText escapes markdown's punctuation and writes spaces as &nbsp;. */
  const tooltipOf = (item: vscode.TreeItem, node: LockTreeNode) => (api.tree.resolveTreeItem(item, node).tooltip as vscode.MarkdownString).value;
  const unescaped = (md: string) => md.replace(/&nbsp;/g, ' ').replace(/\\(.)/g, '$1');
  /** Whether GET_LOCK's `name` is held now, by which connection (the server's own answer). */
  const usedBy = async (name: string) => (await server.sql(`SELECT IFNULL(IS_USED_LOCK('${name}'), 'free')`)).trim();

  before(async () => {
    server = await startMariaDb();
    api = await suite.connect({ store: 'mysql', endpoints: [server.url()], username: ADMIN.user, password: ADMIN.password, prefixes: [''] });
  });

  after(async () => {
    await server?.dispose();
  });

  it('the password is in SecretStorage, never in settings.json', async () => {
    const settings = readFileSync(join(userDataDir(api), 'User', 'settings.json'), 'utf8');
    assert.match(settings, /e2e-mariadb/);
    assert.ok(!settings.includes(ADMIN.password), 'no password in settings');
    assert.equal((await api.secrets.get(CONNECTION)).password, ADMIN.password);
  });

  it('rows name the connection, with user and client, offer Force Release and Copy Owner on a holder, and no lease, TTL or token', async () => {
    const holder = pymysql('mdb-rows');
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const waiter = pymysql('mdb-rows');
    const waiterId = await waiter.connectionId();
    await eventually(async () => (await sync(), memberRows('mdb-rows').length === 2), 10_000, 'holder and waiter in the tree');
    const [held, waiting] = memberRows('mdb-rows');
    assert.equal(held.item.label, `connection ${holderId}`);
    assert.equal(waiting.item.label, `connection ${waiterId}`);
    assert.match(String(held.item.description), /^holder · held [^·]+ · locklens@127\.0\.0\.1:\d+/);
    assert.match(String(waiting.item.description), /^waiter #1 · waiting [^·]+ · locklens@127\.0\.0\.1:\d+/);
    for (const row of [held, waiting]) assert.doesNotMatch(String(row.item.description), /TTL|lease|token|no expiry/);
    const commands = menuCommands(held.item.contextValue!);
    assert.ok(commands.includes('locklens.forceRelease') && commands.includes('locklens.copyOwner'), commands.join(' '));
    for (const absent of ['locklens.revokeLease', 'locklens.copyLeaseId', 'locklens.copyFencingToken']) assert.ok(!commands.includes(absent), absent);
    assert.ok(!menuCommands(waiting.item.contextValue!).includes('locklens.forceRelease'), 'a waiter has no hold to release');
    await vscode.commands.executeCommand('locklens.copyOwner', held.node);
    assert.equal(await vscode.env.clipboard.readText(), holderId);

    const heldTip = unescaped(tooltipOf(held.item, held.node));
    for (const row of [`Connection: ${holderId}`, 'User: locklens', 'Client: 127.0.0.1:', 'State: Sleep']) assert.ok(heldTip.includes(row), `${row} in\n${heldTip}`);
    const waitingTip = unescaped(tooltipOf(waiting.item, waiting.node));
    for (const row of [`Connection: ${waiterId}`, 'User: locklens', "Query: SELECT GET_LOCK('mdb-rows', 60)", 'Waiting since: ']) {
      assert.ok(waitingTip.includes(row), `${row} in\n${waitingTip}`);
    }
    // The processlist has no application name (MariaDB's performance_schema, which has, is off by default).
    for (const tip of [heldTip, waitingTip]) assert.doesNotMatch(tip, /Remaining TTL|Application:|Fencing token|Lease:/);
    assert.match(String(api.tree.getTreeItem(lockRow('mdb-rows')!).description), new RegExp(`^held [^·]+ · 1 waiting · by connection ${holderId}$`));
  });

  it('Acquire from a script waits in GET_LOCK behind PyMySQL\'s holder and holds only once it released; Release unlocks', async () => {
    const holder = pymysql('mdb-acquire');
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const acquiring = vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: 'mdb-acquire', ttl: 30 });
    await eventually(async () => (await sync(), memberRows('mdb-acquire').length === 2), 10_000, 'our connection waiting behind PyMySQL');
    assert.equal(api.heldLocks.all().length, 0, 'not held while PyMySQL holds');
    assert.equal(await usedBy('mdb-acquire'), holderId);
    holder.release();
    assert.equal(await holder.until(['released']), 'released 1');
    await acquiring;
    const [mine] = api.heldLocks.all();
    assert.ok(mine, JSON.stringify(errors()));
    assert.equal(await usedBy('mdb-acquire'), mine.hold.owner, 'the server says our connection holds it');
    await eventually(async () => (await sync(), /held by you/.test(String(memberRows('mdb-acquire')[0]?.item.description))), 10_000, 'ours, said so');
    const [ours] = memberRows('mdb-acquire');
    assert.equal(ours.item.label, `connection ${mine.hold.owner}`);
    const taker = pymysql('mdb-acquire');
    await eventually(async () => (await sync(), memberRows('mdb-acquire').length === 2), 10_000, 'PyMySQL waiting behind us');
    await vscode.commands.executeCommand('locklens.releaseLock', ours.node);
    assert.deepEqual(errors(), []);
    assert.equal(api.heldLocks.all().length, 0);
    assert.equal((await taker.until(['acquired'])).split(' ')[1], await taker.connectionId());
  });

  it('Force Release kills the holding connection after a confirmation naming it and its statement; audited; the PyMySQL waiter takes over', async () => {
    const holder = pymysql('mdb-force');
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const waiter = pymysql('mdb-force');
    const waiterId = await waiter.connectionId();
    await eventually(async () => (await sync(), memberRows('mdb-force').length === 2), 10_000, 'holder and waiter in the tree');
    const [held] = memberRows('mdb-force');
    suite.stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', held.node);
    assert.deepEqual(errors(), []);
    const shown = confirmations().at(-1)!;
    assert.match(shown.message, new RegExp(`^Force-release "mdb-force" from connection ${holderId} on ${CONNECTION}\\?`));
    const detail = shown.detail ?? '';
    assert.ok(detail.includes(`connection ${holderId} (user locklens, from 127.0.0.1:`), detail);
    assert.ok(detail.includes(`KILL CONNECTION ${holderId}`), detail);
    assert.match(detail, /state Sleep/, 'what the idle holder is doing');
    assert.ok(detail.includes(`Next holder: connection ${waiterId}`), detail);
    assert.equal((await waiter.until(['acquired'])).split(' ')[1], waiterId);
    assert.equal(await usedBy('mdb-force'), waiterId);
    assert.equal((await server.sql(`SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ${holderId}`)).trim(), '0', 'the connection is gone');
    holder.release();
    assert.match(await holder.until(['release-failed', 'released']), /^release-failed /, 'PyMySQL sees its connection fail');
    await eventually(() => new RegExp(`forceRelease ok connection="${CONNECTION}" lock="mdb-force" owner="${holderId}"`).test(auditText(api)), 10_000, 'the audit line');
    await eventually(async () => (await sync(), new RegExp(`^connection ${waiterId}$`).test(String(memberRows('mdb-force')[0]?.item.label))), 10_000, 'the waiter shown as the holder');
    assert.match(String(memberRows('mdb-force')[0].item.description), /^holder · /);
  });

  it('read-only refuses Force Release even with a row, and asks nothing', async () => {
    const holder = pymysql('mdb-ro');
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    await eventually(async () => (await sync(), memberRows('mdb-ro').length === 1), 10_000, 'the holder in the tree');
    await vscode.workspace.getConfiguration('locklens').update('readOnly', true, vscode.ConfigurationTarget.Global);
    assert.ok(!menuCommands(String(memberRows('mdb-ro')[0].item.contextValue), true).includes('locklens.forceRelease'), 'not in the menu');
    await vscode.commands.executeCommand('locklens.forceRelease', memberRows('mdb-ro')[0].node);
    assert.ok(errors().some((e) => /read-only mode/.test(e)), JSON.stringify(errors()));
    assert.equal(confirmations().length, 0);
    assert.equal(await usedBy('mdb-ro'), holderId, 'PyMySQL still holds');
  });

  it('a lock name of HTML and markdown is shown as text: the row as named, tooltips escaped, nothing trusted', async () => {
    const name = "<img src=x onerror=alert(1)>**bold**[run](command:locklens.refresh)";
    await pymysql(name).until(['acquired']);
    const waiter = pymysql(name);
    await waiter.until(['connected']);
    await eventually(async () => (await sync(), memberRows(name).length === 2), 10_000, 'the markup-named lock with its waiter');
    const lock = lockRow(name)!;
    const lockItem = api.tree.getTreeItem(lock);
    assert.equal(lockItem.label, name, 'the row is labelled with the name as it is');
    const [, waiting] = memberRows(name);
    for (const md of [api.tree.resolveTreeItem(lockItem, lock).tooltip, api.tree.resolveTreeItem(waiting.item, waiting.node).tooltip] as vscode.MarkdownString[]) {
      assert.equal(md.isTrusted, false);
      assert.notEqual(md.supportHtml, true);
      assert.ok(md.value.includes('\\*\\*bold\\*\\*') && md.value.includes('\\[run\\]\\(command:locklens.refresh\\)'), md.value);
      assert.ok(!md.value.includes('**bold**') && !md.value.includes('[run](command:'), md.value);
      assert.ok(unescaped(md.value).includes('<img src=x onerror=alert(1)>'), 'the markup shown, as text');
    }
    assert.ok(unescaped(tooltipOf(waiting.item, waiting.node)).includes(`Query: SELECT GET_LOCK('${name}', 60)`), 'the waiter\'s statement, with the name');
  });
});

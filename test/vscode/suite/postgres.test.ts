import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import type { LockLensApi } from '../../../src/extension/extension';
import { eventually } from '../../harness/etcd';
import { PLAIN_PASSWORD, PLAIN_USER, startPostgres, SUPERUSER, SUPERUSER_PASSWORD, type PostgresServer } from '../../harness/postgres';
import { PsycopgLock } from '../../harness/psycopg';
import { addConnection, auditText, menuCommands, removeConnectionSetting, storeSuite, userDataDir } from './fixture';

/**
 * The Locks tree and the lock commands on a PostgreSQL connection, against a real PostgreSQL and psycopg2 peers: a
 * member is a database session (named by pid, described by application, user and client, its query in the tooltip),
 * with no lease, TTL or fencing token; the password reaches SecretStorage only; an acquire from a script queues behind
 * psycopg2's holder; Force Release terminates the holding session after a confirmation that names it; a stuck
 * Liquibase row is shown as held with no expiry and released with Liquibase's own statement.
 */
describe('Locks tree and commands against a real PostgreSQL', function () {
  const CONNECTION = 'e2e-postgres';
  const suite = storeSuite(CONNECTION);
  const { sync, errors, confirmations, lockRow, memberRows } = suite;
  let server: PostgresServer;
  let api: LockLensApi;

  const psycopg = (key: string, application: string) => suite.peer(new PsycopgLock(server.dsn(), key, { application }));

  before(async () => {
    server = await startPostgres();
    api = await suite.connect({ store: 'postgres', endpoints: [server.url()], username: SUPERUSER, password: SUPERUSER_PASSWORD, prefixes: [''] });
  });

  after(async () => {
    await server?.dispose();
  });

  it('the password is in SecretStorage, never in settings.json', () => {
    const settings = readFileSync(join(userDataDir(api), 'User', 'settings.json'), 'utf8');
    assert.match(settings, /e2e-postgres/);
    assert.ok(!settings.includes(SUPERUSER_PASSWORD), 'no password in settings');
  });

  it('rows name the session by application and client, offer Force Release and Copy Owner on a holder, and no lease, TTL or token', async () => {
    const holder = psycopg('4101', 'billing-worker');
    const pid = await holder.pid();
    await holder.until(['acquired']);
    await psycopg('4101', 'report-export').until(['waiting']);
    await eventually(async () => (await sync(), memberRows('4101').length === 2), 10_000, 'holder and waiter in the tree');
    const [held, waiting] = memberRows('4101');
    assert.match(String(held.item.description), /^holder · held [^·]+ · billing-worker · postgres@127\.0\.0\.1:\d+/);
    assert.match(String(waiting.item.description), /^waiter #1 · waiting [^·]+ · report-export · /);
    assert.doesNotMatch(String(held.item.description), /TTL|lease|token|no expiry/);
    const commands = menuCommands(held.item.contextValue!);
    assert.ok(commands.includes('locklens.forceRelease') && commands.includes('locklens.copyOwner'), commands.join(' '));
    for (const absent of ['locklens.revokeLease', 'locklens.copyLeaseId', 'locklens.copyFencingToken']) assert.ok(!commands.includes(absent), absent);
    await vscode.commands.executeCommand('locklens.copyOwner', held.node);
    assert.equal(await vscode.env.clipboard.readText(), String(pid));
    const tooltip = (api.tree.resolveTreeItem(held.item, held.node).tooltip as vscode.MarkdownString).value;
    for (const row of [`Connection: ${pid}`, 'Application: billing-worker', 'User: postgres', 'Query: ']) assert.ok(tooltip.includes(row), `${row} in\n${tooltip}`);
    assert.doesNotMatch(tooltip, /Remaining TTL/);
    const lock = lockRow('4101')!;
    assert.match(String(api.tree.getTreeItem(lock).description), /^held [^·]+ · 1 waiting · by pid \d+ · \(0, 4101\)$/, 'the bigint key as its int pair too');
  });

  it('Acquire from a script queues behind psycopg2\'s holder and holds only once it released; Release unlocks', async () => {
    const holder = psycopg('4102', 'py-holder');
    await holder.until(['acquired']);
    const acquiring = vscode.commands.executeCommand('locklens.acquireLock', { connection: CONNECTION, name: '4102', ttl: 10 });
    await eventually(async () => (await sync(), memberRows('4102').length === 2), 10_000, 'our session queued behind psycopg2');
    assert.equal(api.heldLocks.all().length, 0, 'not held while psycopg2 holds');
    holder.release();
    await acquiring;
    const [mine] = api.heldLocks.all();
    assert.ok(mine, JSON.stringify(errors()));
    await eventually(async () => (await sync(), /held by you/.test(String(memberRows('4102')[0]?.item.description))), 10_000, 'ours, said so');
    const taker = psycopg('4102', 'py-try');
    await taker.until(['waiting']);
    await vscode.commands.executeCommand('locklens.releaseLock', memberRows('4102')[0].node);
    assert.equal(api.heldLocks.all().length, 0);
    await taker.until(['acquired']);
  });

  it('Force Release terminates the holding session after a confirmation naming it, its application and query; audited; the waiter takes over', async () => {
    const holder = psycopg('4103', 'stuck-billing');
    const pid = await holder.pid();
    await holder.until(['acquired']);
    const waiter = psycopg('4103', 'next-in-line');
    await waiter.until(['waiting']);
    await eventually(async () => (await sync(), memberRows('4103').length === 2), 10_000, 'holder and waiter in the tree');
    const [held] = memberRows('4103');
    suite.stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', held.node);
    const detail = confirmations().at(-1)?.detail ?? '';
    assert.ok(detail.includes(String(pid)) && detail.includes('stuck-billing'), detail);
    await waiter.until(['acquired']);
    await eventually(() => new RegExp(`forceRelease ok connection="e2e-postgres" lock="4103" owner="${pid}"`).test(auditText(api)), 10_000, 'the audit line');
    const rows = await server.superuserQuery(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid}`);
    assert.equal(rows[0].n, 0, 'the session is gone');
  });

  it('read-only refuses Force Release even with a row, and asks nothing', async () => {
    const holder = psycopg('4104', 'ro-holder');
    await holder.until(['acquired']);
    await eventually(async () => (await sync(), memberRows('4104').length === 1), 10_000, 'the holder in the tree');
    await vscode.workspace.getConfiguration('locklens').update('readOnly', true, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('locklens.forceRelease', memberRows('4104')[0].node);
    assert.ok(errors().some((e) => /read-only mode/.test(e)), JSON.stringify(errors()));
    assert.equal(confirmations().length, 0);
    const rows = await server.superuserQuery(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = 4104 AND granted`);
    assert.equal(rows[0].n, 1, 'psycopg2 still holds');
  });

  it('a role that may not see other sessions sees their locks, and the connection says what is hidden and how to see it', async () => {
    const holder = psycopg('4105', 'secret-app');
    await holder.until(['acquired']);
    const plain = 'e2e-postgres-plain';
    try {
      await addConnection(api, { name: plain, store: 'postgres', endpoints: [server.url(PLAIN_USER)], username: PLAIN_USER, password: PLAIN_PASSWORD, prefixes: ['4105'] });
      await eventually(async () => (await api.registry.get(plain)!.watch!.sync(), api.registry.get(plain)!.hidden !== undefined), 10_000, 'the hidden note');
      const row = api.tree.getChildren().find((n) => n.connection.name === plain)!;
      const item = api.tree.getTreeItem(row);
      assert.equal(item.description, 'connected; some details hidden');
      assert.match((item.tooltip as vscode.MarkdownString).value, /\$\(eye-closed\).*pg\\_read\\_all\\_stats/);
      const [lock] = api.registry.get(plain)!.watch!.locks();
      assert.deepEqual([lock.holder?.owner !== undefined, lock.holder?.session?.client, lock.holder?.session?.query], [true, undefined, undefined], 'another role\'s client and query are hidden, its pid is not');
    } finally {
      await removeConnectionSetting(plain);
    }
  });

  it('a stuck Liquibase lock shows as held with no expiry, and Force Release runs Liquibase\'s own unlock', async () => {
    await server.superuserQuery(
      `CREATE TABLE databasechangeloglock (id int PRIMARY KEY, locked boolean NOT NULL, lockgranted timestamp, lockedby varchar(255));
       INSERT INTO databasechangeloglock VALUES (1, true, now() - interval '2 hours', 'migrator-7f3c (10.0.4.17)')`,
    );
    await eventually(async () => (await sync(), memberRows('databasechangeloglock/1').length === 1), 10_000, 'the Liquibase lock in the tree');
    const [row] = memberRows('databasechangeloglock/1');
    assert.match(String(row.item.description), /no expiry · locked by migrator-7f3c/);
    suite.stubs.warnings((_m, items) => items[0]);
    await vscode.commands.executeCommand('locklens.forceRelease', row.node);
    assert.deepEqual(errors(), []);
    const [after] = await server.superuserQuery('SELECT locked, lockedby FROM databasechangeloglock WHERE id = 1');
    assert.deepEqual(after, { locked: false, lockedby: null });
    await eventually(async () => (await sync(), memberRows('databasechangeloglock/1').length === 0), 10_000, 'free: gone from the tree');
  });
});

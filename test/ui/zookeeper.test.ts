import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import * as zookeeper from 'node-zookeeper-client';
import type { ZkClient } from '../../src/core/zookeeper/client';
import { ZkConnection, ensembleOf, openSession } from '../../src/core/zookeeper/connect';
import { eventually } from '../harness/etcd';
import { KazooLock } from '../harness/kazoo';
import { cleanUpEach, confirmFromContextMenu, openLockLensUi, openViewContainer, runCommand, viewHelpers, widenSidebar, type LockLensUi } from '../harness/workbench';
import { escapeRegExp } from '../harness/regexp';
import { startZooKeeper, type ZooKeeperServer } from '../harness/zookeeper';

/**
 * The Locks view on a ZooKeeper connection, as a user works it: a real ZooKeeper (Debian's) with the locks real
 * services leave there: kazoo's own `Lock` held by one python process and waited for by another, and an Apache
 * Curator `InterProcessMutex` whose holder's process is stuck (its session alive, never releasing), its nodes made with
 * Curator's exact names and data (the client's IP). The built extension in code-server, in headless Chromium: the
 * tree's rows (session as owner, czxid as fencing token, no TTL to count down), "Acquire Lock…" on a new name held
 * through a session of LockLens's own and released from the status bar, and "Force Release…" on the stuck holder,
 * whose confirmation says that its process is not told. Screenshots go to test-output/screenshots/.
 */

const CONNECTION = 'zk-local';
const ROOT = '/app';
const REPORT = '/app/locks/report';
const MIGRATE = '/app/locks/migrate';
const BY_HAND = '/app/locks/by-hand';

describe('Locks view on a ZooKeeper connection (code-server + Chromium + ZooKeeper)', { timeout: 8 * 60_000 }, () => {
  let server: ZooKeeperServer;
  let holder: KazooLock;
  let waiter: KazooLock;
  /** The test's own session, to look at nodes behind LockLens's back. */
  let raw: ZkConnection;
  /** The stuck Curator holder's session, and its node's path. */
  let stuck: ZkClient;
  let stuckNode = '';
  let stuckSession = '';
  let reportNode = '';
  let reportSession = '';
  let ui: LockLensUi | undefined;
  let page: Page;

  const { rowLabelled, rowLabels, description, quickInputTitled, acceptInputTitled, toast, pickLayout, expand, cleanShot: shot } = viewHelpers(() => page);
  const leaf = (path: string) => path.slice(path.lastIndexOf('/') + 1);
  const exists = async (path: string) => (await raw.client.data(path)) !== undefined;





  before(async () => {
    server = await startZooKeeper();
    const { url, spec } = ensembleOf({ endpoints: [server.url], dialTimeoutMs: 5000 });
    raw = await ZkConnection.open(spec, url.servers);
    // kazoo's Lock: one python process holds, another waits behind it.
    holder = new KazooLock(`127.0.0.1:${server.port}`, REPORT, { identifier: 'report-worker-1', sessionSeconds: 10 });
    const acquired = (await holder.until(['acquired'])).split(' ');
    reportNode = `${REPORT}/${acquired[1]}`;
    reportSession = acquired[2];
    waiter = new KazooLock(`127.0.0.1:${server.port}`, REPORT, { identifier: 'report-worker-2', sessionSeconds: 10 });
    await waiter.until(['waiting']);
    // Curator's InterProcessMutex, as its nodes are named and filled (the client's IP), held by a stuck process.
    await raw.client.mkdirp(MIGRATE);
    stuck = await openSession({ ...spec, sessionTimeoutMs: 10_000 }, url.servers);
    stuckNode = await stuck.create(`${MIGRATE}/_c_${randomUUID()}-lock-`, Buffer.from('10.0.0.7'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
    stuckSession = stuck.sessionId;

    ui = await openLockLensUi({
      name: 'zookeeper',
      readme: 'a workspace for the LockLens ZooKeeper UI tests',
      settings: { 'locklens.connections': [{ name: CONNECTION, store: 'zookeeper', endpoints: [server.url], prefixes: [ROOT] }] },
      viewport: { width: 1600, height: 900 },
    });
    page = ui.page;
  });

  after(async () => {
    await cleanUpEach([() => ui?.close(), () => holder?.dispose(), () => waiter?.dispose(), () => stuck?.close(), () => raw?.close(), () => server?.dispose()]);
  });

  test('the tree shows kazoo\'s holder and its waiter in sequence order, and the Curator holder, with sessions and czxid tokens', async () => {
    await openViewContainer(page, 'LockLens');
    await widenSidebar(page, 760);
    await page.mouse.move(1300, 300);
    try {
      await rowLabelled(CONNECTION).waitFor({ state: 'visible', timeout: 60_000 });
      await eventually(async () => /^connected/.test(await description(rowLabelled(CONNECTION))), 30_000, 'connection row says connected');
      await expand(rowLabelled(ROOT));
      const report = rowLabelled('report');
      await report.waitFor({ state: 'visible', timeout: 30_000 }).catch(async (e: unknown) => {
        throw new Error(`no report row; the tree shows ${JSON.stringify(await rowLabels())}: ${String(e)}`);
      });
      assert.match(await description(report), /· 1 waiting/);
      await expand(report);
      // Named by who they are, kazoo's identifier (the node's data); the node's name is in the tooltip.
      const holderRow = rowLabelled('report-worker-1');
      await holderRow.waitFor({ state: 'visible', timeout: 20_000 });
      const held = await description(holderRow);
      assert.match(held, new RegExp(`^holder · held [^·]+ · session ${reportSession} · token \\d+`), `kazoo holder row: ${held}`);
      assert.doesNotMatch(held, /TTL/, 'a session has no TTL to count down');
      const labels = await rowLabels();
      assert.equal(labels[labels.indexOf('report-worker-1') + 1], 'report-worker-2', `the waiter next: ${JSON.stringify(labels)}`);
      assert.match(await description(rowLabelled('report-worker-2')), /^waiter #1 · waiting [^·]+ · session [0-9a-f]+ · token \d+/);
      const hover = page.locator('.monaco-hover, .workbench-hover-container');
      await holderRow.hover();
      await hover.filter({ hasText: leaf(reportNode) }).first().waitFor({ state: 'visible', timeout: 20_000 });
      await rowLabelled('report-worker-2').hover();
      await hover.filter({ hasText: /__lock__\d{10}/ }).first().waitFor({ state: 'visible', timeout: 20_000 });
      await page.mouse.move(1300, 300);

      const migrate = rowLabelled('migrate');
      await expand(migrate);
      // Curator writes the client's address as the node's data.
      const curator = await description(rowLabelled('10.0.0.7'));
      assert.match(curator, new RegExp(`^holder · held [^·]+ · session ${stuckSession} · token \\d+`), `Curator holder row: ${curator}`);
    } finally {
      await shot('zk-tree');
    }
  });

  test('"Acquire Lock…" on a new name asks a session timeout, holds through a node of its own, and the status bar releases it', async () => {
    await runCommand(page, 'LockLens: Acquire Lock…');
    await quickInputTitled(new RegExp(`Acquire lock on ${escapeRegExp(CONNECTION)}`));
    await page.locator('.quick-input-widget input').fill(BY_HAND);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'new lock' }).first().waitFor({ state: 'visible', timeout: 20_000 });
    await page.keyboard.press('Enter');
    // A new name is taken in a layout, asked next (the README's layout of a free name).
    await pickLayout('kazoo:');
    await quickInputTitled(/Session timeout/);
    await acceptInputTitled(/Session timeout/);
    const item = page.locator('.part.statusbar .statusbar-item', { hasText: BY_HAND });
    await item.waitFor({ state: 'visible', timeout: 30_000 });
    const [node] = (await raw.client.children(BY_HAND)) ?? [];
    assert.match(node ?? '', /^[0-9a-f]{32}__lock__\d{10}$/, 'kazoo\'s layout for a new name');
    await toast(/You hold/).waitFor({ state: 'visible', timeout: 20_000 });
    assert.match((await toast(/You hold/).textContent()) ?? '', /fencing token \d+, session [0-9a-f]+/);
    await eventually(async () => (await rowLabels()).includes('by-hand'), 20_000, 'the by-hand lock in the tree');
    await shot('zk-acquire');
    await item.click();
    await eventually(async () => ((await raw.client.children(BY_HAND)) ?? []).length === 0, 20_000, 'our node deleted');
    await item.waitFor({ state: 'hidden', timeout: 20_000 });
    await runCommand(page, 'Notifications: Clear All Notifications');
  });

  test('"Force Release…" on the stuck Curator holder says its process is not told, shows the token, then deletes its node', async () => {
    const row = rowLabelled('10.0.0.7');
    const dialog = await confirmFromContextMenu(page, row, 'Force Release…');
    const detail = ((await dialog.locator('.dialog-message-detail').textContent().catch(() => '')) ?? '').trim();
    assert.match(detail, /not told/i, `the confirmation says the holder is not told: ${detail}`);
    assert.match(detail, /czxid|fencing token|token \d+/i, `and names its fencing token: ${detail}`);
    assert.ok(await exists(stuckNode), 'nothing deleted before the confirmation');
    await shot('zk-force-release-confirm');
    await dialog.locator('.monaco-button', { hasText: 'Force Release' }).first().click();
    await dialog.waitFor({ state: 'hidden', timeout: 20_000 });
    await eventually(async () => !(await exists(stuckNode)), 20_000, 'the stuck node deleted');
    await row.waitFor({ state: 'detached', timeout: 20_000 });
    assert.ok(await exists(reportNode), 'only the stuck lock: kazoo still holds report');
    await shot('zk-after-force-release');
    await runCommand(page, 'Notifications: Clear All Notifications');
  });

  test('the timeline shows the ZooKeeper holds by session, with no TTL countdown and no lease buttons: Force Release… instead', async () => {
    await runCommand(page, 'LockLens: Open Lock Timeline');
    const timeline = page.frameLocator('iframe.webview').frameLocator('iframe#active-frame');
    await eventually(async () => ((await timeline.locator('#rows li').allTextContents()).join('\n')).includes(reportSession), 60_000, 'the kazoo hold as a bar');
    await timeline.locator('#filter input').fill(REPORT);
    await timeline.locator('#scroller').focus();
    await timeline.locator('#scroller').press('Home');
    const info = timeline.locator('#detail-info');
    await eventually(async () => ((await info.textContent()) ?? '').includes(reportSession), 20_000, 'the kazoo bar selected');
    assert.equal(await timeline.locator('#revoke').isVisible(), false, 'no Revoke Lease: a session cannot be revoked');
    assert.equal(await timeline.locator('#copy').isVisible(), false, 'no Copy Lease ID: a session is no lease');
    assert.equal(((await timeline.locator('#force-release').textContent()) ?? '').trim(), 'Force Release…', 'the holder\'s action, named for its store');
    assert.equal(await timeline.locator('#force-release').isVisible(), true, 'Force Release… on a ZooKeeper holder');
    await shot('zk-timeline');
  });
});

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { Procs } from '../harness/cli';
import { eventually, startEtcd, type EtcdServer } from '../harness/etcd';
import { cleanUpEach, confirmFromContextMenu, openLockLensUi, openViewContainer, runCommand, screenshot, treeRows, viewHelpers, widenSidebar, type LockLensUi } from '../harness/workbench';
import { escapeRegExp } from '../harness/regexp';

/**
 * The Locks view as a user works it (issue 3): a real etcd with `etcdctl lock` holders and waiters, a single-key lock
 * and an `etcdctl elect` election; the built extension in a normal code-server (notifications and dialogs show), in
 * headless Chromium. The tree's rows, "Acquire Lock…" from the command palette (a new lock, and joining a held one's
 * queue, cancelled from its notification), the held-lock status bar item releasing on a click, and revoking the
 * holder's lease through the tree's context menu and its confirmation. Screenshots go to test-output/screenshots/.
 */

const CONNECTION = 'local';
const PREFIXES = ['/locks/', '/election/'];
const JOBS = '/locks/jobs';
const BY_HAND = '/locks/by-hand';

interface Kv {
  readonly key: string;
  /** The lease in hex, read from the key's last segment (etcdctl's JSON prints lease IDs as inexact numbers). */
  readonly lease: string;
  readonly create: number;
}

describe('Locks view, commands and status bar (code-server + Chromium + etcd)', { timeout: 8 * 60_000 }, () => {
  let etcd: EtcdServer;
  let procs: Procs;
  let ui: LockLensUi | undefined;
  let page: Page;
  /** The jobs queue as etcdctl wrote it: holder, waiter #1, waiter #2. */
  let queue: Kv[] = [];

  /** Keys under `prefix` in create-revision order. */
  async function keysOf(prefix: string): Promise<Kv[]> {
    const out = JSON.parse(await etcd.etcdctl(['get', '--prefix', prefix, '-w', 'json'])) as { kvs?: { key: string; create_revision: number }[] };
    return (out.kvs ?? [])
      .map((kv) => ({ key: Buffer.from(kv.key, 'base64').toString(), create: kv.create_revision }))
      .map(({ key, create }) => ({ key, lease: key.slice(key.lastIndexOf('/') + 1), create }))
      .sort((a, b) => a.create - b.create);
  }

  /** Starts `etcdctl ARGS` and waits until the keys under `prefix` number `count`. */
  async function startAndWait(args: string[], prefix: string, count: number): Promise<void> {
    const proc = procs.etcdctl(args);
    await eventually(async () => {
      if (!proc.running) throw new Error(`etcdctl ${args.join(' ')} exited: ${proc.stderr}`);
      return (await keysOf(prefix)).length === count;
    }, 20_000, `etcdctl ${args.join(' ')}`);
  }

  const { rowLabelled, rowLabels, description, quickInputTitled, acceptInputTitled, toast, pickLayout } = viewHelpers(() => page);

  /** Expands a collapsed tree row with a click. */
  async function expand(row: Locator): Promise<void> {
    await row.waitFor({ state: 'visible', timeout: 30_000 });
    if ((await row.getAttribute('aria-expanded')) === 'false') await row.click();
    await eventually(async () => (await row.getAttribute('aria-expanded')) === 'true', 10_000, 'row expanded');
  }

  /** Runs "LockLens: Acquire Lock…" from the command palette and returns the input of the lock-name quick pick it opens. */
  async function acquireFromPalette(): Promise<Locator> {
    await runCommand(page, 'LockLens: Acquire Lock…');
    await quickInputTitled(new RegExp(`Acquire lock on ${CONNECTION}`));
    return page.locator('.quick-input-widget input');
  }

  before(async () => {
    etcd = await startEtcd();
    procs = new Procs(etcd.endpoint);
    // One after another, so that the queue order is known: holder, waiter #1, waiter #2.
    for (let i = 1; i <= 3; i++) await startAndWait(['lock', JOBS, 'sleep', '120'], `${JOBS}/`, i);
    queue = await keysOf(`${JOBS}/`);
    await etcd.etcdctl(['put', '/locks/solo', 'x']);
    // `etcdctl elect NAME PROPOSAL` campaigns until killed: node-a leads, node-b is the candidate behind it.
    await startAndWait(['elect', '/election/leader', 'node-a'], '/election/leader/', 1);
    await startAndWait(['elect', '/election/leader', 'node-b'], '/election/leader/', 2);

    ui = await openLockLensUi({
      name: 'locks',
      readme: 'a workspace for the LockLens Locks view tests',
      settings: { 'locklens.connections': [{ name: CONNECTION, endpoints: [etcd.endpoint], prefixes: PREFIXES }] },
      viewport: { width: 1600, height: 900 },
    });
    page = ui.page;
  });

  after(async () => {
    await cleanUpEach([() => ui?.close(), () => procs?.dispose(), () => etcd?.dispose()]);
  });

  test('the Locks view shows the jobs holder, then its waiters #1 and #2 in create-revision order', async () => {
    await openViewContainer(page, 'LockLens');
    // Room for the rows' descriptions (role, lease, TTL, token, age).
    await widenSidebar(page, 700);
    await rowLabelled(CONNECTION).waitFor({ state: 'visible', timeout: 60_000 });
    await eventually(async () => /^connected/.test(await description(rowLabelled(CONNECTION))), 30_000, 'connection row says connected');
    for (const label of ['jobs', 'solo', 'leader']) await rowLabelled(label).waitFor({ state: 'visible', timeout: 30_000 });
    assert.match(await description(rowLabelled('jobs')), new RegExp(`^held (≥)?(<1m|\\d+[mhd]) · 2 waiting · by ${queue[0].lease}$`));
    assert.match(await description(rowLabelled('solo')), /^held (≥ )?\d+[smhd][^·]* \(single key\)/);
    assert.match(await description(rowLabelled('leader')), /^elected (≥)?(<1m|\d+[mhd]) ago · 1 candidate · leader node-a$/);

    await expand(rowLabelled('jobs'));
    await eventually(async () => (await rowLabels()).includes(queue[2].lease), 20_000, 'member rows');
    const labels = await rowLabels();
    const at = labels.indexOf('jobs');
    assert.deepEqual(labels.slice(at + 1, at + 4), queue.map((k) => k.lease), `rows after jobs: ${JSON.stringify(labels)}`);
    const roles = await Promise.all(queue.map((k) => description(rowLabelled(k.lease))));
    assert.match(roles[0], /^holder · held [^·]+ · TTL \d+s · token \d+/);
    assert.match(roles[1], /^waiter #1 · waiting [^·]+ · TTL \d+s · token \d+/);
    assert.match(roles[2], /^waiter #2 · waiting [^·]+ · TTL \d+s · token \d+/);
    queue.forEach((k, i) => assert.match(roles[i], new RegExp(`token ${k.create}\\b`), 'the fencing token is the create revision'));

    await expand(rowLabelled('leader'));
    await rowLabelled('node-b').waitFor({ state: 'visible', timeout: 20_000 });
    assert.match(await description(rowLabelled('node-a')), /^leader/);
    assert.match(await description(rowLabelled('node-b')), /^candidate #1/);
    await screenshot(page, 'tree');
  });

  test('"Acquire Lock…" from the palette takes a new lock and shows it in the status bar', async () => {
    const input = await acquireFromPalette();
    await input.fill(BY_HAND);
    // The typed name becomes a "new lock" item once the extension has seen the value.
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'new lock' }).first().waitFor({ state: 'visible', timeout: 20_000 });
    await page.keyboard.press('Enter');
    // A new name is taken in a layout, asked next (the README's layout of a free name).
    await pickLayout('queue <name>/<lease>');
    // The TTL input box, with the default filled in.
    await acceptInputTitled(/Lease TTL/);

    const item = page.locator('.part.statusbar .statusbar-item', { hasText: BY_HAND });
    await item.waitFor({ state: 'visible', timeout: 30_000 });
    assert.equal((await keysOf(`${BY_HAND}/`)).length, 1, 'one key under the new lock');
    await toast(/You hold/).waitFor({ state: 'visible', timeout: 20_000 });
    await page.locator('.notification-toast', { hasText: `Acquiring "${BY_HAND}"` }).waitFor({ state: 'detached', timeout: 20_000 });
    await screenshot(page, 'acquire');
  });

  test('acquiring a held lock asks first, shows the queue position, and cancelling leaves the queue', async () => {
    const before = new Set((await keysOf(`${JOBS}/`)).map((k) => k.key));
    const input = await acquireFromPalette();
    await input.fill(JOBS);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: JOBS }).first().waitFor({ state: 'visible', timeout: 20_000 });
    await page.keyboard.press('Enter');
    await acceptInputTitled(/Lease TTL/);

    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 20_000 });
    const question = (await dialog.textContent()) ?? '';
    assert.match(question, /Join the queue\?/);
    assert.match(question, new RegExp(`held by ${escapeRegExp(queue[0].key)}, with 2 waiting`));
    await dialog.locator('.monaco-button', { hasText: 'Join Queue' }).click();
    await dialog.waitFor({ state: 'hidden', timeout: 20_000 });

    // Holder and two waiters ahead.
    const progress = toast(/ahead in the queue/);
    await progress.waitFor({ state: 'visible', timeout: 30_000 });
    assert.match((await progress.textContent()) ?? '', /Acquiring "\/locks\/jobs".*3 ahead in the queue; you will hold it with fencing token \d+/);
    const mine = await eventually(async () => (await keysOf(`${JOBS}/`)).find((k) => !before.has(k.key)), 10_000, 'our key queued');
    await screenshot(page, 'acquire-queued');

    await progress.hover();
    await progress.locator('.monaco-button, .action-label', { hasText: 'Cancel' }).first().click();
    await progress.waitFor({ state: 'hidden', timeout: 20_000 });
    await eventually(async () => !(await keysOf(`${JOBS}/`)).some((k) => k.key === mine.key), 20_000, 'our queued key deleted');
    assert.deepEqual((await keysOf(`${JOBS}/`)).map((k) => k.key), queue.map((k) => k.key));
  });

  test('clicking the status bar item releases the lock', async () => {
    const item = page.locator('.part.statusbar .statusbar-item', { hasText: BY_HAND });
    await item.click();
    await eventually(async () => (await keysOf(`${BY_HAND}/`)).length === 0, 20_000, `${BY_HAND} key deleted`);
    await item.waitFor({ state: 'hidden', timeout: 20_000 });
    // And the tree has redrawn without it (a lock gone changes its prefix's list: VS Code re-fetches those rows).
    await rowLabelled('by-hand').waitFor({ state: 'detached', timeout: 20_000 });
  });

  test('revoking the holder\'s lease from the tree asks with the keys and the next holder, then waiter #1 holds', async () => {
    // The command must get the row: if it asked for a lease in a quick pick instead ("Lease on local"), the tree
    // dropped the row's handle under the menu (lease sweeps used to redraw the lock row and its member rows).
    const dialog = await confirmFromContextMenu(page, rowLabelled(queue[0].lease), 'Revoke Lease…');
    const text = (await dialog.textContent()) ?? '';
    assert.match(text, new RegExp(`Revoke lease ${queue[0].lease} on ${CONNECTION}\\?`));
    assert.match(text, new RegExp(escapeRegExp(queue[0].key)), 'lists the key deleted');
    assert.match(text, new RegExp(`${escapeRegExp(JOBS)} → next holder ${escapeRegExp(queue[1].key)}`));
    await screenshot(page, 'revoke-confirm');
    await dialog.locator('.monaco-button', { hasText: 'Revoke Lease' }).first().click();
    await dialog.waitFor({ state: 'hidden', timeout: 20_000 });

    await eventually(async () => !(await keysOf(`${JOBS}/`)).some((k) => k.key === queue[0].key), 20_000, 'holder key deleted');
    await rowLabelled(queue[0].lease).waitFor({ state: 'detached', timeout: 20_000 });
    await eventually(async () => /^holder · /.test(await description(rowLabelled(queue[1].lease))), 20_000, 'waiter #1 holds');
    assert.match(await description(rowLabelled(queue[2].lease)), /^waiter #1 · /);
    await toast(/Revoked lease/).waitFor({ state: 'visible', timeout: 20_000 });
    await screenshot(page, 'after-revoke');
  });

  test('with every prefix unwatched the view says how to watch one', async () => {
    for (const prefix of PREFIXES) {
      const row = rowLabelled(prefix);
      await row.hover();
      await row.locator('.action-label[aria-label="Stop Watching Prefix"]').click();
      await row.waitFor({ state: 'detached', timeout: 20_000 });
    }
    // The Locks view's own pane: the Lock History view below it has a tree (and a welcome) of its own.
    const locksPane = '.part.sidebar .pane:has(.pane-header h3.title:text-is("Locks"))';
    const welcome = page.locator(`${locksPane} .welcome-view-content`);
    await welcome.waitFor({ state: 'visible', timeout: 20_000 });
    assert.match((await welcome.textContent()) ?? '', /No watched prefix yet/);
    assert.ok(await welcome.locator('.monaco-button', { hasText: 'Watch Prefix' }).isVisible());
    assert.deepEqual(await treeRows(page, `${locksPane} .tree-explorer-viewlet-tree-view`), []);
    await screenshot(page, 'no-prefix');
  });
});


import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FrameLocator, Locator, Page } from 'playwright-core';
import { Procs } from '../harness/cli';
import { eventually, startEtcd, type EtcdServer } from '../harness/etcd';
import { cleanUpEach, openLockLensUi, openViewContainer, runCommand, screenshot, viewHelpers, widenSidebar, type LockLensUi } from '../harness/workbench';

/**
 * Contention history as a user sees it (issue 14): `etcdctl lock` runs that came and went before VS Code started, a
 * holder and a waiter now; the lock selected in the Locks view shows in the Lock History view, "Replay History from
 * the Store" rebuilds the runs from etcd's MVCC history, "Show Past in Lock Timeline" draws them on a revision axis
 * under the live bars, and "Copy Incident Report" opens as Markdown. A lock whose name is markup shows as text there
 * and runs nothing.
 */

const CONNECTION = 'ui';
const DEPLOY = '/locks/deploy';
const HOSTILE = '/locks/<img src=x onerror=window.__pwned=1>';
/** The two locks' rows, under the /locks/ prefix row. */
const DEPLOY_LABEL = DEPLOY.slice('/locks/'.length);
const HOSTILE_LABEL = HOSTILE.slice('/locks/'.length);

interface WebviewGlobals {
  __pwned?: unknown;
}

describe('Lock History view and the timeline past (code-server + Chromium + etcd)', { timeout: 6 * 60_000 }, () => {
  let etcd: EtcdServer;
  let procs: Procs;
  let ui: LockLensUi | undefined;
  let page: Page;
  let timeline: FrameLocator;
  /** The leases of the runs that came and went, in the order they held; then the holder's. */
  const past: string[] = [];
  let holder = '';

  const leasesUnder = async (name: string) =>
    (await etcd.etcdctl(['get', '--prefix', `${name}/`, '--keys-only'])).split('\n').filter((l) => l).map((k) => k.slice(k.lastIndexOf('/') + 1));

  /** `etcdctl lock NAME sleep SECONDS`, once its key is written (runs queue in the order started). */
  async function etcdctlLock(name: string, seconds: number) {
    const before = new Set(await leasesUnder(name));
    const proc = procs.etcdctl(['lock', name, 'sleep', String(seconds)]);
    const lease = await eventually(async () => {
      if (!proc.running && proc.child.exitCode !== 0) throw new Error(`etcdctl lock exited: ${proc.stderr}`);
      return (await leasesUnder(name)).find((l) => !before.has(l));
    }, 20_000, `etcdctl lock ${name}`);
    return { proc, lease };
  }

  const { rowLabelled, rowLabels, toast } = viewHelpers(() => page);
  const historyView = () => page.locator('.pane', { has: page.locator('.pane-header', { hasText: /Lock History/i }) });

  /** Where a box comes to rest: a pane that opens slides there, and a drag that starts on its way misses the sash. */
  async function settledBox(locator: Locator) {
    let last = await locator.boundingBox();
    return eventually(
      async () => {
        await page.waitForTimeout(200);
        const now = await locator.boundingBox();
        const settled = now && last && now.y === last.y && now.height === last.height ? now : undefined;
        last = now;
        return settled;
      },
      10_000,
      'the box at rest',
    );
  }

  async function expand(row: Locator): Promise<void> {
    await row.waitFor({ state: 'visible', timeout: 30_000 });
    if ((await row.getAttribute('aria-expanded')) === 'false') await row.click();
    await eventually(async () => (await row.getAttribute('aria-expanded')) === 'true', 10_000, 'row expanded');
  }

  /** Selects the lock row, replays its history from the palette, and waits for the replay in the Lock History view. */
  async function replay(label: string): Promise<void> {
    // The view takes the selection as its lock (its header names it); only then does the command act on it, instead
    // of asking which lock. VS Code drops a row's handle while its parent redraws, and a selection made in that moment
    // reaches the extension without its row: select another row and this one again (clicking a row that is already
    // selected changes nothing, so tells nobody).
    const showing = async () => ((await historyView().locator('.pane-header').first().textContent()) ?? '').includes(label);
    await eventually(
      async () => {
        if (await showing()) return true;
        await rowLabelled(label === DEPLOY_LABEL ? HOSTILE_LABEL : DEPLOY_LABEL).click({ timeout: 5000 }).catch(() => undefined);
        await rowLabelled(label).click({ timeout: 5000 }).catch(() => undefined);
        await page.waitForTimeout(500);
        return showing();
      },
      60_000,
      `Lock History showing ${label}`,
    ).catch(async (e: unknown) => {
      await screenshot(page, 'history-not-shown');
      throw e;
    });
    await runCommand(page, 'LockLens: Replay History from the Store');
    await eventually(async () => (await historyView().locator('.monaco-list-row', { hasText: /^Revisions \d+ to \d+/ }).count()) > 0, 30_000, 'the replay in the view').catch(
      async (e: unknown) => {
        await screenshot(page, 'history-not-replayed');
        throw e;
      },
    );
  }

  before(async () => {
    etcd = await startEtcd();
    procs = new Procs(etcd.endpoint);
    const runs = [await etcdctlLock(DEPLOY, 1), await etcdctlLock(DEPLOY, 1), await etcdctlLock(DEPLOY, 1)];
    await Promise.all(runs.map((r) => r.proc.exited));
    past.push(...runs.map((r) => r.lease));
    holder = (await etcdctlLock(DEPLOY, 600)).lease;
    await etcdctlLock(DEPLOY, 600);
    await (await etcdctlLock(HOSTILE, 1)).proc.exited;
    await etcdctlLock(HOSTILE, 600);
    ui = await openLockLensUi({
      name: 'history',
      readme: 'a workspace for the LockLens history tests',
      settings: { 'locklens.connections': [{ name: CONNECTION, endpoints: [etcd.endpoint], prefixes: ['/locks/'] }] },
      viewport: { width: 1500, height: 950 },
    });
    page = ui.page;
    timeline = page.frameLocator('iframe.webview').frameLocator('iframe#active-frame');
    await openViewContainer(page, 'LockLens');
    await widenSidebar(page, 620);
    await expand(rowLabelled('/locks/'));
  });

  after(async () => {
    await cleanUpEach([() => ui?.close(), () => procs?.dispose(), () => etcd?.dispose()]);
  });

  test('Lock History is collapsed until a lock is selected, then opens without taking the keyboard from the Locks view', async () => {
    await eventually(async () => (await rowLabels()).includes(DEPLOY_LABEL), 30_000, 'the deploy lock in the tree');
    const header = historyView().locator('.pane-header').first();
    assert.equal(await header.getAttribute('aria-expanded'), 'false', 'collapsed at first sight: the Locks view has the sidebar');
    // A selection made while the row's parent redraws reaches the extension without its row (see replay): the other
    // lock is selected and this one again, until the view opens.
    await eventually(
      async () => {
        await rowLabelled(DEPLOY_LABEL).click({ timeout: 5000 });
        if (await eventually(async () => (await header.getAttribute('aria-expanded')) === 'true', 3000).catch(() => false)) return true;
        await rowLabelled(HOSTILE_LABEL).click({ timeout: 5000 }).catch(() => undefined);
        return false;
      },
      30_000,
      'Lock History opened by the selection',
    );
    const focusedPane = await page.evaluate("document.activeElement?.closest('.pane')?.querySelector('.pane-header')?.textContent ?? ''");
    assert.match(String(focusedPane), /Locks/, `the keyboard stays in the Locks view: ${String(focusedPane)}`);
    assert.doesNotMatch(String(focusedPane), /Lock History/);
    // It opens at its least height: the sash above its header dragged to the middle, room for the replays below.
    const top = await settledBox(header);
    const sidebar = (await page.locator('.part.sidebar').boundingBox())!;
    await page.mouse.move(top.x + top.width / 2, top.y - 1);
    await page.mouse.down();
    await page.mouse.move(top.x + top.width / 2, sidebar.y + sidebar.height / 3, { steps: 5 });
    await page.mouse.up();
    await eventually(async () => (await header.boundingBox())!.y < top.y - 100, 10_000, 'Lock History taller').catch(async (e: unknown) => {
      await screenshot(page, 'history-not-taller');
      throw e;
    });
  });

  test('selecting a lock shows it in Lock History; Replay rebuilds the runs VS Code never saw, newest first', async () => {
    await eventually(async () => (await rowLabels()).includes(DEPLOY_LABEL), 30_000, 'the deploy lock in the tree');
    await replay(DEPLOY_LABEL);
    const rows = await historyView().locator('.monaco-list-row .label-name').allTextContents();
    const replayed = rows.filter((r) => r.startsWith(`${DEPLOY}/`));
    assert.deepEqual(replayed, [holder, ...[...past].reverse()].map((l) => `${DEPLOY}/${l}`), JSON.stringify(rows));
    assert.ok(rows.includes('Figures') && rows.includes('Recent holds (seen live)'), JSON.stringify(rows));
    await screenshot(page, 'history-view');
  });

  test('Show Past in Lock Timeline draws the replayed holds on a revision axis under the live bars', async () => {
    await runCommand(page, 'LockLens: Show Past in Lock Timeline');
    const holds = timeline.locator('#past li');
    await eventually(async () => (await holds.count()) === 4, 30_000, 'four holds in the past section');
    const texts = await timeline.locator('#past .past-key').allTextContents();
    assert.deepEqual(texts, [...past, holder].map((l) => `${DEPLOY}/${l}`));
    assert.match((await timeline.locator('#past .past-title').textContent()) ?? '', /Past of \/locks\/deploy on ui: revisions \d+ to \d+/);
    assert.match((await holds.last().textContent()) ?? '', /holding since revision \d+/);
    await page.waitForTimeout(500);
    await screenshot(page, 'timeline-past');
  });

  test('Copy Incident Report, opened as Markdown: the holder and its waiter, the figures, the replayed holds', async () => {
    await rowLabelled(DEPLOY_LABEL).click();
    await runCommand(page, 'LockLens: Copy Incident Report');
    const copied = toast(/Copied an incident report/);
    await copied.waitFor({ state: 'visible', timeout: 20_000 });
    await copied.locator('.monaco-button', { hasText: 'Open as Markdown' }).click();
    const lines = page.locator('.editor-instance .view-lines').first();
    const text = async () => ((await lines.textContent()) ?? '').replace(/\u00a0/g, ' ');
    await eventually(async () => (await text()).includes('## Now'), 20_000, 'the report in an editor');
    const report = await text();
    assert.ok(report.includes(`# Lock \`${DEPLOY}\` on \`${CONNECTION}\` (etcd)`), report);
    assert.ok(report.includes(`**holder** \`${DEPLOY}/${holder}\``), report);
    assert.match(report, /waiter #1 `\/locks\/deploy\/[0-9a-f]+`/);
    assert.ok(report.includes('## Figures'), report);
    await screenshot(page, 'incident-report');
  });

  test('a lock name that is markup shows as text in the view and the past, and runs nothing', async () => {
    await page.keyboard.press('Escape');
    await toast(/./).waitFor({ state: 'hidden', timeout: 1000 }).catch(() => undefined);
    await eventually(async () => (await rowLabels()).includes(HOSTILE_LABEL), 30_000, 'the hostile lock in the tree');
    await replay(HOSTILE_LABEL);
    await runCommand(page, 'LockLens: Show Past in Lock Timeline');
    await eventually(async () => ((await timeline.locator('#past .past-title').textContent()) ?? '').includes(HOSTILE), 30_000, 'the hostile name as text');
    assert.equal(await timeline.locator('#past img').count(), 0, 'no element was made from the name');
    assert.equal(await timeline.locator('body').evaluate(() => (globalThis as unknown as WebviewGlobals).__pwned), undefined);
  });
});

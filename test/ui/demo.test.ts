import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { demoSettings } from '../../demo/editor';
import { INCIDENT_HOLDER, INCIDENT_WAITERS, LIQUIBASE_LOCKED_BY, POSTGRES_LOCKS } from '../../demo/postgresWorkload';
import { repoRoot, startCodeServer, testOutput, type CodeServer } from '../harness/codeServer';
import { startDemo, type RunningDemo } from '../harness/demo';
import { eventually } from '../harness/etcd';
import { clickDialogButton, confirmFromContextMenu, openViewContainer, openWorkbench, runCommand, screenshot, viewHelpers, waitForExtensionsActivated, widenSidebar, type Workbench } from '../harness/workbench';
import { escapeRegExp } from '../harness/regexp';

/**
 * The README's screenshots, taken from the demo as a user sees it: `demo.js --no-editor` (its etcd and workload), and
 * code-server with the built extension and the settings the demo gives VS Code, in headless Chromium. Each test checks
 * what its picture is meant to show before taking it, into test-output/screenshots/readme-*.png; `npm run screenshots`
 * copies them into docs/screenshots/ for the README.
 */

const SHOTS = join(testOutput, 'screenshots');

/** The little of the DOM that visibleText uses, typed here: the tests compile without the DOM's types. */
interface DomRect {
  getBoundingClientRect(): { right: number };
}
interface DomText {
  readonly textContent: string | null;
}
interface DomElement extends DomRect {
  readonly scrollWidth: number;
  readonly clientWidth: number;
  readonly ownerDocument: {
    createRange(): DomRect & { setStart(node: DomText, offset: number): void; setEnd(node: DomText, offset: number): void };
    createTreeWalker(root: DomElement, show: number): { nextNode(): DomText | null };
    readonly defaultView: { getComputedStyle(element: DomElement, pseudo: string): { readonly content: string } };
  };
  querySelector(selector: string): DomElement | null;
  closest(selector: string): DomElement | null;
}
const BILLING = '/locks/billing-batch';
/** The rows of every lock the demo's services take, by connection, as the tree names them (folders take their directory). */
const EVERY_LOCK_ROW: Record<string, readonly string[]> = {
  demo: ['billing-batch', 'cron-leader-single', 'migrations', 'reconcile', 'report-export', 'transfer-alice', 'transfer-bob', 'scheduler'],
  'demo-redis': ['billing-lock', 'export-job', 'report-fair-lock', 'stuck-migration', 'sync-invoices', 'thumbnails'],
  'demo-zookeeper': ['catalog', 'export-slots', 'ledger-migration', 'nightly-report'],
  'demo-postgres': ['42', '7:1', '1', 'nightly-report'],
};

describe('README screenshots from the demo (code-server + Chromium)', { timeout: 8 * 60_000 }, () => {
  let demo: RunningDemo;
  let server: CodeServer;
  let workbench: Workbench;
  let page: Page;
  let folder: string;
  let postgresUrl: string;

  const { rowLabelled: row, expand } = viewHelpers(() => page);
  const description = async (r: Locator, timeout = 10_000) => ((await r.locator('.label-description').first().textContent({ timeout })) ?? '').trim();

  /**
   * The confirmation `item` of the row's context menu opens, for that row. Rows move while the services come and go:
   * a right-click that lands as the list shifts opens the menu of the row now under the mouse. A confirmation for
   * another row is cancelled (nothing is done) and the menu opened again; one left open would block every later click.
   */
  async function confirmationOf(r: Locator, item: string, asks: RegExp): Promise<Locator> {
    for (let attempt = 1; ; attempt++) {
      const dialog = await confirmFromContextMenu(page, r, item);
      const text = (await dialog.textContent()) ?? '';
      if (asks.test(text)) return dialog;
      await dialog.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
      await dialog.waitFor({ state: 'hidden', timeout: 20_000 });
      if (attempt === 3) throw new Error(`${item} asked about another row three times: ${text}`);
    }
  }

  /**
   * Only `connection` open among the demo's connections (`undefined`: every one). Each test opens what it needs, so
   * that one failing midway (its connections left folded) does not fail the next. First every row is folded, top down
   * (a row below an open one may be out of the view, not in the DOM; folding the rows above brings it in), then the
   * rows to open are opened bottom up: an opened row's locks come in after the click and push down only the rows below
   * it, never the one the next click aims at.
   */
  async function openOnly(connection?: string): Promise<void> {
    const names = Object.keys(EVERY_LOCK_ROW);
    const toggle = async (name: string, expanded: 'true' | 'false') => {
      const r = row(name);
      await r.waitFor({ state: 'visible', timeout: 30_000 });
      if ((await r.getAttribute('aria-expanded')) === expanded) await r.locator('.monaco-tl-twistie').click();
    };
    // Every row folded, the one to open too: left open (as the workbench may restore it), its locks push the rows below
    // it out of the DOM before they are reached.
    for (const name of names) await toggle(name, 'true');
    for (const name of [...names].reverse()) if (connection === undefined || name === connection) await toggle(name, 'false');
    // A prefix or folder row folded all the same (its locks out of the DOM) is opened again.
    const folded = page.locator('.part.sidebar .monaco-list-row[aria-expanded="false"]').filter({ has: page.locator('.codicon-symbol-namespace, .codicon-folder') });
    for (let i = await folded.count(); i > 0; i--) await folded.last().locator('.monaco-tl-twistie').click({ timeout: 5000 }).catch(() => undefined);
  }

  /** What a failure needs said, as CI shows only its message: the sidebar's rows and the demo's last log lines. */
  async function whatWasShown(): Promise<string> {
    const rows = await page
      .locator('.part.sidebar .monaco-list-row')
      .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''))
      .catch((e: Error) => [`(rows not read: ${e.message})`]);
    return `\nthe sidebar's rows: ${JSON.stringify(rows)}\nthe demo's last lines:\n${demo.proc.stdout.split('\n').slice(-25).join('\n')}`;
  }

  async function shot(name: string, clip?: { x: number; y: number; width: number; height: number }): Promise<void> {
    mkdirSync(SHOTS, { recursive: true });
    // No hover tooltip or highlight in the picture; and let the tree's and the timeline's last redraws land (they
    // are coalesced every 100-250 ms).
    const viewport = page.viewportSize()!;
    await page.mouse.move(viewport.width - 5, viewport.height / 2);
    await page.waitForTimeout(800);
    await page.screenshot({ path: join(SHOTS, `readme-${name}.png`), clip });
  }

  before(async () => {
    demo = await startDemo(['--no-editor']);
    postgresUrl = /^\S+ postgres +(postgres:\/\/\S+)/m.exec(demo.proc.stdout)?.[1] ?? '';
    folder = mkdtempSync(join(tmpdir(), 'locklens-ui-demo-'));
    writeFileSync(join(folder, 'README.md'), '# the LockLens demo\n');
    server = await startCodeServer({
      installExtensionFrom: repoRoot,
      // The demo's own settings; the stuck holder is flagged sooner than the demo's 60 s, so the picture shows it.
      extraSettings: { ...demoSettings([demo.endpoint], demo.redisUrl, demo.zookeeperUrl, postgresUrl), 'locklens.longHoldSeconds': 30, 'workbench.startupEditor': 'none' },
    });
    workbench = await openWorkbench(server, { folder, viewport: { width: 1440, height: 860 } });
    page = workbench.page;
  });

  after(async () => {
    await workbench?.close();
    await server?.stop();
    await demo?.dispose();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  /**
   * What of a row's label and description is on screen: the characters left of where the tree clips the row (with an
   * ellipsis) or the sidebar ends. Text cut off is in the DOM all the same, so `textContent` would not tell.
   */
  const visibleText = (r: Locator): Promise<string> =>
    r.evaluate((el: DomElement) => {
      const doc = el.ownerDocument;
      const clip = el.querySelector('.monaco-icon-label-container') ?? el;
      const sidebar = el.closest('.part.sidebar') ?? el;
      const clipped = clip.scrollWidth > clip.clientWidth;
      // An ellipsis takes the last few pixels of a clipped row.
      const right = Math.min(clip.getBoundingClientRect().right, sidebar.getBoundingClientRect().right) - (clipped ? 12 : 0);
      const range = doc.createRange();
      const shown = (node: DomElement | null) => {
        let text = '';
        if (!node) return text;
        const walker = doc.createTreeWalker(node, 4 /* NodeFilter.SHOW_TEXT */);
        for (let t = walker.nextNode(); t; t = walker.nextNode()) {
          const chars = t.textContent ?? '';
          for (let i = 0; i < chars.length; i++) {
            range.setStart(t, i);
            range.setEnd(t, i + 1);
            if (range.getBoundingClientRect().right > right) return text;
            text += chars[i];
          }
        }
        return text;
      };
      // A badge (the waiters of a lock) is drawn by CSS after the label, never cut off.
      const label = el.querySelector('.monaco-icon-label');
      const badge = label ? doc.defaultView.getComputedStyle(label, '::after').content.replace(/^"(.*)"$/, '$1') : 'none';
      return `${shown(el.querySelector('.label-name'))} ${shown(el.querySelector('.label-description'))}${badge === 'none' || !badge ? '' : ` [${badge}]`}`.trim();
    });

  test('default sidebar width: every demo lock shows its state and age, one of each store its waiters too, without widening the sidebar', async () => {
    await openViewContainer(page, 'LockLens');
    const sidebar = (await page.locator('.part.sidebar').boundingBox())!;
    assert.ok(sidebar.width < 400, `the sidebar at VS Code's default width, not widened: ${sidebar.width}px`);
    // A lock of each store with waiters: etcd's and Redisson's contended queues, kazoo's read/write lock (its writer
    // waits for the readers), the PostgreSQL incident's advisory lock.
    const locks: [connection: string, lock: string][] = [
      ['demo', 'billing-batch'],
      ['demo-redis', 'report-fair-lock'],
      ['demo-zookeeper', 'catalog'],
      ['demo-postgres', POSTGRES_LOCKS.incident],
    ];
    for (const [connection, lock] of locks) {
      // Only this store's connection open, so that its locks are in view.
      await openOnly(connection);
      await eventually(async () => /^connected\b/.test(await description(row(connection))), 60_000, `${connection} says connected`);
      // The state and its age in the description; the waiters counted by the row's badge (`[2]`), as many as the
      // description says in words, cut off or not.
      let seen = '';
      await eventually(
        async () => {
          seen = await visibleText(row(lock)).catch(() => '');
          const waiting = /\b(\d+) waiting\b/.exec(await description(row(lock), 1000).catch(() => ''))?.[1];
          return !!waiting && new RegExp(`^${escapeRegExp(lock)} held ≥?(<1m|\\d+[mhd])\\b.* \\[${waiting}\\]$`).test(seen);
        },
        60_000,
        `${lock} on ${connection} shows its state, age and waiters`,
      ).catch(async (e) => {
        await shot(`default-width-${connection}`, { x: 0, y: 0, width: Math.round(sidebar.x + sidebar.width + 8), height: 640 });
        throw new Error(`${(e as Error).message}: the row shows "${seen}"${await whatWasShown()}`);
      });
      // Every lock of the demo, each row as the sidebar shows it: its state and age are not cut off (a lock that is
      // free for a while, a try-lock between runs, comes back held).
      for (const other of EVERY_LOCK_ROW[connection]) {
        await eventually(async () => /^\S+ (held|elected) ≥? ?(<1m|\d+[smhd])\b/.test((seen = await visibleText(row(other)).catch(() => ''))), 60_000, `${other} on ${connection} shows its state and age`).catch(
          async (e) => {
            await shot(`default-width-${connection}`, { x: 0, y: 0, width: Math.round(sidebar.x + sidebar.width + 8), height: 640 });
            throw new Error(`${(e as Error).message}: the row shows "${seen}"${await whatWasShown()}`);
          },
        );
      }
      await shot(`default-width-${connection}`, { x: 0, y: 0, width: Math.round(sidebar.x + sidebar.width + 8), height: 640 });
    }
    await openOnly();
  });

  test('tree: the queues with holders and waiters, the stuck holder flagged, the try-lock and the election', async () => {
    await openViewContainer(page, 'LockLens');
    await openOnly();
    await widenSidebar(page, 640);
    await eventually(async () => /^connected\b/.test(await description(row('demo'))), 60_000, 'the demo connection says connected');
    for (const name of ['billing-batch', 'reconcile', 'report-export', 'cron-leader-single', 'scheduler']) {
      await row(name).waitFor({ state: 'visible', timeout: 30_000 });
    }
    await expand(row('billing-batch'));
    await expand(row('reconcile'));
    await expand(row('scheduler'));
    const stuck = row(demo.stuckLease);
    await stuck.waitFor({ state: 'visible', timeout: 20_000 });
    // Held longer than locklens.longHoldSeconds: the warning icon.
    await stuck.locator('.codicon-warning').waitFor({ state: 'visible', timeout: 60_000 });
    // The workload moves (the election's members resign now and then): wait for a moment that shows it all at once.
    const wanted: [string, RegExp][] = [
      [demo.stuckLease, /^holder\b/],
      ['reconcile', /\b2 waiting/],
      ['billing-batch', /\bwaiting/],
      ['cron-leader-single', /^held [^·]+ \(single key\)/],
      ['scheduler', /\b1 candidate/],
    ];
    let seen: string[] = [];
    const sidebar = (await page.locator('.part.sidebar').boundingBox())!;
    const showsAll = async () => {
      // A lock that went free for a moment comes back as a new, collapsed row.
      for (const name of ['billing-batch', 'reconcile', 'scheduler']) {
        if ((await row(name).getAttribute('aria-expanded', { timeout: 1000 }).catch(() => null)) !== 'true') return false;
      }
      seen = await Promise.all(wanted.map(([label]) => description(row(label), 1000).catch(() => '')));
      return wanted.every(([, re], i) => re.test(seen[i]));
    };
    // Shot, and shown before and after it: a lock that went free in between means another try.
    await eventually(async () => {
      for (const name of ['billing-batch', 'reconcile', 'scheduler']) await expand(row(name)).catch(() => undefined);
      return (await showsAll()) && (await shot('tree', { x: 0, y: 0, width: Math.round(sidebar.x + sidebar.width + 8), height: 640 }), await showsAll());
    }, 90_000, 'every lock as the picture should show it').catch((e) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(wanted.map(([label], i) => `${label}: ${seen[i]}`))}`);
    });
  });

  test('timeline: every lease of the demo as bars over time', async () => {
    await waitForExtensionsActivated(page);
    await runCommand(page, 'LockLens: Open Lock Timeline');
    const timeline = page.frameLocator('iframe.webview').frameLocator('iframe#active-frame');
    await timeline.locator(`#rows li[data-lease="${demo.stuckLease}"]`).waitFor({ state: 'attached', timeout: 60_000 });
    // The last minute (the demo has run about that long): its handoffs spread over the width.
    await timeline.locator('#window').evaluate((select: { value: string; dispatchEvent(e: Event): boolean }) => {
      select.value = '60000';
      select.dispatchEvent(new Event('change'));
    });
    await page.waitForTimeout(8000);
    await shot('timeline');
  });

  test('acquire: joining a queue the services use shows the place in it and the fencing token, then holds', async () => {
    const input = page.locator('.quick-input-widget input');
    // A quick input closes when the workbench moves the focus (the timeline's webview, loaded just before, may take it
    // late on a slow machine): the flow is started again then, with a picture of what was in front of it.
    const nameStep = async (attempt: number) => {
      // It may close at any step, while the connection is picked or the name typed: every step is within the try.
      const typed = await (async () => {
        await runCommand(page, 'LockLens: Acquire Lock…');
        await input.waitFor({ state: 'visible', timeout: 20_000 });
        // The demo has several connections: the etcd one is picked.
        await eventually(async () => (await input.getAttribute('placeholder')) === 'Pick a connection', 20_000, 'the connection picker');
        await page.locator('.quick-input-list .monaco-list-row').filter({ has: page.locator('.label-name', { hasText: /^demo$/ }) }).first().click({ timeout: 10_000 });
        await eventually(async () => (await input.isVisible()) && /lock name/.test((await input.getAttribute('placeholder')) ?? ''), 10_000, 'the lock name step');
        await input.fill(BILLING, { timeout: 5_000 });
        await page.locator('.quick-input-list .monaco-list-row', { hasText: BILLING }).first().waitFor({ state: 'visible', timeout: 20_000 });
        return true;
      })().catch(() => false);
      if (typed) return;
      await screenshot(page, `demo-acquire-closed-${attempt}`);
      if (attempt >= 3) throw new Error('the acquire flow closed three times before the lock name was typed');
      await page.keyboard.press('Escape');
      await nameStep(attempt + 1);
    };
    await nameStep(1);
    await page.keyboard.press('Enter');
    await viewHelpers(() => page).acceptInputTitled(/Lease TTL/);
    // Billing is always contended in the demo: LockLens asks before joining the services' queue.
    assert.match(await clickDialogButton(page, 'Join Queue'), /Join the queue\?/);
    const progress = page.locator('.notification-toast').filter({ hasText: /ahead in the queue/ }).first();
    await progress.waitFor({ state: 'visible', timeout: 30_000 });
    assert.match((await progress.textContent()) ?? '', /Acquiring "\/locks\/billing-batch".*\d+ ahead in the queue; you will hold it with fencing token \d+/);
    await shot('acquire');
    // The services hold 4-9 s each: the turn comes, and the status bar shows the held lock.
    const held = page.locator('.part.statusbar .statusbar-item', { hasText: BILLING });
    await held.waitFor({ state: 'visible', timeout: 90_000 });
    await shot('acquire-held');
    await held.click();
    await held.waitFor({ state: 'hidden', timeout: 20_000 });
  });

  test('revoke: the confirmation lists the stuck lease\'s key and who holds next; confirming frees the queue', async () => {
    // The acquire test's notifications would cover part of the picture.
    await runCommand(page, 'Notifications: Clear All Notifications');
    await openOnly('demo');
    await expand(row('reconcile'));
    const stuck = row(demo.stuckLease);
    const dialog = await confirmationOf(stuck, 'Revoke Lease…', new RegExp(`Revoke lease ${demo.stuckLease} on demo\\?`));
    const text = (await dialog.textContent()) ?? '';
    try {
      assert.match(text, new RegExp(`/locks/reconcile/${demo.stuckLease}`));
      assert.match(text, /\/locks\/reconcile → next holder \/locks\/reconcile\/[0-9a-f]+/);
    } catch (e) {
      // A dialog left open would block every later test's clicks.
      await dialog.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
      throw e;
    }
    await shot('revoke');
    await dialog.locator('.monaco-button', { hasText: 'Revoke Lease' }).first().click();
    await dialog.waitFor({ state: 'hidden', timeout: 20_000 });
    await stuck.waitFor({ state: 'detached', timeout: 20_000 });
    // The stuck service is told, as a real one would be by its lock's guard.
    await demo.proc.until((p) => /lost \/locks\/reconcile/.test(p.stdout), 'the stuck holder reports the lost lock', 20_000);
  });

  test('redis: a re-entrant Redisson holder, a fair lock\'s queue, redis-py contending, the stuck token flagged; Force Release frees it', async () => {
    await openOnly('demo-redis');
    await eventually(async () => /^connected\b/.test(await description(row('demo-redis'))), 60_000, 'the demo-redis connection says connected');
    for (const name of ['billing-lock', 'report-fair-lock', 'export-job', 'stuck-migration']) await row(name).waitFor({ state: 'visible', timeout: 30_000 });
    const stuck = row('stuck-migration');
    await stuck.locator('.codicon-warning').waitFor({ state: 'visible', timeout: 30_000 });
    const wanted: [string, RegExp][] = [
      // Held by a Redisson `<uuid>:<thread>`, shortened on the lock's row: whole as its holder's label (below).
      ['billing-lock', /^held (≥)?(<1m|\d+[mhd]) · by [0-9a-f-]{12}…$/],
      ['report-fair-lock', /\b2 waiting/],
      ['stuck-migration', new RegExp(`no expiry · owner ${demo.stuckToken.slice(0, 12)}`)],
    ];
    let seen: string[] = [];
    const showsAll = async () => {
      for (const name of ['billing-lock', 'report-fair-lock']) {
        if ((await row(name).getAttribute('aria-expanded', { timeout: 1000 }).catch(() => null)) !== 'true') return false;
      }
      seen = await Promise.all(wanted.map(([label]) => description(row(label), 1000).catch(() => '')));
      const holds = await page.locator('.part.sidebar .monaco-list-row .label-description', { hasText: '2 holds (re-entrant)' }).count();
      const redissonHolders = await page.locator('.part.sidebar .monaco-list-row .label-name', { hasText: /^[0-9a-f-]{36}:\d+$/ }).count();
      return holds > 0 && redissonHolders > 0 && wanted.every(([, re], i) => re.test(seen[i]));
    };
    const sidebar = (await page.locator('.part.sidebar').boundingBox())!;
    // The Redisson workers hand the lock over every 10-25 s, and it comes back collapsed: expand, check, shoot, check.
    await eventually(async () => {
      for (const name of ['billing-lock', 'report-fair-lock']) await expand(row(name)).catch(() => undefined);
      return (await showsAll()) && (await shot('redis-tree', { x: 0, y: 0, width: Math.round(sidebar.x + sidebar.width + 8), height: 420 }), await showsAll());
    }, 90_000, 'every Redis lock as the picture should show it').catch((e) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(wanted.map(([label], i) => `${label}: ${seen[i]}`))}`);
    });

    await runCommand(page, 'Notifications: Clear All Notifications');
    const dialog = await confirmationOf(stuck, 'Force Release…', new RegExp(`Force-release "app:stuck-migration" from ${demo.stuckToken} on demo-redis\\?`));
    const text = (await dialog.textContent()) ?? '';
    assert.match(text, new RegExp(`only if it still holds token ${demo.stuckToken}`));
    await shot('force-release');
    await dialog.locator('.monaco-button', { hasText: 'Force Release' }).first().click();
    await dialog.waitFor({ state: 'hidden', timeout: 20_000 });
    await stuck.waitFor({ state: 'detached', timeout: 20_000 });
  });
  test('zookeeper: kazoo contenders and the stuck Curator-layout holder with its standby, sessions and czxid tokens', async () => {
    await openOnly('demo-zookeeper');
    await eventually(async () => /^connected\b/.test(await description(row('demo-zookeeper'))), 60_000, 'the demo-zookeeper connection says connected');
    const stuck = row('ledger-migration');
    await stuck.waitFor({ state: 'visible', timeout: 30_000 });
    await expand(stuck);
    const node = demo.stuckZnode!;
    // Named by who it is, Curator's data (the host's address), not by its node's name (`_c_<uuid>-lock-<seq>`, in
    // the tooltip), and said with its session and token.
    const holder = page
      .locator('.part.sidebar .monaco-list-row')
      .filter({ has: page.locator('.label-description', { hasText: new RegExp(`^holder · held [^·]+ · session ${node.session} · token ${node.token}`) }) })
      .first();
    await holder.waitFor({ state: 'visible', timeout: 30_000 });
    assert.match(((await holder.locator('.label-name').textContent()) ?? '').trim(), /^[0-9a-f.:]+$/, 'the stuck holder named by its client address');
    assert.match(await description(stuck), /1 waiting/);
    const sidebar = (await page.locator('.part.sidebar').boundingBox())!;
    await shot('zookeeper-tree', { x: 0, y: 0, width: Math.round(sidebar.x + sidebar.width + 8), height: 420 });
  });

  test('postgres: 42 held by billing-worker\'s session with its two waiters in order, the stuck Liquibase lock; Force Release clears it', async () => {
    await openOnly('demo-postgres');
    await eventually(async () => /^connected\b/.test(await description(row('demo-postgres'))), 60_000, 'the demo-postgres connection says connected');
    const incident = row(POSTGRES_LOCKS.incident);
    /** The row whose description begins so: a lock's member, `holder · held 2m · billing-worker · …`, by its role, age and session. */
    const described = (role: string, session: string) =>
      page
        .locator('.part.sidebar .monaco-list-row')
        .filter({ has: page.locator('.label-description', { hasText: new RegExp(`^${escapeRegExp(role)} · (held|waiting) [^·]+ · ${escapeRegExp(session)} · `) }) })
        .first();
    // A single-key lock is one row: Liquibase's, owned by what its LOCKEDBY says.
    // In the folder of its table (databasechangeloglock/), named by its row's id.
    const liquibase = row(POSTGRES_LOCKS.liquibase.slice(POSTGRES_LOCKS.liquibase.indexOf('/') + 1));
    for (const r of [incident, row(POSTGRES_LOCKS.contended), liquibase]) await r.waitFor({ state: 'visible', timeout: 30_000 });
    // No expiry: flagged.
    await liquibase.locator('.codicon-warning').waitFor({ state: 'visible', timeout: 30_000 });
    assert.match(await description(liquibase), new RegExp(`^held [^·]+ \\(single key\\) · no expiry · locked by ${escapeRegExp(LIQUIBASE_LOCKED_BY.slice(0, 16))}`));
    const wanted = [described('holder', INCIDENT_HOLDER), ...INCIDENT_WAITERS.map((w, i) => described(`waiter #${i + 1}`, w))];
    const showsAll = async () => (await Promise.all(wanted.map((r) => r.isVisible()))).every(Boolean) && /\b2 waiting/.test(await description(incident, 1000).catch(() => ''));
    // Force-released or let go, 42 comes back to billing-worker within seconds, its waiters behind it in order.
    await widenSidebar(page, 1000);
    const sidebar = (await page.locator('.part.sidebar').boundingBox())!;
    await eventually(async () => {
      await expand(incident).catch(() => undefined);
      return (await showsAll()) && (await shot('postgres-tree', { x: 0, y: 0, width: Math.round(sidebar.x + sidebar.width + 8), height: 420 }), await showsAll());
    }, 90_000, '42 held by billing-worker with report-export and ledger-sync waiting, and the stuck Liquibase row');

    await runCommand(page, 'Notifications: Clear All Notifications');
    const dialog = await confirmationOf(liquibase, 'Force Release…', new RegExp(`Force-release "${escapeRegExp(POSTGRES_LOCKS.liquibase)}" from .* on demo-postgres\\?`));
    const text = (await dialog.textContent()) ?? '';
    try {
      assert.match(text, new RegExp(`Clears Liquibase's changelog lock .* still held by '${escapeRegExp(LIQUIBASE_LOCKED_BY)}'`));
    } catch (e) {
      // A dialog left open would block every later test's clicks.
      await dialog.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
      throw e;
    }
    await shot('postgres-force-release');
    await dialog.locator('.monaco-button', { hasText: 'Force Release' }).first().click();
    await dialog.waitFor({ state: 'hidden', timeout: 20_000 });
    // Lock tables list held rows only: the released row's lock goes from the tree, and the workload sees it free.
    await liquibase.waitFor({ state: 'detached', timeout: 20_000 });
    await demo.proc.until((p) => p.stdout.includes(`${POSTGRES_LOCKS.liquibase} was unlocked`), 'the workload sees the Liquibase row unlocked', 20_000);
    // Its "Released …" notification would sit in the next picture.
    await runCommand(page, 'Notifications: Clear All Notifications');
    await widenSidebar(page, 640);
  });

  test('history: the stuck etcd lock\'s past, replayed from etcd, in the Lock History view', async () => {
    await openOnly('demo');
    const history = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /Lock History/i }) });
    const showing = async () => ((await history.locator('.pane-header').first().textContent()) ?? '').includes('billing-batch');
    // VS Code drops a row's handle while its parent redraws (the demo's locks change all the time), and a selection
    // made in that moment reaches the extension without its row: select another lock and this one again until the view
    // shows it (as test/ui/history.test.ts does; clicking a row already selected tells nobody).
    await eventually(
      async () => {
        await row('billing-batch').click({ timeout: 5000 }).catch(() => undefined);
        if (await eventually(showing, 3000).catch(() => false)) return true;
        await row('reconcile').click({ timeout: 5000 }).catch(() => undefined);
        return false;
      },
      60_000,
      'Lock History showing billing-batch',
    );
    // However long the list of holds seen live above it, the view scrolls to the replayed section once it is there.
    const replayed = async () => (await history.locator('.monaco-list-row', { hasText: /^Revisions \d+ to \d+/ }).count()) > 0;
    const replaying = async () => (await page.locator('.notification-toast', { hasText: /Replaying the history/ }).count()) > 0;
    // Run again when neither the replay's progress nor its result came: a palette click that lands as the list
    // redraws runs nothing (seen on a loaded machine: no progress, no error, the view unchanged).
    await eventually(
      async () => {
        await runCommand(page, 'LockLens: Replay History from the Store');
        if (await eventually(replayed, 20_000).then(() => true, () => false)) return true;
        // Still replaying (a long history on a slow machine): its result is waited for, not asked again.
        return (await replaying()) && eventually(replayed, 60_000).then(() => true, () => false);
      },
      120_000,
      'the replay in the view',
    ).catch(async (e) => {
      await shot('history-no-replay');
      const rows = await history.locator('.monaco-list-row').allTextContents();
      const toasts = await page.locator('.notification-toast').allTextContents();
      throw new Error(`${(e as Error).message}: the view's rows ${JSON.stringify(rows)}, notifications ${JSON.stringify(toasts)}${await whatWasShown()}`);
    });
    await page.locator('.notification-toast', { hasText: /Replaying the history/ }).waitFor({ state: 'detached', timeout: 30_000 }).catch(() => undefined);
    await shot('history');
  });
});

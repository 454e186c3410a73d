import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startCodeServer, type CodeServer } from '../harness/codeServer';
import { eventually, startEtcd } from '../harness/etcd';
import { localizedManifest } from '../harness/manifest';
import { openViewContainer, openWorkbench, runCommand, screenshot, waitForExtensionsActivated, type Workbench } from '../harness/workbench';

/**
 * The extension as a user gets it: built (dist/), copied into a code-server's extensions dir, and seen through the
 * workbench in headless Chromium. Not smoke-test-driver mode, so notifications show as toasts.
 */

interface Manifest {
  displayName: string;
  contributes?: { viewsContainers?: { activitybar?: { id: string; title: string }[] } };
}
const manifest = localizedManifest(repoRoot) as Manifest;

describe('workbench (code-server + Chromium)', { timeout: 5 * 60_000 }, () => {
  let server: CodeServer;
  let workbench: Workbench;
  let folder: string;

  before(async () => {
    folder = mkdtempSync(join(tmpdir(), 'locklens-ui-'));
    writeFileSync(join(folder, 'README.md'), '# a workspace for the LockLens UI tests\n');
    server = await startCodeServer({ installExtensionFrom: repoRoot });
    workbench = await openWorkbench(server, { folder });
  });
  after(async () => {
    await workbench?.close();
    await server?.stop();
    rmSync(folder, { recursive: true, force: true });
  });

  test('the extension is installed: the Extensions view lists it', async () => {
    const { page } = workbench;
    await runCommand(page, 'Extensions: Show Installed Extensions');
    const row = page.locator(`.extensions-viewlet .monaco-list-row[aria-label*="${manifest.displayName}"]`).first();
    await row.waitFor({ state: 'visible', timeout: 30_000 });
    await screenshot(page, 'extensions-installed');
  });

  test('the LockLens view container opens from the activity bar', async (t) => {
    const { page } = workbench;
    const container = manifest.contributes?.viewsContainers?.activitybar?.[0];
    if (!container) {
      await screenshot(page, 'workbench');
      t.skip('package.json contributes no activity bar view container yet');
      return;
    }
    await openViewContainer(page, container.title);
    const title = await eventually(async () => (await page.locator('.part.sidebar .composite.title').first().textContent())?.trim() || undefined, 20_000, 'sidebar title');
    assert.match(title, new RegExp(container.title, 'i'));
    // Its view shows something: tree rows, or the welcome content while nothing is connected.
    await page.locator('.part.sidebar .welcome-view-content, .part.sidebar .monaco-list-row').first().waitFor({ state: 'visible', timeout: 20_000 });
    await waitForExtensionsActivated(page);
    await screenshot(page, 'workbench');
  });

  test('Add Connection from the welcome view: store, endpoints, name, auth, TLS, namespace, prefix; then connected, no secret in settings', async () => {
    const { page } = workbench;
    const etcd = await startEtcd();
    try {
      // The previous test opened the view; clicking its activity bar item again would close it.
      if (!(await page.locator('.part.sidebar').isVisible())) await openViewContainer(page, 'LockLens');
      await page.locator('.part.sidebar .welcome-view-content a, .part.sidebar .welcome-view-content .monaco-button', { hasText: 'Add Connection' }).first().click();
      const input = page.locator('.quick-input-widget input');
      const title = page.locator('.quick-input-widget .quick-input-title');
      // Each step: wait for its title, then answer it. Escape would cancel the whole flow.
      const step = async (n: number, answer: (() => Promise<void>) | string) => {
        await eventually(async () => new RegExp(`Add connection \\(${n}/6\\)`).test((await title.textContent()) ?? ''), 20_000, `step ${n}`);
        if (typeof answer === 'string') await input.fill(answer);
        else await answer();
        await page.keyboard.press('Enter');
      };
      // The store comes first, before the numbered steps.
      await eventually(async () => /which store/.test((await title.textContent()) ?? ''), 20_000, 'the store step');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'etcd' }).first().waitFor({ state: 'visible' });
      await input.fill('etcd');
      await page.keyboard.press('Enter');
      await step(1, etcd.endpoint);
      await step(2, 'ui-added');
      await step(3, async () => {
        await page.locator('.quick-input-list .monaco-list-row', { hasText: 'No authentication' }).first().waitFor({ state: 'visible' });
        await input.fill('No authentication');
      });
      await step(4, async () => {
        await page.locator('.quick-input-list .monaco-list-row', { hasText: 'No TLS' }).first().waitFor({ state: 'visible' });
        await input.fill('No TLS');
      });
      await step(5, '');
      await step(6, '/locks/');
      const row = page.locator('.part.sidebar .monaco-list-row', { hasText: 'ui-added' }).first();
      await eventually(async () => /connected/.test((await row.textContent()) ?? ''), 30_000, 'the new connection connected');
      await screenshot(page, 'add-connection');
      const settings = JSON.parse(readFileSync(join(server.userDataDir, 'User', 'settings.json'), 'utf8')) as Record<string, unknown>;
      assert.deepEqual(settings['locklens.connections'], [{ name: 'ui-added', endpoints: [etcd.endpoint], prefixes: ['/locks/'] }]);
    } finally {
      await etcd.dispose();
    }
  });
});

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FrameLocator, Locator } from 'playwright-core';
import { Procs, type Proc } from '../harness/cli';
import { repoRoot, startCodeServer, type CodeServer } from '../harness/codeServer';
import { eventually, startEtcd, type EtcdServer } from '../harness/etcd';
import { localizedManifest } from '../harness/manifest';
import { clickDialogButton, openWorkbench, runCommand, screenshot, waitForExtensionsActivated, type Workbench } from '../harness/workbench';

/**
 * The lock timeline as a user sees it: a real etcd with `etcdctl lock` holders and waiters, the built extension in
 * code-server, the timeline opened from the command palette, read through its screen-reader list (each bar is an
 * option with its role, lease and state), acted on through its own buttons, and VS Code's confirmation dialog.
 */

const LOCK = '/locks/timeline-jobs';
/** A lock name that is also markup: it must show as text and run nothing. */
const HOSTILE = '/locks/<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>';

interface WebviewGlobals {
  __pwned?: unknown;
}

/** What the test touches of the webview's document (the test code is compiled without the DOM's types). */
interface WebviewDocument {
  querySelector(selector: string): { value: string; dispatchEvent(event: object): boolean };
  readonly defaultView: { readonly Event: new (type: string) => object; readonly KeyboardEvent: new (type: string, init: { key: string; bubbles: boolean }) => object };
}

const contributed = ((localizedManifest(repoRoot) as { contributes?: { commands?: { command: string }[] } }).contributes?.commands ?? []).some(
  (c) => c.command === 'locklens.openTimeline',
);

describe('lock timeline (code-server + Chromium + etcd)', { timeout: 5 * 60_000, skip: contributed ? false : 'package.json contributes no locklens.openTimeline command yet' }, () => {
  let etcd: EtcdServer;
  let procs: Procs;
  let server: CodeServer;
  let workbench: Workbench;
  let folder: string;
  let timeline: FrameLocator;
  /** Lease IDs (hex) of the holder and the two waiters, in queue order; and of the hostile lock's holder. */
  const leases: string[] = [];
  let hostileLease = '';

  /** The key under `name` that was not there before, once `etcdctl lock name` has written it. */
  async function etcdctlLock(name: string): Promise<{ proc: Proc; lease: string }> {
    const keys = async () => (await etcd.etcdctl(['get', '--prefix', `${name}/`, '--keys-only'])).split('\n').filter((l) => l);
    const before = new Set(await keys());
    const proc = procs.etcdctl(['lock', name]);
    const key = await eventually(async () => {
      if (!proc.running) throw new Error(`etcdctl lock exited: ${proc.stderr}`);
      return (await keys()).find((k) => !before.has(k));
    }, 20_000, `etcdctl lock ${name}`);
    return { proc, lease: key.slice(key.lastIndexOf('/') + 1) };
  }

  const bar = (lease: string): Locator => timeline.locator(`#rows li[data-lease="${lease}"]`);

  before(async () => {
    etcd = await startEtcd();
    procs = new Procs(etcd.endpoint);
    // One at a time, so that the queue order is known: holder, then waiter #1, then waiter #2.
    for (let i = 0; i < 3; i++) leases.push((await etcdctlLock(LOCK)).lease);
    hostileLease = (await etcdctlLock(HOSTILE)).lease;
    folder = mkdtempSync(join(tmpdir(), 'locklens-ui-timeline-'));
    writeFileSync(join(folder, 'README.md'), '# a workspace for the LockLens timeline tests\n');
    server = await startCodeServer({
      installExtensionFrom: repoRoot,
      extraSettings: {
        'locklens.connections': [{ name: 'ui', endpoints: [etcd.endpoint], prefixes: ['/locks/'] }],
        'locklens.leaseSampleSeconds': 1,
      },
    });
    workbench = await openWorkbench(server, { folder });
    timeline = workbench.page.frameLocator('iframe.webview').frameLocator('iframe#active-frame');
  });

  after(async () => {
    await workbench?.close();
    await server?.stop();
    await procs?.dispose();
    await etcd?.dispose();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  test('"LockLens: Open Lock Timeline" shows a bar for the holder and each waiter, in queue order', async () => {
    const { page } = workbench;
    await waitForExtensionsActivated(page);
    // The palette lists an extension's commands once the workbench has read its manifest: try again until it has.
    await runCommand(page, 'LockLens: Open Lock Timeline');
    await bar(leases[2]).waitFor({ state: 'attached', timeout: 60_000 });
    const rows = await timeline.locator('#rows li').evaluateAll((lis) =>
      lis.map((li) => ({ role: li.getAttribute('data-role'), position: li.getAttribute('data-position'), lease: li.getAttribute('data-lease'), state: li.getAttribute('data-state') })),
    );
    const ours = rows.filter((r) => leases.includes(r.lease!));
    assert.deepEqual(ours, [
      { role: 'holder', position: '0', lease: leases[0], state: 'alive' },
      { role: 'waiter', position: '1', lease: leases[1], state: 'alive' },
      { role: 'waiter', position: '2', lease: leases[2], state: 'alive' },
    ]);
    assert.match((await bar(leases[0]).textContent()) ?? '', new RegExp(`holder · ${LOCK} · ${LOCK}/${leases[0]} · lease ${leases[0]} · token \\d+`));
    // The TTL comes from the lease sweep: the selected bar's strip counts it down.
    await timeline.locator('#filter input').fill('timeline-jobs');
    await bar(hostileLease).waitFor({ state: 'detached', timeout: 10_000 });
    await timeline.locator('#scroller').focus();
    await timeline.locator('#scroller').press('Home');
    await eventually(async () => /TTL \d+s of 10s/.test((await timeline.locator('#detail-info').textContent()) ?? ''), 20_000, 'the holder\'s TTL in the detail strip');
    assert.match((await timeline.locator('#detail-title').textContent()) ?? '', new RegExp(`holder · ${LOCK}`));
    // Home pressed in the same task as the filter's input, no frame drawn between: it moves through the filtered rows,
    // not through those drawn before (the hostile lock's holder is first among those).
    await timeline.locator('#filter input').fill('');
    await bar(hostileLease).waitFor({ state: 'attached', timeout: 10_000 });
    await timeline.locator('body').evaluate((body) => {
      const doc = body.ownerDocument as unknown as WebviewDocument;
      const filter = doc.querySelector('#filter');
      filter.value = 'timeline-jobs';
      filter.dispatchEvent(new doc.defaultView.Event('input'));
      doc.querySelector('#scroller').dispatchEvent(new doc.defaultView.KeyboardEvent('keydown', { key: 'Home', bubbles: true }));
    });
    assert.match((await timeline.locator('#detail-title').textContent()) ?? '', new RegExp(`holder · ${LOCK}`));
  });

  test('Revoke goes through the confirmation dialog, and the holder\'s bar ends; waiter #1 holds', async () => {
    const { page } = workbench;
    await timeline.locator('#scroller').press('Home');
    await timeline.locator('#revoke').click();
    const message = await clickDialogButton(page, 'Revoke Lease');
    assert.match(message, new RegExp(`Revoke lease ${leases[0]}`));
    await eventually(async () => (await bar(leases[0]).getAttribute('data-state')) === 'ended-forceReleased', 20_000, 'the holder\'s bar ended as LockLens ended it');
    await eventually(async () => (await bar(leases[1]).getAttribute('data-role')) === 'holder', 20_000, 'waiter #1 holds');
    assert.equal(await bar(leases[2]).getAttribute('data-position'), '1');
    assert.match((await bar(leases[0]).textContent()) ?? '', /force-released/);
  });

  test('a lock name that is markup renders as text and runs nothing', async () => {
    await timeline.locator('#filter input').fill('');
    const hostile = bar(hostileLease);
    await hostile.waitFor({ state: 'attached', timeout: 20_000 });
    assert.ok(((await hostile.textContent()) ?? '').includes(HOSTILE), 'the name appears literally');
    const probe = await timeline.locator('body').evaluate((body) => ({
      pwned: (globalThis as unknown as WebviewGlobals).__pwned,
      images: body.ownerDocument.querySelectorAll('img').length,
      // VS Code adds its own script to a webview's document; none may carry the name's markup.
      scriptsWithName: [...body.ownerDocument.querySelectorAll('script')].filter((s) => (s.textContent ?? '').includes('__pwned')).length,
      cspViolations: body.getAttribute('data-csp-violations'),
    }));
    assert.deepEqual(probe, { pwned: undefined, images: 0, scriptsWithName: 0, cspViolations: null });
    // Selected, its name is shown in the strip below the canvas: as text too.
    await timeline.locator('#filter input').fill('<img');
    await timeline.locator('#scroller').press('Home');
    await eventually(async () => ((await timeline.locator('#detail-title').textContent()) ?? '').includes(HOSTILE), 10_000, 'the name in the detail strip');
    assert.equal(await timeline.locator('body').evaluate(() => (globalThis as unknown as WebviewGlobals).__pwned), undefined);
    await timeline.locator('#filter input').fill('');
  });

  test('hidden and shown again, the timeline keeps its filter and selection (getState/setState) and its bars', async () => {
    const { page } = workbench;
    await timeline.locator('#filter input').fill('timeline-jobs');
    await timeline.locator('#scroller').press('End');
    await eventually(async () => ((await timeline.locator('#detail-info').textContent()) ?? '').includes(`lease ${leases[2]}`), 10_000, 'the last waiter selected');
    // Another editor in the same group hides the panel: its webview is unloaded (no retainContextWhenHidden).
    await runCommand(page, 'File: New Untitled Text File');
    await page.locator('.tabs-container .tab.active', { hasText: 'Untitled' }).waitFor({ state: 'visible', timeout: 20_000 });
    await page.locator('.tabs-container .tab', { hasText: 'Lock Timeline' }).click();
    await bar(leases[2]).waitFor({ state: 'attached', timeout: 20_000 });
    assert.equal(await timeline.locator('#filter input').inputValue(), 'timeline-jobs');
    assert.ok(((await timeline.locator('#detail-info').textContent()) ?? '').includes(`lease ${leases[2]}`), 'the selection is back');
    assert.equal(await bar(leases[0]).getAttribute('data-state'), 'ended-forceReleased', 'the ended bar is still shown');
  });

  test('Reveal in Locks View selects the member in the tree', async () => {
    const { page } = workbench;
    await timeline.locator('#filter input').fill('timeline-jobs');
    // The ended bar of the revoked holder comes first (queue order), then the new holder's.
    await timeline.locator('#scroller').press('Home');
    await timeline.locator('#scroller').press('ArrowDown');
    await eventually(async () => ((await timeline.locator('#detail-info').textContent()) ?? '').includes(`lease ${leases[1]}`), 10_000, 'the new holder selected');
    await timeline.locator('#reveal').click();
    const selected = page.locator('.part.sidebar .monaco-list-row.selected');
    try {
      await eventually(async () => ((await selected.first().getAttribute('aria-label', { timeout: 1000 }).catch(() => null)) ?? '').includes(leases[1]), 20_000, 'the holder selected in the tree');
    } catch (e) {
      await screenshot(page, 'timeline-reveal-failed');
      throw e;
    }
    // The picture for people: every lock, the last minute, the new holder selected.
    await timeline.locator('#filter input').fill('');
    await timeline.locator('#window').click();
    await timeline.locator('#window li[role="option"]', { hasText: '1m' }).click();
    await timeline.locator('#scroller').focus();
    await page.waitForTimeout(500);
    await screenshot(page, 'timeline');
  });
});

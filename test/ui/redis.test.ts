import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { eventually } from '../harness/etcd';
import { startRedis, type RedisServer } from '../harness/redis';
import { RedisPyLock } from '../harness/redisPy';
import { cleanUpEach, confirmFromContextMenu, openLockLensUi, openViewContainer, runCommand, viewHelpers, widenSidebar, type LockLensUi } from '../harness/workbench';
import { escapeRegExp } from '../harness/regexp';

/**
 * The Locks view on a Redis connection, as a user works it: a real redis-server (keyspace notifications on, `KEA`, as
 * a self-hosted Redis a team would point LockLens at; polling is the unit/integration tests' business) with the locks
 * real services leave there: redis-py's own `Lock` held by a python process, a Redisson RLock held twice (re-entrant),
 * a Redisson fair lock with two waiters, and a token lock stuck with no expiry. The built extension in a normal
 * code-server (toasts and modal dialogs show) in headless Chromium: the tree's rows, "Acquire Lock…" from the palette
 * on a new name (SET NX PX with our token) released from the status bar, and "Force Release…" on the stuck lock from
 * its context menu, through its confirmation, down to the audit line. Screenshots go to test-output/screenshots/.
 */

const CONNECTION = 'redis-local';
const PREFIX = 'app:';
const EXPORT = 'app:export';
const BILLING = 'app:billing';
const FAIR = 'app:fair';
const STUCK = 'app:stuck';
const BY_HAND = 'app:by-hand';
/** What a crashed service left: a token lock with no PX. */
const STUCK_TOKEN = 'deadbeef'.repeat(4);
/** Redisson's `<client uuid>:<thread id>` fields: the billing holder (2 holds), the fair lock's holder and its two waiters. */
const BILLING_FIELD = `${randomUUID()}:1`;
const FAIR_HOLDER = `${randomUUID()}:41`;
const FAIR_WAITERS = [`${randomUUID()}:57`, `${randomUUID()}:63`];
/** Redisson's default lease (lockWatchdogTimeout) and the TTL we gave redis-py's Lock. */
const LEASE_MS = 30_000;

/** Renew the lease only while the owner still holds it: what redis-py's `extend` and Redisson's watchdog run. */
const RENEW_TOKEN = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0";
const RENEW_FIELD = "if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0";

describe('Locks view on a Redis connection (code-server + Chromium + redis-server)', { timeout: 8 * 60_000 }, () => {
  let redis: RedisServer;
  let peer: RedisPyLock;
  /** The redis-py Lock's token (uuid1().hex), as the peer printed it. */
  let exportToken = '';
  let ui: LockLensUi | undefined;
  let page: Page;
  let renewer: NodeJS.Timeout | undefined;

  const { rowLabelled, rowLabels, description, quickInputTitled, acceptInputTitled, toast, pickLayout, expand, cleanShot: shot } = viewHelpers(() => page);



  const exists = async (key: string) => (await redis.cli(['EXISTS', key])) === '1';



  /** Closes the notification toasts (a "You hold" toast outlives its lock: it would cover later pictures). */
  const clearNotifications = () => runCommand(page, 'Notifications: Clear All Notifications');

  /** The owners' own renewals (redis-py `extend`, Redisson's watchdog), so the seeded leases outlive a slow run. */
  async function renew(): Promise<void> {
    await redis.cli(['EVAL', RENEW_TOKEN, '1', EXPORT, exportToken, String(LEASE_MS)]);
    await redis.cli(['EVAL', RENEW_FIELD, '1', BILLING, BILLING_FIELD, String(LEASE_MS)]);
    await redis.cli(['EVAL', RENEW_FIELD, '1', FAIR, FAIR_HOLDER, String(LEASE_MS)]);
  }

  before(async () => {
    redis = await startRedis({ notify: 'KEA' });
    // redis-py's own Lock, held by a python process until told to release.
    peer = new RedisPyLock(redis.url, EXPORT, 'hold', LEASE_MS / 1000);
    exportToken = (await peer.until(['acquired'])).split(' ')[1];
    assert.match(exportToken, /^[0-9a-f]{32}$/, 'redis-py tokens are uuid1().hex');
    // Redisson RLock, as its lock Lua leaves it after the same thread locked twice.
    await redis.cli(['HSET', BILLING, BILLING_FIELD, '2']);
    await redis.cli(['PEXPIRE', BILLING, String(LEASE_MS)]);
    // Redisson RFairLock: held, two waiters queued (RPUSH order) with their give-up deadlines (epoch ms) in the ZSET.
    const now = Date.now();
    await redis.cli(['HSET', FAIR, FAIR_HOLDER, '1']);
    await redis.cli(['PEXPIRE', FAIR, String(LEASE_MS)]);
    await redis.cli(['RPUSH', `redisson_lock_queue:{${FAIR}}`, ...FAIR_WAITERS]);
    await redis.cli(['ZADD', `redisson_lock_timeout:{${FAIR}}`, String(now + 300_000), FAIR_WAITERS[0], String(now + 305_000), FAIR_WAITERS[1]]);
    // A token lock whose owner died before it could release, taken without PX: it never expires.
    await redis.cli(['SET', STUCK, STUCK_TOKEN]);
    renewer = setInterval(() => void renew().catch(() => undefined), 5000);

    ui = await openLockLensUi({
      name: 'redis',
      readme: 'a workspace for the LockLens Redis UI tests',
      settings: { 'locklens.connections': [{ name: CONNECTION, store: 'redis', endpoints: [redis.url], prefixes: [PREFIX] }] },
      viewport: { width: 1600, height: 900 },
    });
    page = ui.page;
  });

  after(async () => {
    clearInterval(renewer);
    await cleanUpEach([() => ui?.close(), () => peer?.dispose(), () => redis?.dispose()]);
  });

  test('the tree shows redis-py\'s token lock, the re-entrant Redisson lock and the stuck lock with no expiry', async () => {
    await openViewContainer(page, 'LockLens');
    // Room for the rows' descriptions (role, owner, holds, TTL, age).
    await widenSidebar(page, 760);
    // Off the sash just dragged (it stays highlighted while hovered).
    await page.mouse.move(1300, 300);
    // The picture is taken whatever happens below: when a row is missing, it shows what the tree had instead.
    try {
      await rowLabelled(CONNECTION).waitFor({ state: 'visible', timeout: 60_000 });
      await eventually(async () => /^connected/.test(await description(rowLabelled(CONNECTION))), 30_000, 'connection row says connected');

      // A token lock is one key: one row, its owner the token (cut to fit; the tooltip has it whole), with its TTL.
      await rowLabelled('export').waitFor({ state: 'visible', timeout: 30_000 });
      const exportRow = await eventually(async () => {
        const d = await description(rowLabelled('export'));
        return /TTL \d+s/.test(d) && d;
      }, 20_000, 'export row with its TTL');
      assert.match(exportRow, new RegExp(`owner ${exportToken.slice(0, 20)}`), `export row: ${exportRow}`);
      const exportTtl = Number(/TTL (\d+)s/.exec(exportRow)![1]);
      assert.ok(exportTtl > 0 && exportTtl <= LEASE_MS / 1000, `TTL within the lease: ${exportRow}`);

      // The stuck lock: no expiry, and the row warns.
      const stuckRow = rowLabelled('stuck');
      await stuckRow.waitFor({ state: 'visible', timeout: 30_000 });
      const stuck = await description(stuckRow);
      assert.match(stuck, new RegExp(`owner ${STUCK_TOKEN.slice(0, 20)}`), `stuck row: ${stuck}`);
      assert.match(stuck, /no expiry/, `stuck row: ${stuck}`);
      assert.ok(await stuckRow.locator('.codicon-warning').isVisible(), 'the stuck row has a warning icon');

      // Redisson: a lock row naming the holder, whose member row counts the holds.
      const billing = rowLabelled('billing');
      await billing.waitFor({ state: 'visible', timeout: 30_000 }).catch(async (e: unknown) => {
        throw new Error(`no billing row; the tree shows ${JSON.stringify(await rowLabels())}: ${String(e)}`);
      });
      // The Redisson field (`<uuid>:<thread>`) shortened to its first 12 characters; whole as the holder's label below.
      assert.match(await description(billing), new RegExp(`^held (≥)?(<1m|\\d+[mhd]) · by ${escapeRegExp(BILLING_FIELD.slice(0, 12))}…$`));
      await expand(billing);
      await rowLabelled(BILLING_FIELD).waitFor({ state: 'visible', timeout: 20_000 });
      const billingHolder = await description(rowLabelled(BILLING_FIELD));
      assert.match(billingHolder, /^holder · held [^·]+ · TTL \d+s · .*2 holds \(re-entrant\)/, `billing holder row: ${billingHolder}`);
    } finally {
      await shot('redis-tree');
    }
  });

  test('a Redisson fair lock shows its holder, then its two waiters in queue order', async () => {
    const fair = rowLabelled('fair');
    await fair.waitFor({ state: 'visible', timeout: 20_000 });
    assert.match(await description(fair), new RegExp(`^held (≥)?(<1m|\\d+[mhd]) · 2 waiting · by ${escapeRegExp(FAIR_HOLDER.slice(0, 12))}…$`));
    await expand(fair);
    await rowLabelled(FAIR_WAITERS[1]).waitFor({ state: 'visible', timeout: 20_000 });
    const labels = await rowLabels();
    const at = labels.indexOf('fair');
    assert.deepEqual(labels.slice(at + 1, at + 4), [FAIR_HOLDER, ...FAIR_WAITERS], `rows after fair: ${JSON.stringify(labels)}`);
    assert.match(await description(rowLabelled(FAIR_HOLDER)), /^holder · /);
    assert.match(await description(rowLabelled(FAIR_WAITERS[0])), /^waiter #1 · /);
    assert.match(await description(rowLabelled(FAIR_WAITERS[1])), /^waiter #2 · /);
    await shot('redis-fair-lock');
  });

  test('"Acquire Lock…" on a new name sets our token with a PX, shows it in the status bar, and the status bar releases it', async () => {
    await runCommand(page, 'LockLens: Acquire Lock…');
    await quickInputTitled(new RegExp(`Acquire lock on ${escapeRegExp(CONNECTION)}`));
    await page.locator('.quick-input-widget input').fill(BY_HAND);
    // The typed name becomes a "new lock" item once the extension has seen the value.
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'new lock' }).first().waitFor({ state: 'visible', timeout: 20_000 });
    await page.keyboard.press('Enter');
    // A new name is taken in a layout, asked next (the README's layout of a free name).
    await pickLayout('token:');
    // The TTL input box, with the default filled in.
    await quickInputTitled(/TTL/);
    const ttl = Number(await page.locator('.quick-input-widget input').inputValue());
    await acceptInputTitled(/TTL/);

    const item = page.locator('.part.statusbar .statusbar-item', { hasText: BY_HAND });
    await item.waitFor({ state: 'visible', timeout: 30_000 });
    const token = await redis.cli(['GET', BY_HAND]);
    assert.ok(token.length > 0, `${BY_HAND} is set`);
    const pttl = Number(await redis.cli(['PTTL', BY_HAND]));
    assert.ok(pttl > 0 && pttl <= ttl * 1000, `a PX of at most the TTL asked for (${ttl}s): PTTL ${pttl}`);
    const held = toast(/You hold/);
    await held.waitFor({ state: 'visible', timeout: 20_000 });
    assert.ok(((await held.textContent()) ?? '').includes(token), `the toast names the token that redis-cli GET reads (${token})`);
    await page.locator('.notification-toast', { hasText: `Acquiring "${BY_HAND}"` }).waitFor({ state: 'detached', timeout: 20_000 });
    // The tree has it, as ours.
    await eventually(async () => /held by you/.test(await description(rowLabelled('by-hand'))), 20_000, 'by-hand row held by you');
    await shot('redis-acquire');

    await item.click();
    await eventually(async () => !(await exists(BY_HAND)), 20_000, `${BY_HAND} deleted`);
    await item.waitFor({ state: 'hidden', timeout: 20_000 });
    await rowLabelled('by-hand').waitFor({ state: 'detached', timeout: 20_000 });
    await clearNotifications();
  });

  test('"Acquire Lock…" on the Redisson-held lock asks "Wait for it?" (Redis keeps no queue), and Cancel takes nothing', async () => {
    await runCommand(page, 'LockLens: Acquire Lock…');
    await quickInputTitled(new RegExp(`Acquire lock on ${escapeRegExp(CONNECTION)}`));
    await page.locator('.quick-input-widget input').fill(BILLING);
    // The existing lock, offered as itself (not as a new name).
    await page.locator('.quick-input-list .monaco-list-row', { hasText: BILLING }).first().waitFor({ state: 'visible', timeout: 20_000 });
    assert.equal(await page.locator('.quick-input-list .monaco-list-row', { hasText: 'new lock' }).count(), 0, 'a held name is not offered as a new lock');
    await page.keyboard.press('Enter');
    await acceptInputTitled(/TTL/);

    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 20_000 });
    const question = (await dialog.textContent()) ?? '';
    assert.match(question, new RegExp(`"${escapeRegExp(BILLING)}" is held by ${escapeRegExp(BILLING_FIELD)}\\. Wait for it\\?`));
    assert.match(question, /No queue is kept for this lock/);
    // The TTL box fades out behind the dialog: the picture without its ghost.
    await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 5000 }).catch(() => undefined);
    await shot('redis-acquire-held');
    await dialog.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
    await dialog.waitFor({ state: 'hidden', timeout: 20_000 });

    // Nothing taken, nothing queued: the Redisson holder alone, as it was.
    assert.equal(await redis.cli(['HLEN', BILLING]), '1');
    assert.equal(await redis.cli(['HGET', BILLING, BILLING_FIELD]), '2');
    assert.equal(await page.locator('.notification-toast', { hasText: `Acquiring "${BILLING}"` }).count(), 0, 'no acquire started');
    assert.equal(await page.locator('.part.statusbar .statusbar-item', { hasText: BILLING }).count(), 0);
  });

  test('"Force Release…" on the stuck lock asks with what it will do, then deletes the key and the row', async () => {
    const stuck = rowLabelled('stuck');
    const dialog = await confirmFromContextMenu(page, stuck, 'Force Release…');
    const text = (await dialog.textContent()) ?? '';
    // A token lock's one member is the lock's own key, so the title names its owner (the token).
    assert.match(text, new RegExp(`Force-release "${escapeRegExp(STUCK)}" from ${STUCK_TOKEN} on ${escapeRegExp(CONNECTION)}\\?`));
    // The backend's own description of what it will do (compare-and-delete of the token shown), and who is next.
    const detail = ((await dialog.locator('.dialog-message-detail').textContent().catch(() => '')) ?? '').trim();
    assert.match(detail, new RegExp(`only if it still holds token ${STUCK_TOKEN}`), `the confirmation says what force-release does: ${detail}`);
    assert.match(detail, /Nobody is waiting in the store/);
    assert.ok(await exists(STUCK), 'nothing deleted before the confirmation');
    await shot('redis-force-release-confirm');
    await dialog.locator('.monaco-button', { hasText: 'Force Release' }).first().click();
    await dialog.waitFor({ state: 'hidden', timeout: 20_000 });

    await eventually(async () => !(await exists(STUCK)), 20_000, `${STUCK} deleted`);
    await stuck.waitFor({ state: 'detached', timeout: 20_000 });
    await toast(/Released "app:stuck"/).waitFor({ state: 'visible', timeout: 20_000 });
    // Only the stuck lock: the others are still held by their owners.
    assert.equal(await redis.cli(['GET', EXPORT]), exportToken);
    assert.equal(await redis.cli(['HGET', BILLING, BILLING_FIELD]), '2');
    await shot('redis-after-force-release');
    await clearNotifications();
  });

  test('the audit log has the force-release, with the owner released', async () => {
    const expected = new RegExp(`forceRelease ok connection="${escapeRegExp(CONNECTION)}" lock="${escapeRegExp(STUCK)}" owner="${STUCK_TOKEN}"`);
    // The channel as the user opens it: "LockLens: Show Audit Log" shows it in the Output panel.
    await runCommand(page, 'LockLens: Show Audit Log');
    const output = page.locator('.part.panel .view-lines');
    await eventually(async () => expected.test(((await output.first().textContent().catch(() => '')) ?? '').replace(/\u00a0/g, ' ')), 20_000, 'the forceRelease line in the Output panel');
    await shot('redis-audit');
    // And the channel's log file, under the user data dir (a log output channel writes one).
    const file = await eventually(() => findFile(ui!.server.userDataDir, (name) => /LockLens Audit/.test(name)), 20_000, 'the audit log file');
    const lines = readFileSync(file, 'utf8').split('\n').filter((l) => /forceRelease/.test(l));
    assert.equal(lines.length, 1, `one forceRelease line: ${JSON.stringify(lines)}`);
    assert.match(lines[0], expected);
  });

  test('the timeline shows the Redis holds by owner, and a selected Redis bar has no Copy Lease ID or Revoke Lease button: Force Release… instead', async () => {
    await runCommand(page, 'LockLens: Open Lock Timeline');
    const timeline = page.frameLocator('iframe.webview').frameLocator('iframe#active-frame');
    const bars = timeline.locator('#rows li');
    await eventually(async () => ((await bars.allTextContents()).join('\n')).includes(`owner ${exportToken}`), 60_000, 'the redis-py hold as a bar named by its token');
    await timeline.locator('#filter input').fill(EXPORT);
    await timeline.locator('#scroller').focus();
    await timeline.locator('#scroller').press('Home');
    const info = timeline.locator('#detail-info');
    await eventually(async () => ((await info.textContent()) ?? '').includes(`owner ${exportToken}`), 20_000, 'the redis-py bar selected');
    assert.doesNotMatch((await info.textContent()) ?? '', /lease|token \d/, 'nothing etcd-only in the strip');
    assert.equal(await timeline.locator('#reveal').isVisible(), true, 'Reveal in Locks View is there');
    assert.equal(await timeline.locator('#copy').isVisible(), false, 'no Copy Lease ID: Redis has no leases');
    assert.equal(await timeline.locator('#revoke').isVisible(), false, 'no Revoke Lease: Redis has no leases');
    assert.equal(await timeline.locator('#force-release').isVisible(), true, 'Force Release… for a token lock\'s holder');
    assert.match((await info.textContent()) ?? '', /TTL \d+s of \d+s ·/, 'whole seconds, as the tree shows them');
    await shot('redis-timeline');
    // Its context menu has Reveal and Force Release…, nothing of leases.
    await timeline.locator('#scroller').press('Shift+F10');
    const menuItems = () => timeline.locator('#menu').evaluate((m) => ((m as unknown as { data?: { label?: string }[] }).data ?? []).map((d) => d.label ?? '-'));
    await eventually(async () => (await menuItems()).length > 0, 10_000, 'the bar\'s context menu');
    assert.deepEqual(await menuItems(), ['Reveal in Locks View', '-', 'Force Release…']);
  });
});

/** The first file under `dir` (recursively) whose name `wanted` accepts. */
function findFile(dir: string, wanted: (name: string) => boolean): string | undefined {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isFile() && wanted(e.name)) return path;
    if (e.isDirectory()) {
      const found = findFile(path, wanted);
      if (found) return found;
    }
  }
  return undefined;
}

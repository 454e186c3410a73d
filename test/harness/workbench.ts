import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { format as formatArgs } from 'node:util';
import { chromium, type BrowserContext, type ConsoleMessage, type Locator, type Page } from 'playwright-core';
import { repoRoot, startCodeServer, testOutput, type CodeServer } from './codeServer';
import { eventually } from './etcd';
import { escapeRegExp } from './regexp';

/**
 * Debian's Chromium driven by playwright-core, pointed at a code-server: open the workbench, wait for it, and the
 * small actions UI tests need (command palette, views, tree rows, dialogs, status bar, notifications, screenshots).
 */

export const chromiumPath = process.env.LOCKLENS_CHROMIUM ?? '/usr/bin/chromium';
/** What works as root on a headless machine with no network. */
export const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export interface Workbench {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Absolute path of the folder to open; no folder when omitted. */
  readonly folder?: string;
  /** `[key, value]` pairs for the `payload` URL parameter (honoured in smoke-test-driver mode only). */
  readonly payload?: readonly (readonly [string, string])[];
  /** Functions exposed on `window` before the workbench loads (e.g. codeAutomationExit). */
  readonly expose?: Readonly<Record<string, (...args: any[]) => unknown>>;
  /** Called with each browser console line (format directives stripped). */
  readonly onConsole?: (line: string, type: string) => void;
  /** Wait for the workbench to be ready (default true). */
  readonly waitReady?: boolean;
  readonly viewport?: { width: number; height: number };
}

/** The workbench URL for a folder and payload. */
export function workbenchUrl(server: CodeServer, options: Pick<OpenOptions, 'folder' | 'payload'> = {}): string {
  const params: string[] = [];
  if (options.folder) params.push(`folder=${encodeURIComponent(options.folder)}`);
  else params.push('ew=true');
  if (options.payload) params.push(`payload=${encodeURIComponent(JSON.stringify(options.payload))}`);
  return `${server.url}/?${params.join('&')}`;
}

/** A console message as text: the `%c` styling directives and their CSS arguments dropped. */
export async function consoleText(msg: ConsoleMessage): Promise<string> {
  const text = msg.text();
  if (!text.includes('%c')) return text;
  try {
    const values = await Promise.all(msg.args().map((a) => a.jsonValue().catch(() => undefined)));
    const [format, ...rest] = values;
    if (typeof format === 'string') {
      let i = 0;
      const out = format.replace(/%[csdifoO]/g, (d) => {
        const v = rest[i++];
        return d === '%c' ? '' : String(v);
      });
      // What is left is the logged call's own arguments (mocha's reporter logs format strings like '  ✔ %s').
      const remaining = rest.slice(i);
      return `${out} ${remaining.length ? formatArgs(...remaining) : ''}`.replace(/\s+$/, '').replace(/^\s+(?=[A-Z]+ )/, '');
    }
  } catch {
    // fall back to the plain text
  }
  return text.replace(/%c/g, '').replace(/\s*(color|font-weight|background)[^;]*;?/g, '').trim();
}

export async function openWorkbench(server: CodeServer, options: OpenOptions = {}): Promise<Workbench> {
  const profile = mkdtempSync(join(tmpdir(), 'locklens-chromium-'));
  let context: BrowserContext | undefined;
  const close = async () => {
    await context?.close().catch(() => undefined);
    rmSync(profile, { recursive: true, force: true, maxRetries: 3 });
  };
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: chromiumArgs,
      viewport: options.viewport ?? { width: 1400, height: 900 },
    });
    for (const [name, fn] of Object.entries(options.expose ?? {})) await context.exposeFunction(name, fn);
    const page = context.pages()[0] ?? (await context.newPage());
    if (options.onConsole) {
      const onConsole = options.onConsole;
      page.on('console', (msg) => void consoleText(msg).then((t) => onConsole(t, msg.type())));
      page.on('pageerror', (e) => onConsole(`page error: ${e.message}`, 'error'));
    }
    await page.goto(workbenchUrl(server, options));
    if (options.waitReady ?? true) await waitForWorkbench(page);
    return { context, page, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** Runs every cleanup step in order, each even when one before it failed (the failure is logged): nothing may outlive a test. */
export async function cleanUpEach(steps: readonly (() => unknown)[]): Promise<void> {
  for (const step of steps) await Promise.resolve().then(step).catch((e: unknown) => console.error('cleanup:', e));
}

export interface LockLensUiOptions {
  /** Names the workspace folder (`locklens-ui-<name>-…`) and says what it is for in its README. */
  readonly name: string;
  readonly readme: string;
  /** User settings over code-server's base ones: `locklens.connections`, say. */
  readonly settings: Readonly<Record<string, unknown>>;
  readonly viewport?: { width: number; height: number };
}

export interface LockLensUi {
  readonly server: CodeServer;
  readonly workbench: Workbench;
  readonly page: Page;
  /** Closes the browser, stops code-server and removes the workspace folder. */
  close(): Promise<void>;
}

/**
 * The built extension installed in a fresh code-server with `settings`, and its workbench open in Chromium on a new
 * workspace folder (a README in it). What it started is ended again if it fails part-way.
 */
export async function openLockLensUi(options: LockLensUiOptions): Promise<LockLensUi> {
  const folder = mkdtempSync(join(tmpdir(), `locklens-ui-${options.name}-`));
  let server: CodeServer | undefined;
  let workbench: Workbench | undefined;
  const close = () => cleanUpEach([() => workbench?.close(), () => server?.stop(), () => rmSync(folder, { recursive: true, force: true })]);
  try {
    writeFileSync(join(folder, 'README.md'), `# ${options.readme}\n`);
    server = await startCodeServer({ installExtensionFrom: repoRoot, extraSettings: options.settings });
    workbench = await openWorkbench(server, { folder, viewport: options.viewport });
    return { server, workbench, page: workbench.page, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/**
 * Finders for the sidebar's tree, quick inputs and toasts of whichever page `page()` returns when they are called (a
 * suite's page, opened in its `before`).
 */
export function viewHelpers(page: () => Page) {
  /** Whether the quick input (pick or input box) is shown with a title that matches. */
  const quickInputShowing = async (title: RegExp): Promise<boolean> =>
    (await page().locator('.quick-input-widget').isVisible()) && title.test((await page().locator('.quick-input-widget .quick-input-title').textContent().catch(() => '')) ?? '');
  return {
    /** The sidebar row whose label is exactly `label`. */
    rowLabelled: (label: string): Locator =>
      page().locator('.part.sidebar .monaco-list-row').filter({ has: page().locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(label)}$`) }) }).first(),
    /** Labels of the sidebar's rows, in order. */
    rowLabels: (): Promise<string[]> => page().locator('.part.sidebar .monaco-list-row .label-name').allTextContents(),
    /** The row's description (the grey text after its label). */
    description: async (row: Locator): Promise<string> => ((await row.locator('.label-description').first().textContent()) ?? '').trim(),
    /** Waits for the quick input (pick or input box) whose title matches. */
    quickInputTitled: async (title: RegExp): Promise<void> => {
      await eventually(() => quickInputShowing(title), 20_000, `quick input ${title}`);
    },
    /**
     * Waits for the input box titled `title` and accepts its value with Enter; again if the box is still there with
     * that title a moment later (an Enter that lands while the box is being shown, on a loaded machine, is lost).
     */
    acceptInputTitled: async (title: RegExp): Promise<void> => {
      const showing = () => quickInputShowing(title);
      await eventually(showing, 20_000, `quick input ${title}`);
      await eventually(
        async () => {
          // Pressed on the box itself: a step stays open when focus leaves it (acquirePrompts.ts), so focus may be elsewhere.
          await page().locator('.quick-input-widget input').press('Enter', { timeout: 2000 }).catch(() => undefined);
          const deadline = Date.now() + 3000;
          while (Date.now() < deadline) {
            if (!(await showing())) return true;
            await page().waitForTimeout(100);
          }
          return false;
        },
        20_000,
        `quick input ${title} accepted`,
      );
    },
    /**
     * Acquire Lock…'s question for a name that holds no lock: picks the layout whose label starts with `label`, typed
     * as the pick's filter and accepted once it is the only row left.
     */
    pickLayout: async (label: string): Promise<void> => {
      const title = /^Layout of /;
      await eventually(() => quickInputShowing(title), 20_000, 'the layout pick');
      const input = page().locator('.quick-input-widget input');
      await input.fill(label);
      const rows = page().locator('.quick-input-list .monaco-list-row');
      await eventually(async () => (await rows.count()) === 1 && ((await rows.first().textContent()) ?? '').includes(label), 20_000, `only the layout ${label} left`);
      await input.press('Enter');
      await eventually(async () => !(await quickInputShowing(title)), 20_000, 'the layout picked');
    },
    /** The notification toast whose text matches, once it has faded in (screenshots then show it in place). */
    toast: (text: string | RegExp): Locator => page().locator('.notification-toast.notification-fade-in-done').filter({ hasText: text }).first(),
    /**
     * Expands a collapsed tree row with a click on its twistie, again while it stays folded: a click that lands as the
     * list redraws is lost. Each click is given a second to take before the next, which would fold the row again.
     */
    expand: async (row: Locator): Promise<void> => {
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      const expanded = async () => (await row.getAttribute('aria-expanded', { timeout: 1000 }).catch(() => null)) === 'true';
      await eventually(
        async () => {
          if (await expanded()) return true;
          await row.locator('.monaco-tl-twistie').click({ timeout: 2000 }).catch(() => undefined);
          return eventually(expanded, 1000).catch(() => false);
        },
        20_000,
        'row expanded',
      );
    },
    /** A screenshot with the mouse parked on the empty editor area, so no hover tooltip covers the view. */
    cleanShot: async (name: string): Promise<void> => {
      await page().mouse.move(1300, 300);
      // A hover shown before the move fades out after a short delay.
      await page().locator('.workbench-hover-container, .monaco-hover:not(.hidden)').first().waitFor({ state: 'hidden', timeout: 5000 }).catch(() => undefined);
      await screenshot(page(), name);
    },
  };
}

/** Resolves once the workbench, its activity bar and status bar are on screen. */
export async function waitForWorkbench(page: Page, timeoutMs = 90_000): Promise<void> {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: timeoutMs });
  await page.locator('.part.activitybar, .activitybar').first().waitFor({ state: 'visible', timeout: timeoutMs });
  await page.locator('.part.statusbar').waitFor({ state: 'visible', timeout: timeoutMs });
}

/** Resolves once the status bar no longer says "Activating Extensions..." (extensions that activate on startup are up). */
export async function waitForExtensionsActivated(page: Page, timeoutMs = 60_000): Promise<void> {
  await page.waitForFunction(
    `![...document.querySelectorAll('.statusbar-item')].some((e) => /Activating Extensions/i.test(e.textContent || ''))`,
    undefined,
    { timeout: timeoutMs, polling: 200 },
  );
}

/**
 * Runs a command from the palette by its title (as shown, e.g. "LockLens: Connect"), picking the exact match. The
 * workbench lists an extension's commands only once it has read the manifest, so while the title is not listed it
 * closes the palette and tries again. Returns once the palette has moved on: closed, or showing the command's own
 * quick pick or input.
 */
export async function runCommand(page: Page, title: string, timeoutMs = 60_000): Promise<void> {
  const input = page.locator('.quick-input-widget input');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await eventually(
    async () => {
      if (!(await input.isVisible())) await page.keyboard.press('F1');
      await input.waitFor({ state: 'visible', timeout: 10_000 });
      await input.fill(`>${title}`);
      const listed = await row.waitFor({ state: 'visible', timeout: 5000 }).then(
        () => true,
        () => false,
      );
      if (!listed) await page.keyboard.press('Escape');
      return listed;
    },
    timeoutMs,
    `${title} in the command palette`,
  );
  await row.click();
  await eventually(async () => !(await input.isVisible()) || (await input.inputValue()) !== `>${title}`, 20_000, `the palette to run ${title}`);
}

/** The command palette's rows (their labels) for a query, then closes the palette. */
export async function paletteEntries(page: Page, query: string, settleMs = 1000): Promise<string[]> {
  const input = page.locator('.quick-input-widget input');
  await page.keyboard.press('F1');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${query}`);
  await page.waitForTimeout(settleMs);
  const rows = await page.locator('.quick-input-list .monaco-list-row').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? e.textContent ?? ''));
  await page.keyboard.press('Escape');
  return rows;
}

/** Clicks a view container in the activity bar by its title (e.g. "LockLens") and waits for its sidebar. */
export async function openViewContainer(page: Page, title: string, timeoutMs = 20_000): Promise<void> {
  const item = page.locator(`.activitybar [aria-label^="${title}"]`).first();
  await item.waitFor({ state: 'visible', timeout: timeoutMs });
  const checked = await item.getAttribute('aria-checked').catch(() => null);
  const expanded = await item.getAttribute('aria-expanded').catch(() => null);
  if (checked !== 'true' && expanded !== 'true') await item.click();
  await page.locator('.part.sidebar').waitFor({ state: 'visible', timeout: timeoutMs });
}

/** The aria-labels of the list/tree rows inside `within` (default: the sidebar). */
export async function treeRows(page: Page, within: Locator | string = '.part.sidebar'): Promise<string[]> {
  const root = typeof within === 'string' ? page.locator(within) : within;
  return root.locator('.monaco-list-row').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? e.textContent ?? ''));
}

/** The row whose aria-label contains `label`. */
export function treeRow(page: Page, label: string, within = '.part.sidebar'): Locator {
  return page.locator(`${within} .monaco-list-row[aria-label*="${label.replace(/"/g, '\\"')}"]`).first();
}

/**
 * Right-clicks `row`, then the context-menu item `item` (hovered first: a click that lands on a menu item just shown
 * is often ignored), until the command's modal confirmation shows; returns that dialog. A row command must get its
 * row. VS Code drops a row's handle while its parent redraws (its children are fetched again), and a menu item
 * clicked in that moment runs the command with no argument, which then asks what to act on: that quick pick is
 * closed and the menu tried again, as a user would. Asked every time (`maxAsked`), the command never gets its row,
 * and this throws.
 */
export async function confirmFromContextMenu(page: Page, row: Locator, item: string, timeoutMs = 30_000, maxAsked = 3): Promise<Locator> {
  const menuItem = page.locator('.monaco-menu .action-item', { hasText: item }).first();
  const dialog = page.locator('.monaco-dialog-box');
  const quickInput = page.locator('.quick-input-widget');
  let asked = 0;
  await eventually(async () => {
    if (await dialog.isVisible()) return true;
    if (await quickInput.isVisible()) {
      if (++asked >= maxAsked) return true;
      await page.keyboard.press('Escape');
      await quickInput.waitFor({ state: 'hidden', timeout: 2000 }).catch(() => undefined);
    }
    if (!(await menuItem.isVisible())) await row.click({ button: 'right', timeout: 5000 });
    await menuItem.hover({ timeout: 2000 }).catch(() => undefined);
    await menuItem.click({ timeout: 2000 }).catch(() => undefined);
    return dialog.waitFor({ state: 'visible', timeout: 2000 }).then(
      () => true,
      () => false,
    );
  }, timeoutMs, `the confirmation of "${item}"`).catch(async (e: unknown) => {
    // A context menu left open takes every later click in the workbench (the next test failed on it, seen in CI).
    await page.keyboard.press('Escape');
    throw e;
  });
  if (asked >= maxAsked) throw new Error(`"${item}" from the row's context menu asked what to act on ${asked} times instead of using the row`);
  return dialog;
}

/** Waits for a modal dialog (code-server renders them in the DOM) and clicks its button labelled `label`. */
export async function clickDialogButton(page: Page, label: string, timeoutMs = 20_000): Promise<string> {
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: timeoutMs });
  const message = (await dialog.locator('.dialog-message-text, .dialog-message').first().textContent().catch(() => '')) ?? '';
  await dialog.locator('.monaco-button', { hasText: label }).first().click();
  await dialog.waitFor({ state: 'hidden', timeout: timeoutMs });
  return message;
}

/** The texts of the status bar items (their aria-labels when they have one). */
export async function statusBarItems(page: Page): Promise<string[]> {
  return page.locator('.statusbar-item').evaluateAll((els) =>
    els.map((e) => (e.getAttribute('aria-label') || e.textContent || '').trim()).filter((t) => t.length > 0),
  );
}

/** Messages of the notification toasts on screen, or of the notification center when `center` (smoke-test mode shows no toasts). */
export async function notifications(page: Page, options: { center?: boolean } = {}): Promise<string[]> {
  if (options.center) {
    const center = page.locator('.notifications-center');
    if (!(await center.isVisible())) await runCommand(page, 'Notifications: Show Notifications');
    await center.waitFor({ state: 'visible' });
    return center.locator('.notification-list-item-message').allTextContents();
  }
  return page.locator('.notification-toast .notification-list-item-message').allTextContents();
}

/** Saves a full-page screenshot to test-output/screenshots/<name>.png and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir = join(testOutput, 'screenshots');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

/** Drags the sidebar's sash so the sidebar is about `width` px wide. */
export async function widenSidebar(page: Page, width: number): Promise<void> {
  const sidebar = await page.locator('.part.sidebar').boundingBox();
  if (!sidebar || sidebar.width >= width) return;
  const x = sidebar.x + sidebar.width;
  const y = sidebar.y + sidebar.height / 2;
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(sidebar.x + width, y, { steps: 5 });
  await page.mouse.up();
}


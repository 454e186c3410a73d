import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { observeLease, type LeaseInfo } from '../src/core/leaseInfo';
import { LockClock } from '../src/core/lockHealth';
import { LockModel } from '../src/core/etcd/lockModel';
import { TimelineReducer } from '../src/core/timeline';
import type { DiffMessage, InitMessage, TimelineStrings } from '../src/protocol/timeline';
import type { TimelineRow } from '../src/shared/timelineData';
import { chromiumArgs, chromiumPath } from '../test/harness/workbench';
import { ROOT } from './paths';

/** What the page functions below use of the browser's globals (this project compiles without the DOM library). */
interface PageGlobals {
  postMessage(message: unknown, target: string): void;
  requestAnimationFrame(callback: (ts: number) => void): number;
  PerformanceObserver: new (callback: (list: { getEntries(): { duration: number }[] }) => void) => { observe(options: { type: string }): void };
  __posted: { type: string }[];
  __timelineStats?: { frames: number; totalMs: number; maxMs: number; recent: number[] };
  __frames: number[];
  __longTasks: number[];
  __benchRows: TimelineRow[];
}
import { percentile, round } from './stats';

/**
 * The timeline webview on its own: the built bundle (dist/webview/) served to plain headless Chromium under the
 * same CSP as in VS Code, with a stand-in `acquireVsCodeApi` and VS Code's dark theme variables, fed protocol
 * messages directly. The `timeline_webview` scenario measures the cost of a frame with 2,000 leases while diffs
 * arrive at the host's maximum rate; `openTimelinePage` is also handy for looking at the UI without a workbench.
 * `timeline_reduce` measures the host's side: rows and diffs for 2,000 leases.
 */

const ORIGIN = 'http://timeline.test';

/** VS Code's Dark Modern values of the variables the timeline reads. */
const DARK_THEME = `:root {
  --vscode-font-family: system-ui, "Segoe UI", Ubuntu, sans-serif; --vscode-font-size: 13px;
  --vscode-editor-font-family: "DejaVu Sans Mono", monospace; --vscode-editor-font-size: 12px;
  --vscode-foreground: #cccccc; --vscode-editor-foreground: #cccccc; --vscode-editor-background: #1f1f1f;
  --vscode-descriptionForeground: #9d9d9d; --vscode-errorForeground: #f85149; --vscode-editorWarning-foreground: #cca700;
  --vscode-charts-green: #89d185; --vscode-charts-blue: #3794ff; --vscode-charts-purple: #b180d7;
  --vscode-charts-yellow: #cca700; --vscode-charts-orange: #d18616; --vscode-focusBorder: #0078d4;
  --vscode-list-hoverBackground: #2a2d2e; --vscode-list-inactiveSelectionBackground: #37373d;
  --vscode-sideBarSectionHeader-background: #181818; --vscode-sideBar-background: #181818; --vscode-panel-border: #2b2b2b;
  --vscode-editorIndentGuide-background1: #404040; --vscode-button-background: #0078d4; --vscode-button-foreground: #ffffff;
  --vscode-button-secondaryBackground: #313131; --vscode-button-secondaryForeground: #cccccc;
  --vscode-input-background: #313131; --vscode-input-foreground: #cccccc; --vscode-settings-dropdownBackground: #313131;
}`;

function pageHtml(nonce: string): string {
  const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src ${ORIGIN} 'nonce-${nonce}'; img-src ${ORIGIN} data:; font-src ${ORIGIN}`;
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<link rel="stylesheet" href="${ORIGIN}/theme.css"><link rel="stylesheet" href="${ORIGIN}/timeline.css">
<script nonce="${nonce}">
  window.__posted = [];
  let state;
  window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m), getState: () => state, setState: (s) => { state = s; } });
</script></head>
<body class="vscode-dark"><div id="app"></div><script nonce="${nonce}" src="${ORIGIN}/timeline.js"></script></body></html>`;
}

export interface TimelinePage {
  readonly page: Page;
  readonly context: BrowserContext;
  post(message: InitMessage | DiffMessage): Promise<void>;
  close(): Promise<void>;
}

/** Opens the built webview in headless Chromium; resolves once it has said `ready`. */
export async function openTimelinePage(viewport = { width: 1400, height: 900 }): Promise<TimelinePage> {
  const bundle = join(ROOT, 'dist/webview/timeline.js');
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run npm run build first`);
  const profile = mkdtempSync(join(tmpdir(), 'locklens-timeline-bench-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath, headless: true, args: chromiumArgs, viewport });
  const close = async () => {
    await context.close().catch(() => undefined);
    rmSync(profile, { recursive: true, force: true });
  };
  try {
    const nonce = randomBytes(16).toString('base64');
    await context.route(`${ORIGIN}/**`, async (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === '/' || path === '/index.html') return route.fulfill({ contentType: 'text/html', body: pageHtml(nonce) });
      if (path === '/theme.css') return route.fulfill({ contentType: 'text/css', body: DARK_THEME });
      const file = join(ROOT, 'dist/webview', path.replace(/^\/+/, ''));
      if (!/^\/[\w.-]+$/.test(path) || !existsSync(file)) return route.fulfill({ status: 404, body: '' });
      return route.fulfill({ contentType: extname(file) === '.css' ? 'text/css' : 'text/javascript', body: readFileSync(file) });
    });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${ORIGIN}/`);
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.some((m) => m.type === 'ready'));
    const post = (message: InitMessage | DiffMessage) => page.evaluate((m) => (globalThis as unknown as PageGlobals).postMessage(m, '*'), message as unknown as Record<string, unknown>);
    return { page, context, post, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** English strings, as the host's l10n gives them without a translation. */
export const ENGLISH: TimelineStrings = {
  filterPlaceholder: 'Filter by lock name',
  window: 'Time window',
  pause: 'Pause',
  resume: 'Resume',
  paused: 'Paused: the picture is frozen at {0}',
  summary: 'Leases: {0} · locks: {1}',
  empty: 'No locks yet.',
  noMatch: 'No lock matches the filter.',
  rowsLabel: 'Holders and waiters, by lock and queue order',
  holder: 'holder',
  waiter: 'waiter',
  leader: 'leader',
  candidate: 'candidate',
  single: 'held (single key)',
  lease: 'lease {0}',
  noLease: 'no lease',
  owner: 'owner {0}',
  token: 'token {0}',
  ttl: 'TTL {0}s',
  ttlOf: 'TTL {0}s of {1}s',
  ttlUnknown: 'TTL …',
  stalled: 'stalled: not renewed',
  longHold: 'long hold',
  expired: 'lease expired',
  endedReleased: 'released',
  endedRevoked: 'revoked or expired',
  endedExpired: 'expired',
  endedForceReleased: 'force-released',
  endedOwnerLost: 'owner lost',
  endedUnknown: 'ended',
  refreshes: '{0} keepalives seen',
  firstSeen: 'first seen {0} ago',
  firstSeenInexact: 'already there when LockLens looked, ≥ {0} ago',
  waiting: 'waiting #{0}',
  reveal: 'Reveal in Locks View',
  copyLeaseId: 'Copy Lease ID',
  revoke: 'Revoke Lease…',
  forceRelease: 'Force Release…',
  selectHint: 'Select a bar to see its holder or waiter and act on it.',
  now: 'now',
  legend: 'Thick: holding · thin: waiting · ticks: keepalives · faded: TTL left · ✕: revoked or expired · |: released',
  deadlock: 'deadlock',
  deadlockLegend: 'the lock is in a confirmed deadlock',
  lockQueue: 'queue',
  lockElection: 'election',
  lockSingle: 'single key',
  lockReadWrite: 'read/write lock',
  lockSemaphore: 'semaphore',
  liveCount: '{0} live',
  seconds: '{0}s',
  minutes: '{0}m',
  minutesSeconds: '{0}m {1}s',
  hours: '{0}h',
  actions: 'Actions on the selected bar',
  pastTitle: 'Past of {0} on {1}: revisions {2} to {3}',
  pastCompacted: 'History before revision {0} was compacted: older holds are not shown.',
  pastEmpty: 'No hold in the history read.',
  pastClose: 'Close',
  pastHolding: 'holding since revision {0}',
  pastSpan: 'revision {0} → {1}',
  pastBefore: 'before {0}',
  pastWaiting: '{0} waiting',
  pastLabel: 'Holds replayed from history, oldest first',
  pastOlder: '{0} older holds not drawn',
  pastSkipped: 'Read from revision {0} on, as chosen: older holds are not shown.',
  pastSilence: 'etcd stayed silent where events could have come: this etcd cannot say when a watch has caught up, so the read ended after a quiet time.',
};

/** `leases` rows in locks of ten (a holder and nine waiters), seen over the last few minutes, renewing every TTL/3. */
export function sampleRows(leases: number, now: number): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (let i = 0; i < leases; i++) {
    const lock = Math.floor(i / 10);
    const position = i % 10;
    const lease = (0x694d7a1b2c3d0000n + BigInt(i)).toString(16);
    const firstSeenAt = now - 240_000 + lock * 97 + position * 5000;
    const observedAt = now - (i % 2000);
    const refreshes = Array.from({ length: 12 }, (_, k) => now - k * 20_000 - (i % 20) * 1000).filter((t) => t > firstSeenAt).reverse();
    rows.push({
      id: JSON.stringify(['bench', `/locks/job-${lock}`, `/locks/job-${lock}/${lease}`, lease]),
      connection: 'bench',
      lock: `/locks/job-${String(lock).padStart(4, '0')}`,
      lockName: `/locks/job-${lock}`,
      key: `/locks/job-${lock}/${lease}`,
      kind: 'queue',
      role: position === 0 ? 'holder' : 'waiter',
      position,
      lease,
      owner: '',
      token: 1000 + i,
      firstSeenAt,
      firstSeenExact: lock % 3 !== 0,
      ...(position === 0 ? { heldSince: firstSeenAt + 30_000 } : {}),
      leaseState: 'alive',
      grantedTtl: 60,
      ttl: 60 - ((i * 7) % 20),
      observedAt,
      refreshes,
      stalled: i % 97 === 0,
      longHold: false,
      deadlock: false,
    });
  }
  return rows;
}

/**
 * 2,000 leases in view; for `seconds`, 100 of them renew (the host sends them in a diff) every 250 ms, the host's
 * maximum rate, while the page draws every frame. Reports the draw time per frame (the canvas work), the frame rate
 * and long tasks (main-thread work over 50 ms: what a user feels as jank).
 */
export async function timelineWebview(leases = 2000, seconds = 10) {
  const t = await openTimelinePage();
  try {
    const { page } = t;
    const now = Date.now();
    const rows = sampleRows(leases, now);
    // The rows, handed over first (deserialising 2,000 rows is itself a long task, and not the webview's).
    await page.evaluate((r) => ((globalThis as unknown as PageGlobals).__benchRows = r), rows);
    // The init as the host sends it once: from the message to the second frame after it (the first full picture).
    const initMs = await page.evaluate(
      ({ config, strings }) =>
        new Promise<number>((done) => {
          const w = globalThis as unknown as PageGlobals;
          const t0 = performance.now();
          w.postMessage({ type: 'init', sentAt: Date.now(), rows: w.__benchRows, config, strings }, '*');
          w.requestAnimationFrame(() => w.requestAnimationFrame(() => done(performance.now() - t0)));
        }),
      { config: { longHoldMs: 300_000, readOnly: false, windowsMs: [60_000, 300_000, 900_000, 3_600_000] }, strings: ENGLISH },
    );
    await page.locator('#rows li').nth(leases - 1).waitFor({ state: 'attached' });
    await page.evaluate(() => {
      const w = (globalThis as unknown as PageGlobals);
      w.__frames = [];
      w.__longTasks = [];
      new w.PerformanceObserver((list) => list.getEntries().forEach((e) => w.__longTasks.push(e.duration))).observe({ type: 'longtask' });
      const tick = (ts: number) => {
        w.__frames.push(ts);
        w.requestAnimationFrame(tick);
      };
      w.requestAnimationFrame(tick);
    });
    await page.waitForTimeout(1000); // warm-up
    await page.evaluate(() => {
      const w = globalThis as unknown as PageGlobals;
      Object.assign(w.__timelineStats!, { frames: 0, totalMs: 0, maxMs: 0, recent: [] });
      w.__frames = [];
      w.__longTasks = [];
    });
    // Diffs as the host sends them: 100 keepalives per 250 ms, built in the page so that posting costs nothing here.
    const diffsSent = await page.evaluate(
      (seconds) =>
        new Promise<number>((done) => {
          const rows = (globalThis as unknown as PageGlobals).__benchRows;
          let sent = 0;
          const started = Date.now();
          const timer = setInterval(() => {
            const at = Date.now();
            const upserts = [];
            for (let k = 0; k < 100; k++) {
              const row = rows[(sent * 100 + k) % rows.length];
              upserts.push({ ...row, ttl: 60, observedAt: at, refreshes: [...row.refreshes.slice(-31), at] });
            }
            (globalThis as unknown as PageGlobals).postMessage({ type: 'diff', sentAt: at, upserts, ended: [], removed: [] }, '*');
            sent++;
            if (at - started >= seconds * 1000) {
              clearInterval(timer);
              done(sent);
            }
          }, 250);
        }),
      seconds,
    );
    const m = await page.evaluate(() => {
      const w = globalThis as unknown as PageGlobals;
      return { draws: w.__timelineStats!.recent, frames: w.__frames, longTasks: w.__longTasks };
    });
    const intervals = m.frames.slice(1).map((ts, i) => ts - m.frames[i]);
    const spanMs = m.frames[m.frames.length - 1] - m.frames[0];
    return {
      leases,
      init_ms: round(initMs, 1),
      diffs_per_s: round(diffsSent / seconds, 1),
      rows_per_diff: 100,
      draw_ms_p50: round(percentile(m.draws, 50)),
      draw_ms_p99: round(percentile(m.draws, 99)),
      fps: round(((m.frames.length - 1) * 1000) / spanMs, 1),
      frame_interval_ms_p99: round(percentile(intervals, 99), 1),
      long_tasks: m.longTasks.length,
    };
  } finally {
    await t.close();
  }
}

/**
 * The host's share: 2,000 leases in 200 locks reduced to rows and diffed against the last picture, as the panel does
 * at most every 250 ms. Median and worst of 20 updates after a lease sweep in which 100 leases renewed (warm).
 */
export function timelineReduce(leases = 2000, rounds = 20) {
  const model = new LockModel();
  const clock = new LockClock();
  const infos = new Map<string, LeaseInfo>();
  let now = Date.now();
  const ids: string[] = [];
  for (let i = 0; i < leases; i++) {
    const lease = (0x694d7a1b2c3d0000n + BigInt(i)).toString(16);
    ids.push(lease);
    const key = Buffer.from(`/locks/job-${Math.floor(i / 10)}/${lease}`);
    model.put({ key, valuePreview: Buffer.alloc(0), valueSize: 0, createRevision: 10 + i, modRevision: 10 + i, version: 1, lease });
  }
  clock.observe(model.takeChanges(), now);
  const sweep = (renewed: (i: number) => boolean) =>
    ids.forEach((id, i) => {
      const prev = infos.get(id);
      const ttl = !prev || renewed(i) ? 60 : Math.round(prev.ttl - (now - prev.observedAt) / 1000);
      infos.set(id, observeLease(prev, id, { ttl, grantedTtl: 60, keys: [], at: now }));
    });
  sweep(() => true);
  const reducer = new TimelineReducer({ longHoldMs: 300_000, keepEndedMs: 3_600_000 });
  const source = () => ({ connection: 'bench', hasLeases: true, locks: model.locks(), lease: (id: string) => infos.get(id), clock });
  const t0 = performance.now();
  const first = reducer.update([source()], now);
  const firstMs = performance.now() - t0;
  const times: number[] = [];
  let upserts = 0;
  for (let r = 0; r < rounds; r++) {
    now += 2000;
    sweep((i) => (i + r * 100) % leases < 100);
    const t = performance.now();
    upserts += reducer.update([source()], now).upserts.length;
    times.push(performance.now() - t);
  }
  return {
    leases,
    first_picture_ms: round(firstMs, 1),
    first_picture_kb: round(Buffer.byteLength(JSON.stringify(first)) / 1024, 0),
    update_ms_p50: round(percentile(times, 50), 1),
    update_ms_max: round(Math.max(...times), 1),
    rows_per_update: round(upserts / rounds, 0),
  };
}

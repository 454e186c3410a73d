import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-context-menu/index.js';
import '@vscode-elements/elements/dist/vscode-option/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import type { VscodeButton } from '@vscode-elements/elements/dist/vscode-button/vscode-button.js';
import type { VscodeContextMenu } from '@vscode-elements/elements/dist/vscode-context-menu/vscode-context-menu.js';
import type { VscodeSingleSelect } from '@vscode-elements/elements/dist/vscode-single-select/vscode-single-select.js';
import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';
import {
  formatString,
  isHostMessage,
  isViewState,
  type HostMessage,
  type TimelineConfig,
  type TimelineStrings,
  type TimelineViewState,
  type WebviewMessage,
} from '../../src/protocol/timeline';
import type { TimelineRow } from '../../src/shared/timelineData';
import { RowMirror } from './mirror';
import { PastSection } from './past';
import { TimelineStore, isLongHold, ttlLeft, type Layout } from './model';
import { AXIS_H, LINE_H, Renderer, endLabel, lineAt, ownerParts, roleLabel } from './render';
import { onThemeChange, readTheme, type Theme } from './theme';
import './timeline.css';

/**
 * The lease timeline webview: receives rows over the typed protocol, keeps them in a store, and draws the lines in
 * view on a canvas every animation frame (TTLs count down here, from each row's last sample: no message per tick).
 * Everything from etcd reaches the page as canvas text or `textContent`, never as HTML.
 */

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: TimelineViewState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** Per-frame draw times, for the benchmark and anyone curious (read in the webview's devtools). */
interface RenderStats {
  frames: number;
  totalMs: number;
  maxMs: number;
  recent: number[];
}
declare global {
  interface Window {
    litNonce?: string;
    __timelineStats?: RenderStats;
  }
}

// Lit adopts constructed style sheets (no inline <style>); should it ever fall back to <style>, it takes this nonce.
window.litNonce = (document.currentScript as HTMLScriptElement | null)?.nonce || undefined;

const vscode = acquireVsCodeApi();
const saved = vscode.getState();
let view: TimelineViewState = isViewState(saved) ? saved : { filter: '', windowMs: 5 * 60_000, paused: false, scrollTop: 0 };

const store = new TimelineStore();
let config: TimelineConfig | undefined;
let strings: TimelineStrings | undefined;
let theme: Theme = readTheme();
/** Host clock minus browser clock: the rows' times are the host's. */
let clockOffset = 0;
let frozenAt: number | undefined;
let layout: Layout = { lines: [], indexOf: new Map(), liveRows: 0, locks: 0, manyConnections: false };
let laidOut = { version: -1, filter: '', windowMs: 0, at: 0 };
let hover: number | undefined;
let raf = 0;
let lastDetail = 0;
const stats: RenderStats = { frames: 0, totalMs: 0, maxMs: 0, recent: [] };
window.__timelineStats = stats;

// ---- DOM: built here, with text set through textContent only.

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<Record<string, string>> = {}, ...children: Node[]) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) if (v !== undefined) e.setAttribute(k, v);
  e.append(...children);
  return e;
};

const app = document.getElementById('app')!;
const filterField = el('vscode-textfield', { id: 'filter', type: 'search' }) as VscodeTextfield;
const windowSelect = el('vscode-single-select', { id: 'window' }) as VscodeSingleSelect;
const pauseButton = el('vscode-button', { id: 'pause', secondary: '' }) as VscodeButton;
const summary = el('span', { id: 'summary', class: 'summary', 'aria-live': 'polite' });
const canvas = el('canvas', { id: 'canvas', 'aria-hidden': 'true' });
const spacer = el('div', { class: 'spacer' });
const rowList = el('ul', { id: 'rows', class: 'sr-only', role: 'none' });
const scroller = el('div', { id: 'scroller', class: 'scroller', tabindex: '0', role: 'listbox' }, canvas, spacer, rowList);
const detailTitle = el('div', { id: 'detail-title', class: 'detail-title' });
const detailInfo = el('div', { id: 'detail-info', class: 'detail-info' });
const revealButton = el('vscode-button', { id: 'reveal', secondary: '' }) as VscodeButton;
const copyButton = el('vscode-button', { id: 'copy', secondary: '' }) as VscodeButton;
const revokeButton = el('vscode-button', { id: 'revoke' }) as VscodeButton;
const actions = el('div', { class: 'detail-actions', role: 'group' }, revealButton, copyButton, revokeButton);
const detail = el('section', { id: 'detail', class: 'detail', 'aria-live': 'polite' }, el('div', { class: 'detail-text' }, detailTitle, detailInfo), actions);
const pastSection = el('section', { id: 'past', class: 'past', 'aria-live': 'polite' });
const legend = el('div', { class: 'legend' });
const menu = el('vscode-context-menu', { id: 'menu' }) as VscodeContextMenu;
app.append(el('header', { class: 'toolbar' }, filterField, windowSelect, pauseButton, summary), scroller, detail, pastSection, legend, menu);

const renderer = new Renderer(canvas);
const mirror = new RowMirror(rowList, scroller);
const past = new PastSection(pastSection, () => post({ type: 'closePast' }));

// ---- Messages.

window.addEventListener('message', (event: MessageEvent<unknown>) => {
  const message = event.data;
  if (!isHostMessage(message)) return;
  receive(message);
});

function receive(message: HostMessage): void {
  switch (message.type) {
    case 'init':
      clockOffset = message.sentAt - Date.now();
      config = message.config;
      strings = message.strings;
      store.reset(message.rows);
      applyStrings();
      if (message.filter !== undefined) setFilter(message.filter);
      frozenAt = view.paused ? hostNow(true) : undefined;
      break;
    case 'diff':
      if (view.paused || !strings) return; // paused: the picture is frozen; resuming asks for a fresh one
      // The smallest delay seen is the best estimate of the clock difference.
      clockOffset = Math.max(clockOffset, message.sentAt - Date.now());
      store.apply(message);
      break;
    case 'config':
      config = message.config;
      applyStrings();
      break;
    case 'filter':
      setFilter(message.filter);
      break;
    case 'past':
      if (strings) past.show(message, strings);
      break;
  }
  requestDraw();
}

function post(message: WebviewMessage): void {
  vscode.postMessage(message);
}

function hostNow(live = false): number {
  return !live && frozenAt !== undefined ? frozenAt : Date.now() + clockOffset;
}

// ---- Controls.

function applyStrings(): void {
  if (!strings || !config) return;
  const s = strings;
  filterField.placeholder = s.filterPlaceholder;
  filterField.setAttribute('aria-label', s.filterPlaceholder);
  if (filterField.value !== view.filter) filterField.value = view.filter;
  windowSelect.setAttribute('aria-label', s.window);
  if (!config.windowsMs.includes(view.windowMs)) view = { ...view, windowMs: config.windowsMs[Math.min(1, config.windowsMs.length - 1)] };
  windowSelect.replaceChildren(
    ...config.windowsMs.map((ms) => {
      const option = el('vscode-option', { value: String(ms) });
      option.textContent = windowLabel(ms, s);
      if (ms === view.windowMs) option.setAttribute('selected', '');
      return option;
    }),
  );
  windowSelect.value = String(view.windowMs);
  pauseButton.textContent = view.paused ? s.resume : s.pause;
  revealButton.textContent = s.reveal;
  copyButton.textContent = s.copyLeaseId;
  revokeButton.textContent = s.revoke;
  revokeButton.hidden = config.readOnly;
  actions.setAttribute('aria-label', s.actions);
  scroller.setAttribute('aria-label', s.rowsLabel);
  legend.textContent = s.legend;
  past.render(s);
  updateDetail();
}

function windowLabel(ms: number, s: TimelineStrings): string {
  const minutes = ms / 60_000;
  return minutes >= 60 ? formatString(s.hours, minutes / 60) : minutes >= 1 ? formatString(s.minutes, minutes) : formatString(s.seconds, ms / 1000);
}

function setFilter(filter: string): void {
  view = { ...view, filter, scrollTop: 0 };
  if (filterField.value !== filter) filterField.value = filter;
  scroller.scrollTop = 0;
  saveState();
  requestDraw();
}

filterField.addEventListener('input', () => setFilter(filterField.value));
windowSelect.addEventListener('change', () => {
  const ms = Number(windowSelect.value);
  if (!Number.isFinite(ms) || ms <= 0) return;
  view = { ...view, windowMs: ms };
  saveState();
  requestDraw();
});
pauseButton.addEventListener('click', () => togglePause());

function togglePause(): void {
  const paused = !view.paused;
  view = { ...view, paused };
  frozenAt = paused ? hostNow(true) : undefined;
  // Diffs were dropped while paused: ask for the current picture.
  if (!paused) post({ type: 'ready' });
  saveState();
  applyStrings();
  requestDraw();
}

function act(type: 'reveal' | 'copyLeaseId' | 'revoke', id = view.selected): void {
  const row = id ? store.get(id) : undefined;
  if (!row) return;
  if ((type === 'revoke' || type === 'copyLeaseId') && !row.lease) return;
  if (type === 'revoke' && (row.endedAt !== undefined || config?.readOnly)) return;
  post({ type, row: row.id });
}
revealButton.addEventListener('click', () => act('reveal'));
copyButton.addEventListener('click', () => act('copyLeaseId'));
revokeButton.addEventListener('click', () => act('revoke'));

menu.addEventListener('vsc-context-menu-select', (e) => {
  const value = (e as CustomEvent<{ value: string }>).detail.value;
  if (value === 'reveal' || value === 'copyLeaseId' || value === 'revoke') act(value);
  scroller.focus();
});

function openMenu(clientX: number, clientY: number): void {
  const row = view.selected ? store.get(view.selected) : undefined;
  if (!row || !strings) return;
  const s = strings;
  menu.data = [
    { label: s.reveal, value: 'reveal' },
    ...(row.lease ? [{ label: s.copyLeaseId, value: 'copyLeaseId' }] : []),
    ...(row.lease && row.endedAt === undefined && !config?.readOnly ? [{ separator: true }, { label: s.revoke, value: 'revoke' }] : []),
  ];
  menu.style.left = `${Math.min(clientX, window.innerWidth - 220)}px`;
  menu.style.top = `${Math.min(clientY, window.innerHeight - 120)}px`;
  menu.show = true;
}

// ---- Selection, pointer and keyboard.

function select(id: string | undefined, reveal = true): void {
  if (id === view.selected) return;
  view = { ...view, selected: id };
  if (id && reveal) scrollIntoView(id);
  mirror.select(id);
  saveState();
  updateDetail();
  requestDraw();
}

function scrollIntoView(id: string): void {
  const index = layout.indexOf.get(id);
  if (index === undefined) return;
  const top = index * LINE_H;
  const height = scroller.clientHeight - AXIS_H;
  if (top < scroller.scrollTop) scroller.scrollTop = top;
  else if (top + LINE_H > scroller.scrollTop + height) scroller.scrollTop = top + LINE_H - height;
}

function rowAt(clientY: number): TimelineRow | undefined {
  const rect = canvas.getBoundingClientRect();
  const line = layout.lines[lineAt(clientY - rect.top, scroller.scrollTop)];
  return line?.type === 'row' ? line.row : undefined;
}

canvas.addEventListener('click', (e) => {
  const row = rowAt(e.clientY);
  if (row) select(row.id, false);
  scroller.focus();
});
canvas.addEventListener('dblclick', (e) => {
  const row = rowAt(e.clientY);
  if (row) act('reveal', row.id);
});
canvas.addEventListener('contextmenu', (e) => {
  e.preventDefault();
  const row = rowAt(e.clientY);
  if (!row) return;
  select(row.id, false);
  openMenu(e.clientX, e.clientY);
});
canvas.addEventListener('mousemove', (e) => {
  const rect = canvas.getBoundingClientRect();
  const index = lineAt(e.clientY - rect.top, scroller.scrollTop);
  if (index !== hover) {
    hover = index;
    requestDraw();
  }
});
canvas.addEventListener('mouseleave', () => {
  hover = undefined;
  requestDraw();
});
scroller.addEventListener('scroll', () => {
  view = { ...view, scrollTop: scroller.scrollTop };
  saveStateSoon();
  requestDraw();
});
scroller.addEventListener('focus', () => requestDraw());
scroller.addEventListener('blur', () => requestDraw());
scroller.addEventListener('keydown', (e) => {
  const rows = layout.lines.flatMap((l) => (l.type === 'row' ? [l.row.id] : []));
  if (rows.length === 0) return;
  const at = view.selected ? rows.indexOf(view.selected) : -1;
  const page = Math.max(1, Math.floor((scroller.clientHeight - AXIS_H) / LINE_H) - 1);
  const move = (to: number) => {
    e.preventDefault();
    select(rows[Math.max(0, Math.min(rows.length - 1, to))]);
  };
  switch (e.key) {
    case 'ArrowDown':
      return move(at + 1);
    case 'ArrowUp':
      return move(at < 0 ? 0 : at - 1);
    case 'PageDown':
      return move(at + page);
    case 'PageUp':
      return move(at - page);
    case 'Home':
      return move(0);
    case 'End':
      return move(rows.length - 1);
    case 'Enter':
      e.preventDefault();
      return act('reveal');
    case 'ContextMenu':
    case 'F10':
      if (e.key === 'F10' && !e.shiftKey) return;
      e.preventDefault();
      if (view.selected) {
        const index = layout.indexOf.get(view.selected) ?? 0;
        const rect = canvas.getBoundingClientRect();
        openMenu(rect.left + 40, rect.top + AXIS_H + index * LINE_H - scroller.scrollTop + LINE_H);
      }
      return;
  }
});

// ---- Drawing.

new ResizeObserver(() => {
  renderer.resize(scroller.clientWidth, scroller.clientHeight);
  requestDraw();
}).observe(scroller);

onThemeChange(() => {
  theme = readTheme();
  renderer.themeChanged();
  requestDraw();
});

document.addEventListener('securitypolicyviolation', (e) => {
  // Nothing here should ever be blocked; the UI tests read this count.
  document.body.dataset.cspViolations = String(Number(document.body.dataset.cspViolations ?? 0) + 1);
  console.warn(`LockLens timeline: CSP blocked ${e.blockedURI || 'inline'} (${e.violatedDirective})`);
});

function requestDraw(): void {
  if (!raf) raf = requestAnimationFrame(frame);
}

function frame(): void {
  raf = 0;
  if (!strings || !config) return;
  const start = performance.now();
  const now = hostNow();
  relayout(now);
  renderer.draw({
    now,
    windowMs: view.windowMs,
    layout,
    scrollTop: scroller.scrollTop,
    selected: view.selected,
    hover,
    focused: document.activeElement === scroller,
    longHoldMs: config.longHoldMs,
    strings,
    theme,
    emptyText: store.size === 0 ? strings.empty : strings.noMatch,
  });
  if (start - lastDetail > 250) updateDetail();
  const ms = performance.now() - start;
  stats.frames++;
  stats.totalMs += ms;
  stats.maxMs = Math.max(stats.maxMs, ms);
  stats.recent.push(ms);
  if (stats.recent.length > 600) stats.recent.shift();
  // Time moves the bars, so keep drawing while there is something to move; a paused picture is drawn on demand.
  if (frozenAt === undefined && layout.lines.length > 0) requestDraw();
}

/** Lays the lines out again when the rows, the filter or the window changed, and each second (ended bars age out). */
function relayout(now: number): void {
  const windowStart = now - view.windowMs;
  if (laidOut.version === store.version && laidOut.filter === view.filter && laidOut.windowMs === view.windowMs && now - laidOut.at < 1000) return;
  layout = store.layout(view.filter, windowStart);
  laidOut = { version: store.version, filter: view.filter, windowMs: view.windowMs, at: now };
  spacer.style.height = `${Math.max(0, AXIS_H + layout.lines.length * LINE_H - scroller.clientHeight)}px`;
  if (view.selected && !layout.indexOf.has(view.selected)) select(undefined);
  if (strings) {
    summary.textContent = frozenAt !== undefined ? formatString(strings.paused, new Date(frozenAt - clockOffset).toLocaleTimeString()) : formatString(strings.summary, layout.liveRows, layout.locks);
    mirror.update(layout, strings);
  }
}

/** The selected bar in words, with its actions; its TTL is refreshed a few times a second. */
function updateDetail(): void {
  lastDetail = performance.now();
  const row = view.selected ? store.get(view.selected) : undefined;
  detail.classList.toggle('empty', !row);
  if (!strings) return;
  const s = strings;
  if (!row) {
    detailTitle.textContent = s.selectHint;
    detailInfo.textContent = '';
    for (const b of [revealButton, copyButton, revokeButton]) b.disabled = true;
    copyButton.hidden = false;
    revokeButton.hidden = !!config?.readOnly;
    return;
  }
  const now = hostNow();
  const role = row.position > 0 ? formatString(s.waiting, row.position) : roleLabel(row.role, s);
  setText(detailTitle, row.endedAt !== undefined ? `${role} · ${endLabel(row, s)} · ${row.lockName}` : `${role} · ${row.lockName}`);
  const left = ttlLeft(row, now);
  const parts = [
    row.key,
    ...ownerParts(row, s),
    row.endedAt !== undefined
      ? endLabel(row, s)
      : left === undefined
        ? s.ttlUnknown
        : row.grantedTtl
          ? formatString(s.ttlOf, Math.ceil(left), Math.ceil(row.grantedTtl))
          : formatString(s.ttl, Math.ceil(left)),
    ...(row.refreshes.length ? [formatString(s.refreshes, row.refreshes.length)] : []),
    formatString(row.firstSeenExact ? s.firstSeen : s.firstSeenInexact, age(now - row.firstSeenAt, s)),
    ...(row.endedAt === undefined && row.leaseState === 'expired' ? [s.expired] : []),
    ...(row.endedAt === undefined && row.stalled ? [s.stalled] : []),
    ...(config && isLongHold(row, now, config.longHoldMs) ? [s.longHold] : []),
  ];
  setText(detailInfo, parts.join(' · '));
  revealButton.disabled = false;
  // A bar without a lease (a Redis hold, an etcd key with none) has nothing to copy or revoke: the buttons go, not
  // just grey out, as the row's menu leaves those items out.
  copyButton.hidden = !row.lease;
  revokeButton.hidden = !row.lease || !!config?.readOnly;
  copyButton.disabled = !row.lease;
  revokeButton.disabled = !row.lease || row.endedAt !== undefined || !!config?.readOnly;
}

function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}

function age(ms: number, s: TimelineStrings): string {
  const secs = Math.max(0, Math.floor(ms / 1000));
  if (secs < 60) return formatString(s.seconds, secs);
  if (secs < 3600) return formatString(s.minutesSeconds, Math.floor(secs / 60), secs % 60);
  return formatString(s.hours, Math.floor(secs / 360) / 10);
}

// ---- State across hide/show.

let saveTimer: ReturnType<typeof setTimeout> | undefined;
function saveState(): void {
  clearTimeout(saveTimer);
  saveTimer = undefined;
  vscode.setState(view);
}
function saveStateSoon(): void {
  saveTimer ??= setTimeout(saveState, 200);
}

renderer.resize(scroller.clientWidth, scroller.clientHeight);
post({ type: 'ready' });
// Restore the scroll position once the first layout has made room for it.
const restoreScroll = view.scrollTop;
if (restoreScroll > 0) {
  const restore = () => {
    if (layout.lines.length) scroller.scrollTop = restoreScroll;
    else requestAnimationFrame(restore);
  };
  requestAnimationFrame(restore);
}
mirror.select(view.selected);

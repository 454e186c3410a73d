import { RowActions } from './actions';
import { Controls } from './controls';
import { DetailBar } from './detail';
import { Frames } from './frames';
import { Host } from './host';
import { listenToInput } from './input';
import { listenToHost } from './messages';
import { RowMirror } from './mirror';
import { buildPage } from './page';
import { PastSection } from './past';
import { Selection } from './selection';
import { TimelineState } from './state';
import { onThemeChange } from './theme';
import './timeline.css';

/**
 * The lock timeline webview: receives rows over the typed protocol, keeps them in a store, and draws the lines in
 * view on a canvas every animation frame (TTLs count down here, from each row's last sample: no message per tick).
 * Everything from etcd reaches the page as canvas text or `textContent`, never as HTML. This entry builds the parts
 * and wires them to each other.
 */

declare global {
  interface Window {
    litNonce?: string;
  }
}

// Lit adopts constructed style sheets (no inline <style>); should it ever fall back to <style>, it takes this nonce.
window.litNonce = (document.currentScript as HTMLScriptElement | null)?.nonce || undefined;

const host = new Host(() => state.view);
const state = new TimelineState(host.savedView());
const page = buildPage(document.getElementById('app')!);
const mirror = new RowMirror(page.rowList, page.scroller);
const past = new PastSection(page.pastSection, () => host.post({ type: 'closePast' }));
const requestDraw = () => frames.request();
const detail = new DetailBar(state, page);
const controls = new Controls(state, page, host, past, detail, requestDraw);
const actions = new RowActions(state, page, host);
const selection = new Selection(state, page.scroller, mirror, host, detail, requestDraw);
const frames = new Frames(state, page, mirror, detail, selection);
listenToHost(state, controls, past, requestDraw);
listenToInput(state, page, selection, actions, host, requestDraw, () => frames.layoutNow());

new ResizeObserver(() => {
  frames.resize();
  requestDraw();
}).observe(page.scroller);

onThemeChange(() => {
  frames.themeChanged();
  requestDraw();
});

document.addEventListener('securitypolicyviolation', (e) => {
  // Nothing here should ever be blocked; the UI tests read this count.
  document.body.dataset.cspViolations = String(Number(document.body.dataset.cspViolations ?? 0) + 1);
  console.warn(`LockLens timeline: CSP blocked ${e.blockedURI || 'inline'} (${e.violatedDirective})`);
});

frames.resize();
host.post({ type: 'ready' });
// Restore the scroll position once the first layout has made room for it.
const restoreScroll = state.view.scrollTop;
if (restoreScroll > 0) {
  const restore = () => {
    if (state.layout.lines.length) page.scroller.scrollTop = restoreScroll;
    else requestAnimationFrame(restore);
  };
  requestAnimationFrame(restore);
}
mirror.select(state.view.selected);

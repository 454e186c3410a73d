import { formatString } from '../../src/protocol/timeline';
import type { DetailBar } from './detail';
import type { RowMirror } from './mirror';
import type { Page } from './page';
import { AXIS_H, LINE_H, Renderer } from './render';
import type { Selection } from './selection';
import type { TimelineState } from './state';
import { readTheme, type Theme } from './theme';

/** Per-frame draw times, for the benchmark and anyone curious (read in the webview's devtools). */
interface RenderStats {
  frames: number;
  totalMs: number;
  maxMs: number;
  recent: number[];
}
declare global {
  interface Window {
    __timelineStats?: RenderStats;
  }
}

/**
 * The drawing loop: lays the lines out when they changed and draws them on the canvas, every animation frame while
 * the bars move (TTLs count down here, from each row's last sample: no message per tick).
 */
export class Frames {
  private readonly renderer: Renderer;
  private theme: Theme = readTheme();
  private laidOut = { version: -1, filter: '', windowMs: 0, at: 0 };
  private raf = 0;
  private readonly stats: RenderStats = { frames: 0, totalMs: 0, maxMs: 0, recent: [] };

  constructor(
    private readonly state: TimelineState,
    private readonly page: Page,
    private readonly mirror: RowMirror,
    private readonly detail: DetailBar,
    private readonly selection: Selection,
  ) {
    this.renderer = new Renderer(page.canvas);
    window.__timelineStats = this.stats;
  }

  request(): void {
    if (!this.raf) this.raf = requestAnimationFrame(() => this.frame());
  }

  /**
   * Lays the lines out now if the rows or the filter changed since the last frame: a key pressed right after typing in
   * the filter moves through the rows it leaves, not through the ones drawn before it.
   */
  layoutNow(): void {
    this.relayout(this.state.hostNow());
  }

  /** The scroller's size changed (and once at start). */
  resize(): void {
    this.renderer.resize(this.page.scroller.clientWidth, this.page.scroller.clientHeight);
  }

  themeChanged(): void {
    this.theme = readTheme();
    this.renderer.themeChanged();
  }

  private frame(): void {
    const { state, stats } = this;
    this.raf = 0;
    if (!state.strings || !state.config) return;
    const start = performance.now();
    const now = state.hostNow();
    this.relayout(now);
    this.renderer.draw({
      now,
      windowMs: state.view.windowMs,
      layout: state.layout,
      scrollTop: this.page.scroller.scrollTop,
      selected: state.view.selected,
      hover: state.hover,
      focused: document.activeElement === this.page.scroller,
      longHoldMs: state.config.longHoldMs,
      strings: state.strings,
      theme: this.theme,
      emptyText: state.store.size === 0 ? state.strings.empty : state.strings.noMatch,
    });
    if (start - this.detail.lastUpdate > 250) this.detail.update();
    const ms = performance.now() - start;
    stats.frames++;
    stats.totalMs += ms;
    stats.maxMs = Math.max(stats.maxMs, ms);
    stats.recent.push(ms);
    if (stats.recent.length > 600) stats.recent.shift();
    // Time moves the bars, so keep drawing while there is something to move; a paused picture is drawn on demand.
    if (state.frozenAt === undefined && state.layout.lines.length > 0) this.request();
  }

  /** Lays the lines out again when the rows, the filter or the window changed, and each second (ended bars age out). */
  private relayout(now: number): void {
    const { state, page, laidOut } = this;
    const { view, store } = state;
    const windowStart = now - view.windowMs;
    if (laidOut.version === store.version && laidOut.filter === view.filter && laidOut.windowMs === view.windowMs && now - laidOut.at < 1000) return;
    const layout = store.layout(view.filter, windowStart);
    state.layout = layout;
    this.laidOut = { version: store.version, filter: view.filter, windowMs: view.windowMs, at: now };
    page.spacer.style.height = `${Math.max(0, AXIS_H + layout.lines.length * LINE_H - page.scroller.clientHeight)}px`;
    if (view.selected && !layout.indexOf.has(view.selected)) this.selection.select(undefined);
    if (state.strings) {
      page.summary.textContent =
        state.frozenAt !== undefined
          ? formatString(state.strings.paused, new Date(state.frozenAt - state.clockOffset).toLocaleTimeString())
          : formatString(state.strings.summary, layout.liveRows, layout.locks);
      this.mirror.update(layout, state.strings);
    }
  }
}

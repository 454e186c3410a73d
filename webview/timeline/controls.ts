import { formatString, type TimelineStrings } from '../../src/protocol/timeline';
import type { DetailBar } from './detail';
import type { Host } from './host';
import type { PastSection } from './past';
import { el, type Page } from './page';
import type { TimelineState } from './state';

/** The toolbar (filter, time window, pause) and the host's words on every control. */
export class Controls {
  constructor(
    private readonly state: TimelineState,
    private readonly page: Page,
    private readonly host: Host,
    private readonly past: PastSection,
    private readonly detail: DetailBar,
    private readonly requestDraw: () => void,
  ) {
    const { filterField, windowSelect, pauseButton } = page;
    filterField.addEventListener('input', () => this.setFilter(filterField.value));
    windowSelect.addEventListener('change', () => {
      const ms = Number(windowSelect.value);
      if (!Number.isFinite(ms) || ms <= 0) return;
      state.view = { ...state.view, windowMs: ms };
      host.saveState();
      requestDraw();
    });
    pauseButton.addEventListener('click', () => this.togglePause());
  }

  applyStrings(): void {
    const { state, page } = this;
    const { strings, config } = state;
    if (!strings || !config) return;
    const s = strings;
    const { filterField, windowSelect } = page;
    filterField.placeholder = s.filterPlaceholder;
    filterField.setAttribute('aria-label', s.filterPlaceholder);
    if (filterField.value !== state.view.filter) filterField.value = state.view.filter;
    windowSelect.setAttribute('aria-label', s.window);
    if (!config.windowsMs.includes(state.view.windowMs)) state.view = { ...state.view, windowMs: config.windowsMs[Math.min(1, config.windowsMs.length - 1)] };
    windowSelect.replaceChildren(
      ...config.windowsMs.map((ms) => {
        const option = el('vscode-option', { value: String(ms) });
        option.textContent = windowLabel(ms, s);
        if (ms === state.view.windowMs) option.setAttribute('selected', '');
        return option;
      }),
    );
    windowSelect.value = String(state.view.windowMs);
    page.pauseButton.textContent = state.view.paused ? s.resume : s.pause;
    page.revealButton.textContent = s.reveal;
    page.copyButton.textContent = s.copyLeaseId;
    page.revokeButton.textContent = s.revoke;
    page.forceReleaseButton.textContent = s.forceRelease;
    page.actions.setAttribute('aria-label', s.actions);
    page.scroller.setAttribute('aria-label', s.rowsLabel);
    const tag = document.createElement('span');
    tag.className = 'deadlock';
    tag.textContent = s.deadlock;
    page.legend.replaceChildren(`${s.legend} · `, tag, `: ${s.deadlockLegend}`);
    this.past.render(s);
    this.detail.update();
  }

  setFilter(filter: string): void {
    const { state, page } = this;
    state.view = { ...state.view, filter, scrollTop: 0 };
    if (page.filterField.value !== filter) page.filterField.value = filter;
    page.scroller.scrollTop = 0;
    this.host.saveState();
    this.requestDraw();
  }

  private togglePause(): void {
    const state = this.state;
    const paused = !state.view.paused;
    state.view = { ...state.view, paused };
    state.frozenAt = paused ? state.hostNow(true) : undefined;
    // Diffs were dropped while paused: ask for the current picture.
    if (!paused) this.host.post({ type: 'ready' });
    this.host.saveState();
    this.applyStrings();
    this.requestDraw();
  }
}

function windowLabel(ms: number, s: TimelineStrings): string {
  const minutes = ms / 60_000;
  return minutes >= 60 ? formatString(s.hours, minutes / 60) : minutes >= 1 ? formatString(s.minutes, minutes) : formatString(s.seconds, ms / 1000);
}

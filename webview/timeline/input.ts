import type { TimelineRow } from '../../src/shared/timelineData';
import type { RowActions } from './actions';
import type { Host } from './host';
import type { Page } from './page';
import { AXIS_H, LINE_H, lineAt } from './render';
import type { Selection } from './selection';
import type { TimelineState } from './state';

/** The pointer on the canvas and the keys on the scroller: selection, hover, scrolling, the actions and the menu. */
export function listenToInput(
  state: TimelineState,
  { canvas, scroller }: Page,
  selection: Selection,
  actions: RowActions,
  host: Host,
  requestDraw: () => void,
  layoutNow: () => void,
): void {
  function rowAt(clientY: number): TimelineRow | undefined {
    const rect = canvas.getBoundingClientRect();
    const line = state.layout.lines[lineAt(clientY - rect.top, scroller.scrollTop)];
    return line?.type === 'row' ? line.row : undefined;
  }

  canvas.addEventListener('click', (e) => {
    const row = rowAt(e.clientY);
    if (row) selection.select(row.id, false);
    scroller.focus();
  });
  canvas.addEventListener('dblclick', (e) => {
    const row = rowAt(e.clientY);
    if (row) actions.act('reveal', row.id);
  });
  canvas.addEventListener('contextmenu', (e) => {
    e.preventDefault();
    const row = rowAt(e.clientY);
    if (!row) return;
    selection.select(row.id, false);
    actions.openMenu(e.clientX, e.clientY);
  });
  canvas.addEventListener('mousemove', (e) => {
    const rect = canvas.getBoundingClientRect();
    const index = lineAt(e.clientY - rect.top, scroller.scrollTop);
    if (index !== state.hover) {
      state.hover = index;
      requestDraw();
    }
  });
  canvas.addEventListener('mouseleave', () => {
    state.hover = undefined;
    requestDraw();
  });
  scroller.addEventListener('scroll', () => {
    state.view = { ...state.view, scrollTop: scroller.scrollTop };
    host.saveStateSoon();
    requestDraw();
  });
  scroller.addEventListener('focus', () => requestDraw());
  scroller.addEventListener('blur', () => requestDraw());
  scroller.addEventListener('keydown', (e) => {
    layoutNow();
    const { layout, view } = state;
    const rows = layout.lines.flatMap((l) => (l.type === 'row' ? [l.row.id] : []));
    if (rows.length === 0) return;
    const at = view.selected ? rows.indexOf(view.selected) : -1;
    const page = Math.max(1, Math.floor((scroller.clientHeight - AXIS_H) / LINE_H) - 1);
    const move = (to: number) => {
      e.preventDefault();
      selection.select(rows[Math.max(0, Math.min(rows.length - 1, to))]);
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
        return actions.act('reveal');
      case 'ContextMenu':
      case 'F10':
        if (e.key === 'F10' && !e.shiftKey) return;
        e.preventDefault();
        if (view.selected) {
          const index = layout.indexOf.get(view.selected) ?? 0;
          const rect = canvas.getBoundingClientRect();
          actions.openMenu(rect.left + 40, rect.top + AXIS_H + index * LINE_H - scroller.scrollTop + LINE_H);
        }
        return;
    }
  });
}

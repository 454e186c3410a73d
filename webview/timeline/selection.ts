import type { DetailBar } from './detail';
import type { Host } from './host';
import type { RowMirror } from './mirror';
import { AXIS_H, LINE_H } from './render';
import type { TimelineState } from './state';

/** The selected bar: kept in the view state, scrolled into view, and told to the row list, the detail strip and the canvas. */
export class Selection {
  constructor(
    private readonly state: TimelineState,
    private readonly scroller: HTMLElement,
    private readonly mirror: RowMirror,
    private readonly host: Host,
    private readonly detail: DetailBar,
    private readonly requestDraw: () => void,
  ) {}

  select(id: string | undefined, reveal = true): void {
    const state = this.state;
    if (id === state.view.selected) return;
    state.view = { ...state.view, selected: id };
    if (id && reveal) this.scrollIntoView(id);
    this.mirror.select(id);
    this.host.saveState();
    this.detail.update();
    this.requestDraw();
  }

  private scrollIntoView(id: string): void {
    const scroller = this.scroller;
    const index = this.state.layout.indexOf.get(id);
    if (index === undefined) return;
    const top = index * LINE_H;
    const height = scroller.clientHeight - AXIS_H;
    if (top < scroller.scrollTop) scroller.scrollTop = top;
    else if (top + LINE_H > scroller.scrollTop + height) scroller.scrollTop = top + LINE_H - height;
  }
}

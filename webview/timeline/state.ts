import type { TimelineConfig, TimelineStrings, TimelineViewState } from '../../src/protocol/timeline';
import { TimelineStore, type Layout } from './model';

/** What the page's parts share: the rows, the host's settings and words, the user's view and what is laid out. */
export class TimelineState {
  readonly store = new TimelineStore();
  config: TimelineConfig | undefined;
  strings: TimelineStrings | undefined;
  /** Host clock minus browser clock: the rows' times are the host's. */
  clockOffset = 0;
  /** Paused: the host time the picture stands at. */
  frozenAt: number | undefined;
  layout: Layout = { lines: [], indexOf: new Map(), liveRows: 0, locks: 0, manyConnections: false };
  hover: number | undefined;

  constructor(public view: TimelineViewState) {}

  hostNow(live = false): number {
    return !live && this.frozenAt !== undefined ? this.frozenAt : Date.now() + this.clockOffset;
  }
}

import type { TimelineStrings } from '../../src/protocol/timeline';
import type { TimelineRow } from '../../src/shared/timelineData';
import type { Layout } from './model';
import { endLabel } from './endMarks';
import { ownerParts, roleLabel } from './render';

/**
 * The bars in words, for screen readers (the canvas is aria-hidden): a visually hidden list of options owned by the
 * focusable scroller, whose `aria-activedescendant` follows the selection. Each item also carries its role, lease and
 * state as data attributes, which is what the UI tests read. Updated when the rows change, at most a few times a
 * second, and only the items that changed; text is set with `textContent`.
 */
export class RowMirror {
  private readonly items = new Map<string, HTMLLIElement>();
  /** The row object each item last described: rows are immutable, so the same object needs no new words. */
  private readonly described = new Map<string, TimelineRow>();
  private strings?: TimelineStrings;
  private readonly domIds = new Map<string, string>();
  private nextId = 0;
  private order = '';
  private pending?: { layout: Layout; strings: TimelineStrings };
  private timer?: ReturnType<typeof setTimeout>;
  private selected?: string;

  constructor(
    private readonly list: HTMLUListElement,
    private readonly owner: HTMLElement,
  ) {}

  update(layout: Layout, strings: TimelineStrings): void {
    const first = this.pending === undefined && this.timer === undefined && this.order === '';
    this.pending = { layout, strings };
    if (first) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), 250);
  }

  select(id: string | undefined): void {
    this.selected = id;
    for (const [rowId, li] of this.items) li.setAttribute('aria-selected', String(rowId === id));
    const domId = id && this.items.has(id) ? this.domIds.get(id) : undefined;
    if (domId) this.owner.setAttribute('aria-activedescendant', domId);
    else this.owner.removeAttribute('aria-activedescendant');
  }

  private flush(): void {
    this.timer = undefined;
    const p = this.pending;
    this.pending = undefined;
    if (!p) return;
    const rows = p.layout.lines.flatMap((l) => (l.type === 'row' ? [l.row] : []));
    if (p.strings !== this.strings) this.described.clear();
    this.strings = p.strings;
    const seen = new Set<string>();
    for (const row of rows) {
      seen.add(row.id);
      let li = this.items.get(row.id);
      if (!li) {
        li = document.createElement('li');
        li.setAttribute('role', 'option');
        const domId = `row-${this.nextId++}`;
        li.id = domId;
        this.domIds.set(row.id, domId);
        this.items.set(row.id, li);
      }
      if (this.described.get(row.id) !== row) {
        describe(li, row, p.strings);
        this.described.set(row.id, row);
      }
    }
    for (const [id, li] of this.items) {
      if (seen.has(id)) continue;
      li.remove();
      this.items.delete(id);
      this.described.delete(id);
      this.domIds.delete(id);
    }
    const order = rows.map((r) => this.domIds.get(r.id)).join(' ');
    if (order !== this.order) {
      this.list.replaceChildren(...rows.map((r) => this.items.get(r.id)!));
      this.order = order;
    }
    this.select(this.selected);
  }
}

function describe(li: HTMLLIElement, row: TimelineRow, s: TimelineStrings): void {
  const state =
    row.endedAt !== undefined ? `ended-${row.end ?? 'unknown'}` : row.leaseState === 'expired' ? 'expired' : row.stalled ? 'stalled' : row.longHold ? 'long-hold' : 'alive';
  const role = row.position > 0 ? `${roleLabel(row.role, s)} #${row.position}` : roleLabel(row.role, s);
  const status = row.endedAt !== undefined ? endLabel(row, s) : row.leaseState === 'expired' ? s.expired : row.stalled ? s.stalled : row.longHold ? s.longHold : '';
  const text = [role, row.lockName, row.key, ...ownerParts(row, s), status]
    .filter((x) => x)
    .join(' · ');
  set(li, 'role', row.role);
  set(li, 'position', String(row.position));
  set(li, 'lease', row.lease);
  set(li, 'state', state);
  set(li, 'connection', row.connection);
  if (li.textContent !== text) li.textContent = text;
}

function set(li: HTMLLIElement, name: string, value: string): void {
  if (li.dataset[name] !== value) li.dataset[name] = value;
}

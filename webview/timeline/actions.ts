import type { Host } from './host';
import type { Page } from './page';
import type { TimelineState } from './state';

type Action = 'reveal' | 'copyLeaseId' | 'revoke';

/** What can be done to a bar, from the detail strip's buttons or the row's context menu: asked of the host. */
export class RowActions {
  constructor(
    private readonly state: TimelineState,
    private readonly page: Page,
    private readonly host: Host,
  ) {
    page.revealButton.addEventListener('click', () => this.act('reveal'));
    page.copyButton.addEventListener('click', () => this.act('copyLeaseId'));
    page.revokeButton.addEventListener('click', () => this.act('revoke'));
    page.menu.addEventListener('vsc-context-menu-select', (e) => {
      const value = (e as CustomEvent<{ value: string }>).detail.value;
      if (value === 'reveal' || value === 'copyLeaseId' || value === 'revoke') this.act(value);
      page.scroller.focus();
    });
  }

  act(type: Action, id = this.state.view.selected): void {
    const { store, config } = this.state;
    const row = id ? store.get(id) : undefined;
    if (!row) return;
    if ((type === 'revoke' || type === 'copyLeaseId') && !row.lease) return;
    if (type === 'revoke' && (row.endedAt !== undefined || config?.readOnly)) return;
    this.host.post({ type, row: row.id });
  }

  openMenu(clientX: number, clientY: number): void {
    const { view, store, strings, config } = this.state;
    const menu = this.page.menu;
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
}

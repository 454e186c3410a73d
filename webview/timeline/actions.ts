import type { RowAction } from '../../src/protocol/timeline';
import type { TimelineRow } from '../../src/shared/timelineData';
import type { Host } from './host';
import type { Page } from './page';
import type { TimelineState } from './state';

/**
 * The actions a bar offers, named for what ends its member: a lease (etcd) is copied or revoked, which frees every key
 * it holds; a holder without one (a Redis token, a ZooKeeper node, a database session) is force-released, the store's
 * safe way. `shown`: its button is there; `enabled`: it can act now (a live bar, and a holder for a force release).
 */
export function offered(row: TimelineRow, readOnly: boolean): Record<Exclude<RowAction, 'reveal'>, { shown: boolean; enabled: boolean }> {
  const live = row.endedAt === undefined;
  return {
    copyLeaseId: { shown: !!row.lease, enabled: !!row.lease },
    revoke: { shown: !!row.lease && !readOnly, enabled: !!row.lease && live && !readOnly },
    forceRelease: { shown: !row.lease && !readOnly, enabled: !row.lease && live && row.position === 0 && !readOnly },
  };
}

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
    page.forceReleaseButton.addEventListener('click', () => this.act('forceRelease'));
    page.menu.addEventListener('vsc-context-menu-select', (e) => {
      const value = (e as CustomEvent<{ value: string }>).detail.value;
      if (value === 'reveal' || value === 'copyLeaseId' || value === 'revoke' || value === 'forceRelease') this.act(value);
      page.scroller.focus();
    });
  }

  act(type: RowAction, id = this.state.view.selected): void {
    const { store, config } = this.state;
    const row = id ? store.get(id) : undefined;
    if (!row) return;
    if (type !== 'reveal' && !offered(row, !!config?.readOnly)[type].enabled) return;
    this.host.post({ type, row: row.id });
  }

  openMenu(clientX: number, clientY: number): void {
    const { view, store, strings, config } = this.state;
    const menu = this.page.menu;
    const row = view.selected ? store.get(view.selected) : undefined;
    if (!row || !strings) return;
    const s = strings;
    const can = offered(row, !!config?.readOnly);
    menu.data = [
      { label: s.reveal, value: 'reveal' },
      ...(can.copyLeaseId.enabled ? [{ label: s.copyLeaseId, value: 'copyLeaseId' }] : []),
      ...(can.revoke.enabled ? [{ separator: true }, { label: s.revoke, value: 'revoke' }] : []),
      ...(can.forceRelease.enabled ? [{ separator: true }, { label: s.forceRelease, value: 'forceRelease' }] : []),
    ];
    menu.style.left = `${Math.min(clientX, window.innerWidth - 220)}px`;
    menu.style.top = `${Math.min(clientY, window.innerHeight - 120)}px`;
    menu.show = true;
  }
}

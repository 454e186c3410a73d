import { formatString, type TimelineStrings } from '../../src/protocol/timeline';
import { offered } from './actions';
import { isLongHold, ttlLeft } from './model';
import type { Page } from './page';
import { endLabel } from './endMarks';
import { ownerParts, roleLabel } from './render';
import type { TimelineState } from './state';

/** The selected bar in words, with its actions; its TTL is refreshed a few times a second. */
export class DetailBar {
  /** When `update` last ran (performance.now()). */
  lastUpdate = 0;

  constructor(
    private readonly state: TimelineState,
    private readonly page: Page,
  ) {}

  update(): void {
    const { state, page } = this;
    const { detail, detailTitle, detailInfo, revealButton, copyButton, revokeButton, forceReleaseButton } = page;
    const config = state.config;
    this.lastUpdate = performance.now();
    const row = state.view.selected ? state.store.get(state.view.selected) : undefined;
    detail.classList.toggle('empty', !row);
    if (!state.strings) return;
    const s = state.strings;
    if (!row) {
      detailTitle.textContent = s.selectHint;
      detailInfo.textContent = '';
      // Which actions a bar has depends on its store (offered): none is named before one is selected.
      revealButton.disabled = true;
      for (const b of [copyButton, revokeButton, forceReleaseButton]) b.hidden = true;
      return;
    }
    const now = state.hostNow();
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
    // A bar without a lease (a Redis hold, an etcd key with none) has nothing to copy or revoke: those buttons go, not
    // just grey out, as the row's menu leaves those items out, and Force Release… stands in their place.
    const can = offered(row, !!config?.readOnly);
    for (const [button, action] of [
      [copyButton, can.copyLeaseId],
      [revokeButton, can.revoke],
      [forceReleaseButton, can.forceRelease],
    ] as const) {
      button.hidden = !action.shown;
      button.disabled = !action.enabled;
    }
  }
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

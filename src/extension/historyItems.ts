import * as vscode from 'vscode';
import type { HoldEnd, LockHistory, ReplayedHold } from '../core/history';
import type { ObservedHold } from '../core/holdObservation';
import { displayKey } from '../core/keys';
import { ENDS_COUNTED_OVER, holdBound, type LockFigures, type Spread } from '../core/lockFigures';
import type { Capabilities } from '../core/backend';
import type { Inversion, OrderEvidence } from '../core/diagnosis/inversions';
import type { LockFindings } from './diagnosis';
import { appendUntrusted, cycleText, formatSpan, ownerLabel, tooltip, ttlFitText } from './format';
import { escapeOwn } from './tree/labels';

/** The Lock History view's items (historyView.ts, recordedHistoryView.ts): what LockLens saw of a lock, its replayed past, and what serve recorded. */

/** Replayed holds listed, the newest: a long history would make every redraw build thousands of rows. */
const MAX_PAST_ITEMS = 200;

export function textItem(label: string, description?: string, icon?: string): vscode.TreeItem {
  const item = new vscode.TreeItem(label);
  item.description = description;
  if (icon) item.iconPath = new vscode.ThemeIcon(icon);
  return item;
}

function spreadText(s: Spread): string {
  return vscode.l10n.t('p50 {0} · p95 {1} · max {2} ({3} seen)', formatSpan(s.p50), formatSpan(s.p95), formatSpan(s.max), s.count);
}

export function figureItems(f: LockFigures | undefined): vscode.TreeItem[] {
  if (!f) return [textItem(vscode.l10n.t('Nothing recorded yet: LockLens records holds and waits while it watches.'), undefined, 'info')];
  const items = [
    textItem(vscode.l10n.t('Holds seen'), vscode.l10n.t('{0} since {1}', f.holds, new Date(f.since).toLocaleString())),
    textItem(vscode.l10n.t('Hold time'), f.hold ? spreadText(f.hold) : vscode.l10n.t('no hold seen from start to end yet')),
    textItem(vscode.l10n.t('Wait time'), f.wait ? spreadText(f.wait) : vscode.l10n.t('no wait seen from start to end yet')),
    textItem(vscode.l10n.t('Handoffs'), vscode.l10n.t('{0} per minute · {1} holder changes', f.handoffsPerMinute.toFixed(1), f.transitions)),
  ];
  if (f.longestHold) items.push(textItem(vscode.l10n.t('Longest hold'), vscode.l10n.t('{0} by {1}', formatSpan(f.longestHold.ms), f.longestHold.who)));
  if (f.longestWait) items.push(textItem(vscode.l10n.t('Longest wait'), vscode.l10n.t('{0} by {1}', formatSpan(f.longestWait.ms), f.longestWait.who)));
  items.push(textItem(vscode.l10n.t('Stalls'), vscode.l10n.t('{0} (TTL not renewed)', f.stalls), f.stalls ? 'warning' : undefined));
  if (f.ends.length) {
    const ends = f.ends.map((e) => `${endText(e.end === 'unknown' ? null : e.end)} ${e.count}`).join(' · ');
    items.push(textItem(vscode.l10n.t('Ends'), vscode.l10n.t('{0} (of the last {1} holds)', ends, ENDS_COUNTED_OVER)));
  }
  return items;
}

/** How a hold ended, in words, whether seen live, replayed, or recorded by locklens serve. */
export function endText(end: HoldEnd | null): string {
  switch (end) {
    case 'released':
      return vscode.l10n.t('released');
    case 'revokedOrExpired':
      return vscode.l10n.t('revoked or expired');
    case 'expired':
      return vscode.l10n.t('expired');
    case 'forceReleased':
      return vscode.l10n.t('force-released');
    case 'ownerLost':
      return vscode.l10n.t('owner lost (session or connection ended)');
    default:
      return vscode.l10n.t('ended');
  }
}

export const END_ICONS: Record<HoldEnd, string> = { released: 'unlock', revokedOrExpired: 'close', expired: 'flame', forceReleased: 'debug-disconnect', ownerLost: 'plug' };

export function liveItems(holds: readonly ObservedHold[]): vscode.TreeItem[] {
  if (holds.length === 0) return [textItem(vscode.l10n.t('No hold seen yet.'), undefined, 'info')];
  const now = Date.now();
  return [...holds].reverse().map((h) => {
    const bound = holdBound(h);
    const held = bound === null ? '?' : formatSpan((h.endedAt ?? now) - h.acquiredAt);
    const parts = [h.endedAt === null ? vscode.l10n.t('holding for {0}{1}', bound ?? '', held) : vscode.l10n.t('held {0}{1}', bound ?? '', held)];
    if (h.endedAt !== null) parts.push(endText(h.end));
    if (h.token !== null) parts.push(vscode.l10n.t('token {0}', h.token));
    if (h.waitedMs !== null) parts.push(vscode.l10n.t('waited {0}', formatSpan(h.waitedMs)));
    const item = textItem(h.owner || h.key, parts.join(' · '), h.endedAt === null ? 'lock' : h.end ? END_ICONS[h.end] : 'circle-outline');
    const md = tooltip();
    appendUntrusted(md.appendMarkdown(`${vscode.l10n.t('Key')}: `), h.key);
    appendUntrusted(md.appendMarkdown(`\n\n${vscode.l10n.t('Owner')}: `), h.owner || vscode.l10n.t('none'));
    md.appendMarkdown(`\n\n${vscode.l10n.t('Acquired')}: ${new Date(h.acquiredAt).toLocaleString()}${h.acquiredExact ? '' : ` (${vscode.l10n.t('already held when LockLens looked')})`}`);
    if (h.acquiredRevision !== null) md.appendMarkdown(` · ${vscode.l10n.t('revision {0}', h.acquiredRevision)}`);
    if (h.endedAt !== null) md.appendMarkdown(`\n\n${vscode.l10n.t('Ended')}: ${new Date(h.endedAt).toLocaleString()}${h.endedExact ? '' : ` (${vscode.l10n.t('found gone when LockLens looked again')})`} · ${endText(h.end)}`);
    if (h.endedRevision !== null) md.appendMarkdown(` · ${vscode.l10n.t('revision {0}', h.endedRevision)}`);
    item.tooltip = md;
    return item;
  });
}

export function pastItems(history: LockHistory | undefined, t: { readonly connection: { readonly name: string }; readonly lockId: string }, timeOf: (revision: number) => number | undefined): vscode.TreeItem[] {
  if (!history) {
    const item = textItem(vscode.l10n.t("Replay the store's history…"), vscode.l10n.t('every hold back to the last compaction'), 'play');
    item.command = { command: 'locklens.replayHistory', title: vscode.l10n.t('Replay History'), arguments: [{ connection: t.connection.name, lockId: t.lockId }] };
    return [item];
  }
  const items = [
    textItem(
      vscode.l10n.t('Revisions {0} to {1}', history.fromRevision, history.toRevision),
      vscode.l10n.t('{0} holds · {1} events read', history.holds.length, history.events),
      'info',
    ),
  ];
  if (history.compactedAt !== null) {
    items.push(textItem(vscode.l10n.t('History before revision {0} was compacted: older holds are not shown.', history.compactedAt), undefined, 'warning'));
  }
  if (history.skippedBefore !== null) {
    items.push(textItem(vscode.l10n.t('Read from revision {0} on, as chosen: older holds are not shown.', history.skippedBefore), undefined, 'info'));
  }
  if (history.endedOnSilence) {
    items.push(textItem(vscode.l10n.t('etcd stayed silent where events could have come: this etcd cannot say when a watch has caught up, so the read ended after a quiet time.'), undefined, 'warning'));
  }
  const at = (revision: number) => {
    const time = timeOf(revision);
    return time === undefined ? vscode.l10n.t('revision {0}', revision) : vscode.l10n.t('revision {0} ({1})', revision, new Date(time).toLocaleTimeString());
  };
  const shown = history.holds.slice(-MAX_PAST_ITEMS).reverse();
  for (const h of shown) items.push(replayedItem(h, at));
  const older = history.holds.length - shown.length;
  if (older > 0) items.push(textItem(vscode.l10n.t('{0} older holds not listed here (locklens history NAME lists every one)', older), undefined, 'ellipsis'));
  return items;
}

function replayedItem(h: ReplayedHold, at: (revision: number) => string): vscode.TreeItem {
  const from = h.beforeHistory ? vscode.l10n.t('before {0}', at(h.acquiredRevision)) : at(h.acquiredRevision);
  const parts = [h.endedRevision === null ? vscode.l10n.t('holding since {0}', from) : vscode.l10n.t('{0} → {1}', from, at(h.endedRevision))];
  if (h.endedRevision !== null) parts.push(endText(h.end));
  if (h.token !== null) parts.push(vscode.l10n.t('token {0}', h.token));
  if (h.waiterCount) parts.push(vscode.l10n.t('{0} waiting', h.waiterCount));
  const item = textItem(displayKey(h.key), parts.join(' · '), h.endedRevision === null ? 'lock' : h.end ? END_ICONS[h.end] : 'circle-outline');
  const md = tooltip();
  appendUntrusted(md.appendMarkdown(`${vscode.l10n.t('Key')}: `), h.key);
  md.appendMarkdown(`\n\n${vscode.l10n.t('Lease')}: ${h.lease || vscode.l10n.t('none')}`);
  for (const w of h.waiters) appendUntrusted(md.appendMarkdown(`\n\n- ${vscode.l10n.t('waiting')}: `), w);
  item.tooltip = md;
  return item;
}

/** What the connection's diagnosis says of the lock: its deadlocks, the lock-order inversions it is in (with both sightings), its TTL fit. */
export function diagnosisItems(findings: LockFindings, inversions: readonly Inversion[], owner: Capabilities['owner']): vscode.TreeItem[] {
  const items: vscode.TreeItem[] = [];
  for (const cycle of findings.deadlocks) items.push(withTooltip(textItem(vscode.l10n.t('Deadlock'), cycleText(cycle, owner), 'error')));
  for (const i of inversions) {
    const item = textItem(vscode.l10n.t('Lock-order inversion'), vscode.l10n.t('{0} and {1} taken in both orders', i.locks[0].name, i.locks[1].name), 'warning');
    const md = tooltip().appendMarkdown(`${escapeOwn(vscode.l10n.t('Two owners can each hold one of these locks and wait for the other: it has not deadlocked yet, but it can.'))}\n\n`);
    for (const e of [i.first, i.second]) appendUntrusted(md.appendMarkdown('- '), orderText(e, owner)).appendMarkdown('\n');
    item.tooltip = md;
    items.push(item, ...[i.first, i.second].map((e) => textItem(orderText(e, owner), new Date(e.at).toLocaleString(), 'arrow-right')));
  }
  if (findings.ttlFit) items.push(withTooltip(textItem(vscode.l10n.t('TTL too short'), ttlFitText(findings.ttlFit), 'warning')));
  return items;
}

/** "session 1a held /a when it began waiting for /b". */
function orderText(e: OrderEvidence, owner: Capabilities['owner']): string {
  return vscode.l10n.t('{0} held {1} when it began waiting for {2}', ownerLabel(owner, e.owner), e.held.name, e.waitedFor.name);
}

/** An item whose description is too long for the row: whole in its tooltip. */
function withTooltip(item: vscode.TreeItem): vscode.TreeItem {
  item.tooltip = appendUntrusted(tooltip(), String(item.description ?? ''));
  return item;
}

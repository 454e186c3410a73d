import * as vscode from 'vscode';
import { displayKey } from '../../core/keys';
import { memberLiveness, type LivenessState } from '../../core/liveness';
import { worstTrouble, type MemberHealth } from '../../core/lockHealth';
import type { LockState, SessionInfo } from '../../core/lockState';
import { queryPreview, sessionWho } from '../../core/sessionInfo';
import { conventionLabel } from '../../core/stores';
import type { StoreConnection } from '../connections';
import { ageLabel, appendUntrusted, formatDuration, formatSince, formatTtl, memberOwnerLabel, roleLabel, showsTtl, tooltip, troubleIcon, troubleText } from '../format';
import { longHoldMs } from '../settings';
import { memberContext } from './contextValue';
import { escapeOwn, memberLabel, shorten } from './labels';
import { capabilities } from './liveModel';
import type { MemberView, PrefixedRow } from './row';

const MEMBER_ICONS: Record<MemberHealth['role'], string> = { holder: 'lock', waiter: 'clock', leader: 'star-full', candidate: 'person', single: 'key' };

/** A member row, blank when its member is gone; `own`: held from this window. */
export function memberItem(node: PrefixedRow, shown?: MemberView & { own: boolean }): vscode.TreeItem {
  if (!shown) return Object.assign(new vscode.TreeItem(''), { id: node.id });
  const { lock, health, own } = shown;
  const { member } = health;
  const caps = capabilities(node.connection);
  const label = memberLabel(lock, member, node.prefix);
  const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
  item.id = node.id;
  // As on lock rows (lockItem): the state and its age first, then what ends it, then who; ids and details after.
  const parts = node.connection.staleSince ? [vscode.l10n.t('stale')] : [];
  // A single key is its lock's row: "held 5m (single key)" puts the age where a narrow sidebar still shows it.
  if (health.role === 'single') parts.push(vscode.l10n.t('held {0} (single key)', formatSince(health.since)));
  else parts.push(health.position ? `${roleLabel(health.role)} #${health.position}` : roleLabel(health.role), ageLabel(health));
  // A fair-lock waiter's TTL is its give-up time, not an expiry of anything it holds. A store without TTLs
  // (ZooKeeper: a node lives as long as its session, whose time left cannot be read) has nothing to count down.
  if (member.deadline !== undefined && health.ttl !== undefined) parts.push(vscode.l10n.t('gives up in {0}s', Math.ceil(health.ttl)));
  else if (showsTtl(health, caps)) parts.push(formatTtl(health, caps.owner));
  // A database session says who it is (application, user, client) better than its number, which is the row's label.
  if (member.session) parts.push(sessionSummary(member.session));
  else if (member.owner && label !== member.owner) parts.push(memberOwnerLabel(caps.owner, member, shorten(member.owner)));
  if (member.holds !== null) parts.push(member.holds === 1 ? vscode.l10n.t('1 hold') : vscode.l10n.t('{0} holds (re-entrant)', member.holds));
  if (member.mode) parts.push(member.mode === 'read' ? vscode.l10n.t('read') : vscode.l10n.t('write'));
  if (member.quorum) parts.push(vscode.l10n.t('on {0}/{1} instances', member.quorum.agree, member.quorum.of));
  if (member.token !== null) parts.push(vscode.l10n.t('token {0}', member.token));
  if (own) parts.push(vscode.l10n.t('held by you'));
  item.description = parts.join(' · ');
  item.iconPath = troubleIcon(worstTrouble([health]), own ? 'account' : MEMBER_ICONS[health.role]);
  item.contextValue = memberContext(member, health.position === 0, own, caps);
  return item;
}

export function memberTooltip(c: StoreConnection, lock: LockState, h: MemberHealth, own: boolean): vscode.MarkdownString {
  const { owner, ttl } = capabilities(c);
  const m = h.member;
  const md = tooltip().appendMarkdown(`**${roleLabel(h.role)}${h.position ? ` #${h.position}` : ''}**${own ? ` · ${vscode.l10n.t('held by you')}` : ''}\n\n`);
  const row = (label: string, value: string) => appendUntrusted(md.appendMarkdown(`${label}: `), value).appendMarkdown('\n\n');
  row(vscode.l10n.t('Key'), displayKey(m.key));
  row(vscode.l10n.t('Lock'), displayKey(lock.name));
  if (owner === 'lease') row(vscode.l10n.t('Lease'), m.lease || vscode.l10n.t('none'));
  else if (owner === 'session') row(vscode.l10n.t('Session'), m.owner || vscode.l10n.t('none (persistent node)'));
  else if (owner === 'connection' && m.session) sessionRows(m.session, m.owner, row);
  else row(vscode.l10n.t('Owner'), m.owner || vscode.l10n.t('unknown'));
  if (m.holds !== null) row(vscode.l10n.t('Holds (re-entrant)'), String(m.holds));
  if (m.mode) row(vscode.l10n.t('Mode'), m.mode === 'read' ? vscode.l10n.t('read') : vscode.l10n.t('write'));
  if (m.quorum) row(vscode.l10n.t('Instances agreeing'), `${m.quorum.agree}/${m.quorum.of}${m.quorum.instances?.length ? ` (${m.quorum.instances.join(', ')})` : ''}`);
  if (ttl && showsTtl(h, { ttl, owner })) row(vscode.l10n.t('Remaining TTL'), formatTtl(h, owner) + (h.lease ? ` / ${Math.ceil(h.lease.grantedTtl)}s` : ''));
  if (m.deadline !== undefined) row(vscode.l10n.t('Gives up waiting at'), new Date(m.deadline).toLocaleTimeString());
  if (m.token !== null) row(vscode.l10n.t('Fencing token'), String(m.token));
  if (m.revision !== undefined) row(vscode.l10n.t('Modified at revision'), String(m.revision));
  row(vscode.l10n.t('Layout'), conventionLabel(m.convention));
  row(vscode.l10n.t('Age'), ageLabel(h));
  if (m.valueSize) row(vscode.l10n.t('Value ({0} bytes)', m.valueSize), displayKey(m.valuePreview.subarray(0, 200)));
  if (h.lease?.refreshes.length) row(vscode.l10n.t('Last renewal seen'), new Date(h.lease.refreshes[h.lease.refreshes.length - 1]).toLocaleTimeString());
  const live = memberLiveness(m, h.lease);
  row(vscode.l10n.t('Holder liveness'), `${LIVENESS_LABELS[live.state]()}: ${live.evidence}`);
  for (const t of h.troubles) md.appendMarkdown(`$(warning) ${escapeOwn(troubleText(t, h, longHoldMs(), owner))}\n\n`);
  if (c.staleSince) md.appendMarkdown(`$(history) ${escapeOwn(vscode.l10n.t('Stale: LockLens lost the watch {0} ago; this may have changed.', formatDuration(Date.now() - c.staleSince)))}`);
  return md;
}

/** The evidence stays in the core's words (like a store's hidden note); the state is translated. */
const LIVENESS_LABELS: Record<LivenessState, () => string> = {
  alive: () => vscode.l10n.t('alive'),
  paused: () => vscode.l10n.t('paused'),
  gone: () => vscode.l10n.t('gone'),
  unknown: () => vscode.l10n.t('unknown'),
};

/** "billing-worker · svc@10.0.0.5:51234": the session behind a SQL member, as far as the reader may see it. */
function sessionSummary(s: SessionInfo): string {
  return [s.application, sessionWho(s)].filter(Boolean).join(' · ') || vscode.l10n.t('session details hidden');
}

/** The database session behind a member, a row each: what the person deciding to terminate it needs to know. */
function sessionRows(s: SessionInfo, id: string, row: (label: string, value: string) => void): void {
  row(vscode.l10n.t('Connection'), id);
  if (s.user) row(vscode.l10n.t('User'), s.user);
  if (s.application) row(vscode.l10n.t('Application'), s.application);
  if (s.client) row(vscode.l10n.t('Client'), s.client);
  if (s.connectedAt !== undefined) row(vscode.l10n.t('Connected'), new Date(s.connectedAt).toLocaleString());
  if (s.state) row(vscode.l10n.t('State'), s.state);
  if (s.waitingSince !== undefined) row(vscode.l10n.t('Waiting since'), new Date(s.waitingSince).toLocaleTimeString());
  if (s.query) row(vscode.l10n.t('Query'), queryPreview(s.query, 300));
}

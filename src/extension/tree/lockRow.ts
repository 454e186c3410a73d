import * as vscode from 'vscode';
import { worstTrouble, type LockTrouble, type MemberHealth, type Trouble } from '../../core/lockHealth';
import type { LockFigures } from '../../core/lockFigures';
import { isElection, members, type LockState } from '../../core/lockState';
import { permitCount, type PermitCount } from '../../core/permitCount';
import type { StoreConnection } from '../connections';
import { conventionLabel } from '../../core/stores';
import { appendUntrusted, formatSpan, formatTtl, roleLabel, showsTtl, tooltip, troubleIcon, troubleText } from '../format';
import { longHoldMs } from '../settings';
import { lockContext } from './contextValue';
import type { LockFindings } from '../diagnosis';
import { appendFindings } from './findings';
import { coarseAge, escapeOwn, memberLabel, shortId, shortName } from './labels';
import { capabilities } from './liveModel';
import type { PrefixedRow } from './row';

const LOCK_ICONS: Record<LockState['kind'], string> = { queue: 'lock', single: 'key', election: 'organization', readwrite: 'book', semaphore: 'layers' };

/**
 * A lock row, blank when its lock is gone: its name as the label, and as the description what an incident scans for,
 * in that order: the state and its age, how many wait, then who holds it. At VS Code's default sidebar width (300 px)
 * a lock's row shows about 30 characters, name included; an owner id first (a lease, a Redisson `<uuid>:<thread>`)
 * used what the name left, and the state, the age and the queue were cut off. The owner, last and shortened, is whole
 * on the holder's row below; the waiters are counted by the row's badge too (queueBadges.ts), which is never cut.
 */
export function lockItem(node: PrefixedRow, shown?: { lock: LockState; health: readonly MemberHealth[]; trouble: Trouble | undefined; acquirable: boolean }): vscode.TreeItem {
  const item = new vscode.TreeItem(shown ? shortName(shown.lock.name, node.prefix) : '', vscode.TreeItemCollapsibleState.Collapsed);
  item.id = node.id;
  if (!shown) return item;
  const { lock } = shown;
  item.contextValue = lockContext(lock.kind, shown.acquirable);
  item.iconPath = troubleIcon(shown.trouble, LOCK_ICONS[lock.kind]);
  item.description = lockDescription(node, lock, shown.health);
  // A semaphore whose holders the store does not record has no member rows to open.
  if (members(lock).length === 0) item.collapsibleState = vscode.TreeItemCollapsibleState.None;
  return item;
}

/** "2 waiting", "1 candidate": the lock's queue in words, on its row and on its badge (queueBadges.ts). */
export function waitersText(lock: LockState): string {
  const n = lock.waiters.length;
  if (isElection(lock)) return n === 1 ? vscode.l10n.t('1 candidate') : vscode.l10n.t('{0} candidates', n);
  return n === 1 ? vscode.l10n.t('1 waiting') : vscode.l10n.t('{0} waiting', n);
}

/** What a lock row shows that can change while its lock does not: its trouble, and its description (the age in it). */
export function lockFace(node: PrefixedRow, lock: LockState, health: readonly MemberHealth[], lockTroubles: readonly LockTrouble[]): string {
  return `${worstTrouble(health, lockTroubles) ?? ''}|${lockDescription(node, lock, health)}`;
}

/**
 * "held 5m · 2 waiting · by 694d81e5c0a1b2c3", "elected <1m ago · 1 candidate · leader node-a". Its age is to the
 * minute (coarseAge): the row is redrawn only when this text or its trouble changes, never with every lease sweep,
 * which would make VS Code re-fetch its member rows each time, and a context-menu command run in that gap would get
 * no row.
 */
export function lockDescription(node: PrefixedRow, lock: LockState, health: readonly MemberHealth[]): string {
  const election = isElection(lock);
  const holder = lock.holder && health[0];
  const parts: string[] = node.connection.staleSince ? [vscode.l10n.t('stale')] : [];
  const permits = permitCount(lock);
  if (permits) {
    // Each holder has its own row, age and owner: the lock's row says since when it has been held (its oldest hold),
    // and counts the permits.
    const holds = health.filter((h) => h.position === 0).map((h) => h.since);
    if (holds.length) parts.push(vscode.l10n.t('held {0}', coarseAge(holds.reduce((a, b) => (b.at < a.at ? b : a)))));
    parts.push(permitsText(permits));
    if (lock.waiters.length) parts.push(waitersText(lock));
    if (lock.altName) parts.push(lock.altName);
    return parts.join(' · ');
  }
  if (holder) {
    const age = coarseAge(holder.since);
    parts.push(election ? vscode.l10n.t('elected {0} ago', age) : vscode.l10n.t('held {0}', age));
  } else parts.push(vscode.l10n.t('free'));
  if (lock.waiters.length) parts.push(waitersText(lock));
  if (holder) {
    const who = shortId(memberLabel(lock, holder.member, node.prefix));
    parts.push(election ? vscode.l10n.t('leader {0}', who) : vscode.l10n.t('by {0}', who));
    const others = lock.sharedWith?.length ?? 0;
    if (others && holder.member.mode === 'read') parts.push(others === 1 ? vscode.l10n.t('and 1 other reader') : vscode.l10n.t('and {0} other readers', others));
    else if (others) parts.push(others === 1 ? vscode.l10n.t('and 1 other claim') : vscode.l10n.t('and {0} other claims', others));
  }
  if (lock.altName) parts.push(lock.altName);
  return parts.join(' · ');
}

/** "2/3 permits", "2 permits", "free", "1 permit left, holders not recorded". */
export function permitsText(p: PermitCount): string {
  if (!p.holdersRecorded) {
    if (p.free === null) return vscode.l10n.t('holders not recorded');
    return p.free === 1 ? vscode.l10n.t('1 permit left, holders not recorded') : vscode.l10n.t('{0} permits left, holders not recorded', p.free);
  }
  if (p.held === 0) return vscode.l10n.t('free');
  if (p.limit !== null) return vscode.l10n.t('{0}/{1} permits', p.held ?? '?', p.limit);
  return p.held === 1 ? vscode.l10n.t('1 permit') : vscode.l10n.t('{0} permits', p.held ?? '?');
}

export function lockTooltip(connection: StoreConnection, lock: LockState, health: readonly MemberHealth[], figures: LockFigures | undefined, findings: LockFindings): vscode.MarkdownString {
  const caps = capabilities(connection);
  const { owner } = caps;
  const md = tooltip().appendMarkdown(`**${vscode.l10n.t('Lock')}** `);
  appendUntrusted(md, lock.name);
  if (lock.altName) appendUntrusted(md.appendMarkdown(' = '), lock.altName);
  md.appendMarkdown(`\n\n${vscode.l10n.t('Kind')}: ${kindLabel(lock)}\n\n`);
  const permits = permitCount(lock);
  if (permits) md.appendMarkdown(`${vscode.l10n.t('Permits')}: ${permitsLine(permits)}\n\n`);
  for (const h of health) {
    md.appendMarkdown(`- ${roleLabel(h.role)}${h.position ? ` #${h.position}` : ''}: `);
    appendUntrusted(md, h.member.key);
    if (showsTtl(h, caps)) md.appendMarkdown(` · ${formatTtl(h, owner)}`);
    if (h.member.token !== null) md.appendMarkdown(` · ${vscode.l10n.t('token {0}', h.member.token)}`);
    md.appendMarkdown('\n');
  }
  appendFindings(md, findings, owner);
  for (const h of health) for (const t of h.troubles) md.appendMarkdown(`\n\n$(warning) ${escapeOwn(troubleText(t, h, longHoldMs(), owner))}`);
  if (figures) md.appendMarkdown(`\n\n$(graph) ${escapeOwn(figuresLine(figures))}`);
  return md;
}

/** "2 of 3 held, 1 free"; "1 free; the store does not record who holds the others". */
function permitsLine(p: PermitCount): string {
  const parts: string[] = [];
  if (p.holdersRecorded) parts.push(p.limit !== null ? vscode.l10n.t('{0} of {1} held', p.held ?? '?', p.limit) : vscode.l10n.t('{0} held, limit not recorded (its clients state it)', p.held ?? '?'));
  else if (p.limit !== null) parts.push(vscode.l10n.t('{0} in all', p.limit));
  if (p.free !== null) parts.push(vscode.l10n.t('{0} free', p.free));
  const line = parts.join(', ');
  return p.holdersRecorded ? line : [line, vscode.l10n.t('the store does not record who holds them')].filter(Boolean).join('; ');
}

/** The figures in one line: "12 holds seen · hold p50 3 s, p95 8 s · wait p50 1 s, p95 4 s · 2.0 handoffs/min · 1 stall". */
function figuresLine(f: LockFigures): string {
  const parts = [f.holds === 1 ? vscode.l10n.t('1 hold seen') : vscode.l10n.t('{0} holds seen', f.holds)];
  if (f.hold) parts.push(vscode.l10n.t('hold p50 {0}, p95 {1}', formatSpan(f.hold.p50), formatSpan(f.hold.p95)));
  if (f.wait) parts.push(vscode.l10n.t('wait p50 {0}, p95 {1}', formatSpan(f.wait.p50), formatSpan(f.wait.p95)));
  parts.push(vscode.l10n.t('{0} handoffs/min', f.handoffsPerMinute.toFixed(1)));
  if (f.stalls) parts.push(f.stalls === 1 ? vscode.l10n.t('1 stall') : vscode.l10n.t('{0} stalls', f.stalls));
  return parts.join(' · ');
}

/** "queue (Go concurrency.Mutex, etcdctl lock, jetcd)": how the lock behaves, and whose layout its members follow. */
function kindLabel(lock: LockState): string {
  const layouts = [...new Set(members(lock).map((m) => conventionLabel(m.convention)))];
  const kind = kindName(lock);
  return layouts.length ? `${kind} (${layouts.join('; ')})` : kind;
}

function kindName(lock: LockState): string {
  switch (lock.kind) {
    case 'queue':
      return vscode.l10n.t('queue');
    case 'election':
      return vscode.l10n.t('election');
    case 'readwrite':
      return vscode.l10n.t('read/write lock');
    case 'single':
      return vscode.l10n.t('single key');
    case 'semaphore':
      return vscode.l10n.t('semaphore');
  }
}

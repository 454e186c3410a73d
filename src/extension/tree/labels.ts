import * as vscode from 'vscode';
import { displayKey, hasPrefix, isUtf8 } from '../../core/keys';
import type { Since } from '../../core/lockHealth';
import { isElection, isSingleKey, type LockMember, type LockState } from '../../core/lockState';

/** Long owners (a Redisson `<uuid>:<thread>`, a 32-hex token) cut to fit a row; the tooltip has them whole. */
export function shorten(text: string, max = 24): string {
  return text.length > max ? text.slice(0, max - 1) + '…' : text;
}

/** The lock name below its prefix ("jobs" under "/locks/"), whole when the prefix is the lock's own. */
export function shortName(name: Buffer, prefix: string): string {
  const p = Buffer.from(prefix);
  let rest = hasPrefix(name, p) && name.length > p.length ? name.subarray(p.length) : name;
  // Under a path written without its last slash (a ZooKeeper path: /app), the rest starts with one: /app/jobs is jobs.
  if (rest !== name && rest[0] === 0x2f && rest.length > 1) rest = rest.subarray(1);
  return displayKey(rest);
}

/** Longest value shown as a member's label (an election's proposal, a ZooKeeper contender's data). */
const MAX_VALUE_LABEL = 40;

/**
 * A single key by its lock's name under the prefix (a lock-table row's key is the row's name alone, its lock
 * `<table>/<row>`); a member whose value says who it is (an election's proposal, what `etcdctl elect` prints; a
 * ZooKeeper contender's data, kazoo's identifier or Curator's client IP) by that value, when it is text; else by the
 * last segment of its key (the lease, for Go and etcdctl), whole in the tooltip.
 */
export function memberLabel(lock: LockState, member: LockMember, prefix: string): string {
  if (isSingleKey(lock)) return shortName(lock.name, prefix);
  if ((isElection(lock) || member.valueNamesOwner) && member.valueSize > 0 && isUtf8(member.valuePreview)) {
    const value = member.valuePreview.toString('utf8').replace(/\s+/g, ' ').trim();
    if (value) return shorten(value, MAX_VALUE_LABEL);
  }
  return displayKey(member.key.subarray(member.key.lastIndexOf(0x2f) + 1));
}

/**
 * Who holds a lock, on its row after the state and the waiters: an id as long as an etcd lease (16 characters) whole,
 * a longer one (a Redisson `<uuid>:<thread>`) cut to its first 12, which tell ids apart at a glance; the whole id is
 * on the holder's own row, in its tooltip and in Copy Owner.
 */
export function shortId(text: string): string {
  return text.length > 16 ? text.slice(0, 12) + '…' : text;
}

/**
 * A hold's age on a lock row, to the minute ("<1m", "5m", "2h", "3d"; "≥0m", "≥5m" when LockLens found it held): a lock
 * row is redrawn only when what it shows changes (see lockItem), so an age in seconds would redraw it, and re-fetch
 * its member rows, every second.
 */
export function coarseAge(since: Since, now = Date.now()): string {
  const m = Math.floor(Math.max(0, now - since.at) / 60_000);
  // Found held: at least the minutes seen since, whole, even the first (a "<1m" would say it is new, which it is not).
  if (m < 1 && since.exact) return vscode.l10n.t('<1m');
  const age = m < 60 ? vscode.l10n.t('{0}m', m) : m < 24 * 60 ? vscode.l10n.t('{0}h', Math.floor(m / 60)) : vscode.l10n.t('{0}d', Math.floor(m / (24 * 60)));
  // No space after ≥: on a narrow row every character counts.
  return since.exact ? age : vscode.l10n.t('≥{0}', age);
}

/** Our own sentences can hold a lease ID or a setting name: keep markdown from reading `_` or `*` in them. */
export function escapeOwn(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-!<>]/g, '\\$&');
}

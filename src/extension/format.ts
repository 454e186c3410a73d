import * as vscode from 'vscode';
import type { Capabilities } from '../core/backend';
import { displayKey } from '../core/keys';
import type { Cycle } from '../core/diagnosis/cycle';
import type { TtlFit } from '../core/diagnosis/ttlFit';
import type { MemberHealth, MemberTrouble, Role, Since, Trouble } from '../core/lockHealth';
import type { LockMember } from '../core/lockState';
import type { StoreConnection } from './connections';

/** 42s, 5m 3s, 2h 5m, 3d 4h: the two largest units, as people read ages and TTLs at a glance. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return vscode.l10n.t('{0}s', s);
  const m = Math.floor(s / 60);
  if (m < 60) return vscode.l10n.t('{0}m {1}s', m, s % 60);
  const h = Math.floor(m / 60);
  if (h < 24) return vscode.l10n.t('{0}h {1}m', h, m % 60);
  return vscode.l10n.t('{0}d {1}h', Math.floor(h / 24), h % 24);
}

/** A measured duration (a hold, a wait): sub-second ones too, since handoffs take milliseconds. */
export function formatSpan(ms: number): string {
  if (ms < 1000) return vscode.l10n.t('{0} ms', Math.round(ms));
  if (ms < 10_000) return vscode.l10n.t('{0}s', (ms / 1000).toFixed(1));
  return formatDuration(ms);
}

/** An age that LockLens may have only found in place: "≥ 5m" then. */
export function formatSince(since: Since, now = Date.now()): string {
  const d = formatDuration(now - since.at);
  return since.exact ? d : vscode.l10n.t('≥ {0}', d);
}

/** What a member's owner is called where the store has leases (etcd), and where it has not. */
type OwnerKind = Capabilities['owner'];

/**
 * Whether a member has a TTL worth a word: a store with TTLs shows them (and "TTL …" before the first sample), except
 * for a member that goes with its database connection, which has none to count down; a member with nothing to expire it
 * says so in every store.
 */
export function showsTtl(health: MemberHealth, caps: Pick<Capabilities, 'ttl' | 'owner'>): boolean {
  if (!health.member.lease) return true;
  return caps.ttl && health.member.expiresWith !== 'connection';
}

export function formatTtl(health: MemberHealth, owner: OwnerKind): string {
  if (!health.member.lease) return noExpiryLabel(owner);
  if (health.lease?.state === 'expired') return owner === 'lease' ? vscode.l10n.t('lease expired') : vscode.l10n.t('expired');
  if (health.ttl === undefined) return vscode.l10n.t('TTL …');
  return vscode.l10n.t('TTL {0}s', Math.ceil(health.ttl));
}

export function roleLabel(role: Role): string {
  switch (role) {
    case 'holder':
      return vscode.l10n.t('holder');
    case 'waiter':
      return vscode.l10n.t('waiter');
    case 'leader':
      return vscode.l10n.t('leader');
    case 'candidate':
      return vscode.l10n.t('candidate');
    case 'single':
      return vscode.l10n.t('held (single key)');
  }
}

export function ageLabel(health: MemberHealth, now = Date.now()): string {
  const age = formatSince(health.since, now);
  return health.position === 0 ? vscode.l10n.t('held {0}', age) : vscode.l10n.t('waiting {0}', age);
}

/**
 * What a member that nothing expires is called: an etcd key without a lease, a persistent znode, a Redis key without
 * PX, a lock-table row without an expiry column (a Liquibase lock).
 */
function noExpiryLabel(owner: OwnerKind): string {
  switch (owner) {
    case 'lease':
      return vscode.l10n.t('no lease');
    case 'session':
      return vscode.l10n.t('persistent');
    case 'token':
    case 'connection':
      return vscode.l10n.t('no expiry');
  }
}

/** An owner for a row or a sentence: "lease 694d…", "session 1000a…", "owner <token>", "connection 4242". */
export function ownerLabel(owner: OwnerKind, id: string): string {
  switch (owner) {
    case 'connection':
      return vscode.l10n.t('connection {0}', id);
    case 'lease':
      return vscode.l10n.t('lease {0}', id);
    case 'session':
      return vscode.l10n.t('session {0}', id);
    case 'token':
      return vscode.l10n.t('owner {0}', id);
  }
}

/**
 * A member's owner for its row. In a SQL store a member goes with its connection (its lease is that connection) unless
 * it is a lock-table row, which no connection owns: its owner is whoever the row's holder column names.
 */
export function memberOwnerLabel(owner: OwnerKind, member: LockMember, shown: string): string {
  return owner === 'connection' && member.expiresWith !== 'connection' ? vscode.l10n.t('locked by {0}', shown) : ownerLabel(owner, shown);
}

/** A few words for a trouble, where a sentence does not fit (pickers). */
export function troubleLabel(trouble: Trouble, owner: OwnerKind): string {
  switch (trouble) {
    case 'leaseExpired':
      return owner === 'lease' ? vscode.l10n.t('lease expired') : vscode.l10n.t('expired');
    case 'stalled':
      return vscode.l10n.t('not renewed');
    case 'noMajority':
      return vscode.l10n.t('no majority');
    case 'noLease':
      return noExpiryLabel(owner);
    case 'longHold':
      return vscode.l10n.t('long hold');
    case 'deadlock':
      return vscode.l10n.t('deadlock');
    case 'ttlFit':
      return vscode.l10n.t('TTL too short');
  }
}

export function troubleText(trouble: MemberTrouble, health: MemberHealth, longHoldMs: number, owner: OwnerKind, now = Date.now()): string {
  switch (trouble) {
    case 'leaseExpired':
      if (owner === 'connection') return vscode.l10n.t('Its expiry time has passed, but its row is still there: its clients may count the lock as free, or wait until the row is deleted (a ShedLock row past its lock_until is free, and not listed).');
      return owner === 'lease'
        ? vscode.l10n.t('Lease {0} has expired, but its key is still listed: etcd is deleting it, or the data is stale.', health.member.lease)
        : vscode.l10n.t('Its TTL has run out, but it is still listed: the store is removing it, or the data is stale.');
    case 'stalled':
      return owner === 'lease'
        ? vscode.l10n.t(
            'Lease {0} is not being renewed: {1}s left of {2}s. Its owner may be stuck, paused or cut off; the lock frees itself when the TTL runs out.',
            health.member.lease,
            Math.ceil(health.ttl ?? 0),
            Math.ceil(health.lease?.grantedTtl ?? 0),
          )
        : vscode.l10n.t(
            'Its TTL is not being renewed: {0}s left of the {1}s last seen. Its owner may be stuck, paused or cut off (or never renews); the lock frees itself when the TTL runs out.',
            Math.ceil(health.ttl ?? 0),
            Math.ceil(health.lease?.grantedTtl ?? 0),
          );
    case 'noMajority':
      return vscode.l10n.t(
        'Held on only {0} of {1} independent instances: no majority, so in redlock\'s terms nobody holds this lock (a split, a failed acquire, or instances down).',
        health.member.quorum?.agree ?? 0,
        health.member.quorum?.of ?? 0,
      );
    case 'noLease':
      switch (owner) {
        case 'lease':
          return vscode.l10n.t('This key has no lease: it never expires. If its owner crashed, the lock stays held until someone deletes the key.');
        case 'session':
          return vscode.l10n.t('This node is persistent, not ephemeral: no session owns it, so it never goes by itself. If its owner crashed, the lock stays held until someone deletes the node.');
        case 'token':
          return vscode.l10n.t('This key has no expiry (PTTL -1): if its owner crashed, the lock stays held until someone deletes the key.');
        case 'connection':
          return vscode.l10n.t('This row has no expiry: if the process that wrote it died (a killed migration, say), the lock stays held until someone clears the row.');
      }
    case 'longHold':
      return vscode.l10n.t('Held for {0}, longer than {1} (setting locklens.longHoldSeconds).', formatSince(health.since, now), formatDuration(longHoldMs));
  }
}

/**
 * Markdown for text that came from a store (a key, a value, an owner): escaped (no markdown, links or HTML take effect) and on one line, so a key
 * cannot forge structure in a tooltip.
 */
export function appendUntrusted(md: vscode.MarkdownString, bytes: Uint8Array | string): vscode.MarkdownString {
  const text = typeof bytes === 'string' ? bytes : displayKey(bytes);
  return md.appendText(text.replace(/\r?\n/g, '⏎'));
}

/** A tooltip that renders codicons and nothing that could run: not trusted, no HTML. */
export function tooltip(): vscode.MarkdownString {
  const md = new vscode.MarkdownString('', true);
  md.isTrusted = false;
  md.supportHtml = false;
  return md;
}

export function troubleIcon(trouble: Trouble | undefined, fallback: string): vscode.ThemeIcon {
  if (!trouble) return new vscode.ThemeIcon(fallback);
  if (trouble === 'deadlock') return new vscode.ThemeIcon('error', new vscode.ThemeColor('list.errorForeground'));
  const colour = trouble === 'leaseExpired' || trouble === 'stalled' || trouble === 'noMajority' ? 'list.errorForeground' : 'list.warningForeground';
  return new vscode.ThemeIcon('warning', new vscode.ThemeColor(colour));
}

/** A deadlock in words: "session 1a holds /a and waits for /b; session 2b holds /b and waits for /a". */
export function cycleText(cycle: Cycle, owner: OwnerKind): string {
  return cycle.members.map((m) => vscode.l10n.t('{0} holds {1} and waits for {2}', ownerLabel(owner, m.owner), m.holds.name, m.waitsIn.name)).join('; ');
}

/** A TTL fit with its figures: "Holds run up to 11s (p95 10s); the lock expires after 8s with nothing renewing it: …". */
export function ttlFitText(fit: TtlFit): string {
  const figures = vscode.l10n.t(
    'Holds run up to {0} (p95 {1}); the lock expires after {2} with nothing renewing it',
    formatSpan(fit.maxSeconds * 1000),
    formatSpan(fit.p95Seconds * 1000),
    formatSpan(fit.ttlSeconds * 1000),
  );
  const expired = fit.expired ? vscode.l10n.t('; {0} of {1} holds ran until it expired', fit.expired, fit.holds) : '';
  const so = fit.level === 'exceeds' ? vscode.l10n.t('a second holder can get in.') : vscode.l10n.t('a longer hold lets a second holder in.');
  return `${figures}${expired}: ${so}`;
}

/** A connection's state in a few words, with the reason when it is not working. */
export function stateText(c: StoreConnection): string {
  const reason = c.error?.message;
  switch (c.state) {
    case 'connected':
      if (c.partial) return vscode.l10n.t('connected; unreachable: {0}', c.partial.unreachable.join(', '));
      return c.hidden ? vscode.l10n.t('connected; some details hidden') : vscode.l10n.t('connected');
    case 'connecting':
      return vscode.l10n.t('connecting…');
    case 'reconnecting':
      return reason ? vscode.l10n.t('reconnecting: {0}', reason) : vscode.l10n.t('reconnecting');
    case 'error':
      // Not a failure of the store: what to install, said as it is.
      return c.storeMissing ? (reason ?? '') : vscode.l10n.t('error: {0}', reason ?? '');
    case 'disconnected':
      return vscode.l10n.t('disconnected');
  }
}

import type { Capabilities } from './backend';
import type { HoldEnd, LockHistory } from './history';
import type { ObservedHold } from './holdObservation';
import { displayKey } from './keys';
import { breakingChoices } from './diagnosis/breaking';
import type { Cycle } from './diagnosis/cycle';
import type { Inversion, OrderEvidence } from './diagnosis/inversions';
import type { TtlFit } from './diagnosis/ttlFit';
import type { MemberHealth, MemberTrouble } from './lockHealth';
import { ENDS_COUNTED_OVER, holdBound, type LockFigures, type Spread } from './lockFigures';
import type { LockState } from './lockState';
import { permitCount, permitsSummary } from './permitCount';
import { HOLD_END_TEXT } from '../shared/holdEnds';

/**
 * A Markdown summary of one lock for an incident channel or ticket: who holds it and who waits (ages, TTLs, tokens,
 * troubles), what LockLens recorded of it, and its replayed history when there is one. In English whatever the
 * window's language: it is written for whoever reads the incident, not for the one who copied it. Every text from the
 * store is a code span (one line, fenced so that no backtick, pipe or markup in a key can break out of it).
 */
export interface IncidentInput {
  readonly connection: string;
  /** The store's name for people: "etcd", "Redis". */
  readonly store: string;
  readonly name: Uint8Array;
  /** The lock as the live view has it now; absent when it is not in the store (free, nobody waiting) or not watched. */
  readonly live?: {
    readonly lock: LockState;
    /** Its members with their roles, ages, TTLs and troubles, holders first. */
    readonly health: readonly MemberHealth[];
    readonly owner: Capabilities['owner'];
  };
  readonly figures: LockFigures | undefined;
  /** Holds seen live, oldest first. */
  readonly holds: readonly ObservedHold[];
  readonly history: LockHistory | undefined;
  /** What the connection's diagnosis says of this lock (src/core/diagnosis). */
  readonly diagnosis?: LockDiagnosis;
  readonly now: number;
}

export interface LockDiagnosis {
  /** Confirmed deadlocks that hold or wait in it. */
  readonly deadlocks: readonly Cycle[];
  /** Lock-order inversions it is one of the two locks of. */
  readonly inversions: readonly Inversion[];
  readonly ttlFit: TtlFit | undefined;
}

/** Recent holds listed, the newest. */
const RECENT_HOLDS = 10;
/** Replayed holds listed, the newest. */
const REPLAYED_HOLDS = 20;

export function incidentReport(input: IncidentInput): string {
  const { now } = input;
  const lines = [
    `# Lock ${code(displayKey(input.name))} on ${code(input.connection)} (${input.store})`,
    '',
    `Reported ${new Date(now).toISOString()} by LockLens.`,
    '',
    '## Now',
    '',
    ...(input.live ? nowLines(input.live, now) : ['Not in the store now: free, nobody waiting (or no longer under a watched prefix).']),
    '',
    ...diagnosisLines(input.diagnosis),
    ...figureLines(input.figures),
    ...recentLines(input.holds, now),
    ...historyLines(input.history),
  ];
  return lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd() + '\n';
}

function nowLines({ lock, health, owner }: NonNullable<IncidentInput['live']>, now: number): string[] {
  const permits = permitCount(lock);
  // A semaphore whose holders the store does not record is not free for having no holder shown.
  const lines = permits ? [`Semaphore: ${permitsSummary(permits)}. The figures below follow one permit holder at a time.`, ''] : [];
  if (health.length === 0) return permits?.holdersRecorded === false ? lines : [...lines, 'Free: no holder, nobody waiting.'];
  if (!lock.holder && permits?.holdersRecorded !== false) lines.push('Free: no holder.');
  for (const h of health) {
    const who = h.position === 0 ? `**${h.role}**` : `${h.role} #${h.position}`;
    const parts = [`${who} ${code(displayKey(h.member.key))}`];
    if (h.member.owner && h.member.owner !== displayKey(h.member.key)) parts.push(`${owner} ${code(h.member.owner)}`);
    if (h.member.holds !== null) parts.push(`holds ${h.member.holds}`);
    if (h.member.token !== null) parts.push(`token ${h.member.token}`);
    parts.push(`${h.position === 0 ? 'held' : 'waiting'} ${h.since.exact ? '' : '≥ '}${duration(now - h.since.at)}`);
    if (!h.member.lease) parts.push('never expires');
    else if (h.ttl !== undefined) parts.push(`TTL ${Math.round(h.ttl)}s${h.lease?.grantedTtl ? ` of ${Math.round(h.lease.grantedTtl)}s` : ''}`);
    if (h.troubles.length) parts.push(`⚠ ${h.troubles.map((t) => TROUBLES[t]).join(', ')}`);
    lines.push(`- ${parts.join(' · ')}`);
  }
  return lines;
}

const TROUBLES: Record<MemberTrouble, string> = {
  leaseExpired: 'its TTL ran out',
  stalled: 'TTL not being renewed',
  noMajority: 'held on too few instances for a majority',
  noLease: 'no TTL: held forever if its owner died',
  longHold: 'long hold',
};

function diagnosisLines(d: LockDiagnosis | undefined): string[] {
  if (!d || (!d.deadlocks.length && !d.inversions.length && !d.ttlFit)) return [];
  const lines = ['## Diagnosis', ''];
  for (const cycle of d.deadlocks) {
    lines.push(`- **Deadlock** (confirmed by two synced reads): ${cycleSentence(cycle)}`);
    for (const choice of breakingChoices(cycle)) lines.push(`  - to break it: ${choice.text}`);
  }
  for (const i of d.inversions) {
    lines.push(`- **Lock-order inversion** between ${code(i.locks[0].name)} and ${code(i.locks[1].name)}: ${orderSentence(i.first)}; ${orderSentence(i.second)}`);
  }
  if (d.ttlFit) lines.push(`- **TTL too short**: ${d.ttlFit.text}`);
  lines.push('');
  return lines;
}

/** "`a` holds `/a` and waits for `/b`; `b` holds `/b` and waits for `/a`". */
export function cycleSentence(cycle: Cycle): string {
  return cycle.members.map((m) => `${code(m.owner)} holds ${code(m.holds.name)} and waits for ${code(m.waitsIn.name)}`).join('; ');
}

function orderSentence(e: OrderEvidence): string {
  return `${code(e.owner)} held ${code(e.held.name)} when it began waiting for ${code(e.waitedFor.name)} at ${new Date(e.at).toISOString()}`;
}

function figureLines(f: LockFigures | undefined): string[] {
  if (!f) return [];
  const row = (what: string, s: Spread | null) => (s ? `| ${what} | ${duration(s.p50)} | ${duration(s.p95)} | ${duration(s.max)} | ${s.count} |` : `| ${what} | – | – | – | 0 |`);
  const lines = [
    `## Figures (seen by LockLens since ${new Date(f.since).toISOString()})`,
    '',
    '| | p50 | p95 | max | seen |',
    '|---|---|---|---|---|',
    row('hold', f.hold),
    row('wait', f.wait),
    '',
    `- Holds seen: ${f.holds}; holder changes: ${f.transitions}; handoffs a minute over the last 10 minutes: ${f.handoffsPerMinute.toFixed(1)}`,
  ];
  if (f.longestHold) lines.push(`- Longest hold: ${duration(f.longestHold.ms)} by ${code(f.longestHold.who)}`);
  if (f.longestWait) lines.push(`- Longest wait: ${duration(f.longestWait.ms)} by ${code(f.longestWait.who)}`);
  lines.push(`- Stalls (TTL not renewed while holding): ${f.stalls}`);
  if (f.ends.length) lines.push(`- How the last ${ENDS_COUNTED_OVER} holds at most ended: ${f.ends.map((e) => `${END_TEXT[e.end]} ${e.count}`).join(', ')}`);
  lines.push('');
  return lines;
}

function recentLines(holds: readonly ObservedHold[], now: number): string[] {
  if (holds.length === 0) return [];
  const lines = ['## Recent holds (seen live), newest first', '', '| holder | from | held | end | token | waited |', '|---|---|---|---|---|---|'];
  for (const h of [...holds].reverse().slice(0, RECENT_HOLDS)) {
    const bound = holdBound(h);
    const held = bound === null ? '?' : `${bound}${duration((h.endedAt ?? now) - h.acquiredAt)}`;
    const from = new Date(h.acquiredAt).toISOString() + (h.acquiredRevision !== null ? ` (rev ${h.acquiredRevision})` : '');
    const end = h.endedAt === null ? 'holding' : END_TEXT[h.end ?? 'unknown'];
    const cells = [code(h.owner || h.key, true), from, held, end, h.token ?? '–', h.waitedMs === null ? '–' : duration(h.waitedMs)];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  lines.push('');
  return lines;
}

/**
 * The holds a report lists are those its window saw or replayed, and the only force releases a window knows of are its
 * own (the store does not say who deleted a key): by whom is this window, whose audit log has the entry.
 */
const END_TEXT: Record<HoldEnd | 'unknown', string> = { ...HOLD_END_TEXT, forceReleased: 'force-released from this window (see its audit log)', unknown: 'ended' };

function historyLines(history: LockHistory | undefined): string[] {
  if (!history) return [];
  const lines = [`## Replayed from the store's history (revisions ${history.fromRevision} to ${history.toRevision})`, ''];
  if (history.compactedAt !== null) lines.push(`History before revision ${history.compactedAt} was compacted: older holds are not shown.`, '');
  if (history.skippedBefore !== null) lines.push(`Read from revision ${history.skippedBefore} on, as chosen: older holds are not shown.`, '');
  if (history.endedOnSilence) lines.push('The read ended after a quiet time (this etcd cannot say when a watch has caught up): holds at the very end may be missing.', '');
  if (history.holds.length === 0) return [...lines, 'No hold in the history read.', ''];
  const shown = [...history.holds].reverse().slice(0, REPLAYED_HOLDS);
  if (shown.length < history.holds.length) lines.push(`The newest ${shown.length} of ${history.holds.length} holds:`, '');
  lines.push('| key | lease | token | from revision | to revision | end | waiting |', '|---|---|---|---|---|---|---|');
  for (const h of shown) {
    const from = `${h.beforeHistory ? 'before ' : ''}${h.acquiredRevision}`;
    const cells = [code(displayKey(h.key), true), h.lease ? code(h.lease, true) : '–', h.token ?? '–', from, h.endedRevision ?? 'holding', h.endedRevision === null ? '' : END_TEXT[h.end ?? 'unknown'], h.waiterCount];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  lines.push('');
  return lines;
}

/**
 * Text from the store as a Markdown code span: on one line, fenced by more backticks than it contains, padded so that
 * a leading or trailing backtick stays text. In a table cell a pipe would still end the cell (GFM), so it is escaped.
 */
export function code(text: string, inTable = false): string {
  const oneLine = text.replace(/\r?\n|\r/g, '⏎');
  const longest = Math.max(0, ...[...oneLine.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const body = inTable ? oneLine.replace(/\|/g, '\\|') : oneLine;
  return longest || /^ | $/.test(body) ? `${fence} ${body} ${fence}` : `${fence}${body}${fence}`;
}

/** A duration for people: ms below a second (handoffs take milliseconds), then s, m s, h m. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(s < 10 ? 1 : 0)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

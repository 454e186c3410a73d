import { formatString, type TimelineStrings } from '../../src/protocol/timeline';
import type { PastHold, PastMessage } from '../../src/shared/timelineData';
import { endText } from './endMarks';

/**
 * A lock's past, replayed from its store's history, drawn under the live bars on a revision axis: the store keeps no
 * wall-clock time, so a hold spans the revisions it held between. One list item per hold (a screen reader reads it as
 * is); bars are positioned through the CSSOM (the CSP forbids style attributes) and every text is `textContent`.
 */
export class PastSection {
  private past: PastMessage | undefined;

  constructor(
    private readonly section: HTMLElement,
    private readonly onClose: () => void,
  ) {
    section.hidden = true;
  }

  show(past: PastMessage, strings: TimelineStrings): void {
    this.past = past;
    this.render(strings);
  }

  /** Redraws in the current language (the strings come with `init`). */
  render(strings: TimelineStrings): void {
    const past = this.past;
    if (!past) return;
    const title = element('div', 'past-title', formatString(strings.pastTitle, past.lockName, past.connection, past.fromRevision, past.toRevision));
    const close = element('vscode-button', 'past-close', strings.pastClose);
    close.setAttribute('secondary', '');
    close.addEventListener('click', () => this.close());
    const header = element('div', 'past-header');
    header.append(title, close);
    const list = element('ol', 'past-list');
    list.setAttribute('aria-label', strings.pastLabel);
    const span = Math.max(1, past.toRevision - past.fromRevision);
    for (const hold of past.holds) list.append(holdItem(hold, past, span, strings));
    const children: Node[] = [header];
    if (past.compactedAt !== null) children.push(element('div', 'past-compacted', formatString(strings.pastCompacted, past.compactedAt)));
    if (past.skippedBefore !== null) children.push(element('div', 'past-older', formatString(strings.pastSkipped, past.skippedBefore)));
    if (past.endedOnSilence) children.push(element('div', 'past-compacted', strings.pastSilence));
    if (past.older > 0) children.push(element('div', 'past-older', formatString(strings.pastOlder, past.older)));
    children.push(past.holds.length ? list : element('div', 'past-empty', strings.pastEmpty));
    this.section.replaceChildren(...children);
    this.section.hidden = false;
  }

  private close(): void {
    this.past = undefined;
    this.section.hidden = true;
    this.section.replaceChildren();
    this.onClose();
  }
}

function holdItem(hold: PastHold, past: PastMessage, span: number, s: TimelineStrings): HTMLElement {
  const end = hold.endedRevision ?? past.toRevision;
  const from = hold.beforeHistory ? formatString(s.pastBefore, hold.acquiredRevision) : String(hold.acquiredRevision);
  const when = hold.endedRevision === null ? formatString(s.pastHolding, from) : formatString(s.pastSpan, from, hold.endedRevision);
  const parts = [when];
  if (hold.end) parts.push(endText(hold.end, s));
  if (hold.token !== null) parts.push(formatString(s.token, hold.token));
  if (hold.lease) parts.push(formatString(s.lease, hold.lease));
  if (hold.waiters) parts.push(formatString(s.pastWaiting, hold.waiters));
  const label = element('div', 'past-label');
  label.append(element('span', 'past-key', hold.key), element('span', 'past-info', parts.join(' · ')));
  const bar = element('div', `past-bar ${hold.endedRevision === null ? 'held' : (hold.end ?? 'ended')}`);
  bar.style.left = `${(100 * (hold.acquiredRevision - past.fromRevision)) / span}%`;
  bar.style.width = `max(2px, ${(100 * (end - hold.acquiredRevision)) / span}%)`;
  const track = element('div', 'past-track');
  track.append(bar);
  const item = element('li', 'past-hold');
  item.append(label, track);
  return item;
}

function element(tag: string, className: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

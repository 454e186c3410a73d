import * as vscode from 'vscode';
import type { Capabilities } from '../../core/backend';
import type { LockTrouble } from '../../core/lockHealth';
import type { LockFindings } from '../diagnosis';
import { appendUntrusted, cycleText, ttlFitText } from '../format';

export function lockTroubles(f: LockFindings): LockTrouble[] {
  const troubles: LockTrouble[] = f.deadlocks.length ? ['deadlock'] : [];
  if (f.ttlFit) troubles.push('ttlFit');
  return troubles;
}

/** The tooltip's lines: each deadlock with who holds what and waits where, and the TTL fit with its figures. */
export function appendFindings(md: vscode.MarkdownString, f: LockFindings, owner: Capabilities['owner']): void {
  for (const cycle of f.deadlocks) {
    md.appendMarkdown(`\n\n$(error) **${vscode.l10n.t('Deadlock')}**: `);
    appendUntrusted(md, cycleText(cycle, owner));
  }
  if (f.ttlFit) {
    md.appendMarkdown(`\n\n$(warning) **${vscode.l10n.t('TTL too short')}**: `);
    appendUntrusted(md, ttlFitText(f.ttlFit));
  }
}

import * as vscode from 'vscode';
import { breakingChoices, type BreakingChoice } from '../core/diagnosis/breaking';
import type { Cycle } from '../core/diagnosis/cycle';
import type { StoreConnection } from './connections';
import type { Diagnoses } from './diagnosis';
import { cycleText, ownerLabel } from './format';
import { orCancel } from './pickers';
import type { ForceReleaseInput } from './commands/forceRelease';
import type { LockTreeProvider } from './tree/lockTreeProvider';
import { lockRowOf } from './tree/lockRowOf';
import type { LockTreeNode } from './tree/nodes';
import { capabilities } from './tree/liveModel';

/**
 * Tells of each deadlock once, when a synced read confirms it (not again while it lasts), and redraws the rows of the
 * locks of every cycle confirmed or cleared. "Show" reveals a lock of the cycle in the Locks tree; "Force Release…"
 * picks whose hold to break, saying what each choice frees, and runs Force Release for it (its confirmation, audit
 * and read-only refusal included).
 */
export function registerDeadlockNotices(diagnoses: Diagnoses<StoreConnection>, tree: LockTreeProvider, view: vscode.TreeView<LockTreeNode>): vscode.Disposable {
  const sub = diagnoses.onDidChange(({ connection, report }) => {
    tree.findingsChanged(connection, [...report.appeared, ...report.cleared].flatMap(lockIdsOf));
    for (const cycle of report.appeared) void notify(connection, cycle, tree, view);
  });
  return new vscode.Disposable(() => sub.dispose());
}

async function notify(connection: StoreConnection, cycle: Cycle, tree: LockTreeProvider, view: vscode.TreeView<LockTreeNode>): Promise<void> {
  const owner = capabilities(connection).owner;
  const show = vscode.l10n.t('Show');
  const force = vscode.l10n.t('Force Release…');
  const answer = await vscode.window.showWarningMessage(vscode.l10n.t('Deadlock on {0}: {1}', connection.name, cycleText(cycle, owner)), show, force);
  if (answer === show) {
    const row = lockRowOf(tree, connection.name, cycle.members[0].holds.id);
    if (row) await view.reveal(row, { select: true, focus: true, expand: true });
    else await vscode.commands.executeCommand('locklens.locks.focus');
  } else if (answer === force) {
    const choice = await pickBreakingChoice(connection, cycle);
    await vscode.commands.executeCommand('locklens.forceRelease', { connection: connection.name, lock: choice.lock.name, owner: choice.owner } satisfies ForceReleaseInput);
  }
}

/** Which hold to release, each choice saying what it frees. */
export async function pickBreakingChoice(connection: StoreConnection, cycle: Cycle): Promise<BreakingChoice> {
  const owner = capabilities(connection).owner;
  const who = (o: string) => ownerLabel(owner, o);
  const items = breakingChoices(cycle, who).map((choice) => ({ label: vscode.l10n.t('Release {0} from {1}', choice.lock.name, who(choice.owner)), detail: choiceText(choice, who), choice }));
  const picked = await vscode.window.showQuickPick(items, { title: vscode.l10n.t('Break the deadlock on {0}', connection.name), placeHolder: vscode.l10n.t('Whose hold to force-release') });
  return orCancel(picked).choice;
}

/** What releasing the hold frees, in the window's language (breakingChoices' own text is the CLI's English). */
function choiceText(c: BreakingChoice, who: (owner: string) => string): string {
  if (c.letsIn) return vscode.l10n.t('Lets {0} take {1}', who(c.unblocks), c.lock.name);
  if (c.next) return vscode.l10n.t('Hands {0} to {1}, queued ahead of {2}', c.lock.name, who(c.next), who(c.unblocks));
  return vscode.l10n.t('Does not free {0}: other holders keep it', c.lock.name);
}

function lockIdsOf(cycle: Cycle): string[] {
  return cycle.members.map((m) => m.holds.id);
}

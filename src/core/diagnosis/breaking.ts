/**
 * What force-releasing each member's hold would free, for the one who breaks a deadlock: the hold goes, and the lock
 * goes to the first in its queue (the cycle's waiter itself, or someone ahead of it), or to nobody yet while other
 * readers still hold it. The owner whose hold is released is not told and may still believe it holds the lock.
 */
import type { Cycle, LockRef } from './cycle';

export interface BreakingChoice {
  /** Whose hold is released, and which lock and member key it is. */
  readonly owner: string;
  readonly lock: LockRef;
  readonly key: string;
  /** The cycle's owner that waits in the lock, and whether the release lets it take the lock now. */
  readonly unblocks: string;
  readonly letsIn: boolean;
  /** Who takes the lock next: the first in its queue; '' while other holders keep it. */
  readonly next: string;
  /** In words: "force-releasing X's hold on /a lets Y take /a". */
  readonly text: string;
}

/** One choice per member of the cycle, in the cycle's order; `who` names an owner in the store's terms ("lease 1a2b"). */
export function breakingChoices(cycle: Cycle, who: (owner: string) => string = (o) => o): BreakingChoice[] {
  return cycle.members.map((m, i) => {
    // The edge into member i: the member before it waits in the lock member i holds.
    const e = cycle.edges[(i + cycle.edges.length - 1) % cycle.edges.length];
    const base = { owner: m.owner, lock: e.lock, key: e.holder.key, unblocks: e.from };
    const release = `force-releasing ${who(m.owner)}'s hold on ${e.lock.name}`;
    if (e.holders > 1) {
      const others = e.holders - 1;
      return { ...base, letsIn: false, next: '', text: `${release} does not free it: ${others} other holder${others > 1 ? 's hold' : ' holds'} it too` };
    }
    if (e.ahead === 0) return { ...base, letsIn: true, next: e.from, text: `${release} lets ${who(e.from)} take ${e.lock.name}` };
    return { ...base, letsIn: false, next: e.next, text: `${release} hands it to ${who(e.next)}, first of ${e.ahead} queued ahead of ${who(e.from)}` };
  });
}

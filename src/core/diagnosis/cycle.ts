/**
 * What the wait-for graph (waitFor.ts) is made of and says: owners' waits as edges, and a cycle of them as the owners
 * that hold and wait, each for the next. Plain data (JSON as it is), for the CLI's --json and the views.
 */

/** A lock as the diagnosis names it: its id in the connection and its name as display text. */
export interface LockRef {
  readonly id: string;
  readonly name: string;
}

/** A member of a lock, as display text. */
export interface MemberRef {
  readonly key: string;
  readonly owner: string;
  readonly token: number | null;
}

/** `from` waits in `lock`, which `to` holds. */
export interface WaitEdge {
  /** The lock, the waiter and the holder: the same id while the same wait and the same hold last. */
  readonly id: string;
  readonly from: string;
  readonly to: string;
  readonly lock: LockRef;
  readonly waiter: MemberRef;
  readonly holder: MemberRef;
  /** What freeing the lock would do: the members queued ahead of the waiter, the first one's owner, the holders. */
  readonly ahead: number;
  readonly next: string;
  readonly holders: number;
}

/** One owner of a cycle: it holds what the member before it waits in, and waits in what the member after it holds. */
export interface CycleMember {
  readonly owner: string;
  readonly holds: LockRef & { readonly key: string; readonly token: number | null };
  readonly waitsIn: LockRef & { readonly key: string };
}

export interface Cycle {
  /** The same while the same holds and waits make it (a lock taken again is a new hold: a new cycle). */
  readonly id: string;
  /** In wait order from the least owner: each waits for the next, the last for the first. */
  readonly members: readonly CycleMember[];
  /** `edges[i]` is members[i]'s wait, for members[i + 1]. */
  readonly edges: readonly WaitEdge[];
}

/** An owner found waiting in `lock` (from a change set: the wait began then, or was there when first read). */
export interface WaitBegun {
  readonly owner: string;
  readonly lock: LockRef;
  /** The other locks it held at that moment. */
  readonly holding: readonly LockRef[];
}

/** The cycle of these edges (each one's `to` the next one's `from`), started from its least owner. */
export function cycleOf(edges: readonly WaitEdge[]): Cycle {
  let start = 0;
  edges.forEach((e, i) => {
    if (e.from < edges[start].from) start = i;
  });
  const ordered = [...edges.slice(start), ...edges.slice(0, start)];
  const members = ordered.map((e, i): CycleMember => {
    const into = ordered[(i + ordered.length - 1) % ordered.length];
    return { owner: e.from, holds: { ...into.lock, key: into.holder.key, token: into.holder.token }, waitsIn: { ...e.lock, key: e.waiter.key } };
  });
  return { id: ordered.map((e) => e.id).join(' '), members, edges: ordered };
}

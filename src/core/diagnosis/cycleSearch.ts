/**
 * The cycles of a wait-for graph through one new edge: every simple path back from its end to its start. Bounded, so
 * that a tangled graph (thousands of owners waiting on each other) costs a bounded walk, said as incomplete.
 */
/** What a search needs of an edge: the graph keeps its own kind (see waitFor.ts), shown as a WaitEdge once in a cycle. */
export interface Edge {
  readonly from: string;
  readonly to: string;
}

/** Owner → its edges (out of it, or into it), each one object while it lasts. */
export type Adjacency<E extends Edge> = Map<string, Set<E>>;

/** Cycles kept per connection at most: more is an incident to be read from the first ones. */
export const MAX_CYCLES = 100;
/** Owners visited per search at most. */
const MAX_STEPS = 20_000;

export interface Found<E extends Edge> {
  /** Each cycle's edges, `edge` first, each one's `to` the next one's `from`. */
  readonly cycles: E[][];
  readonly complete: boolean;
}

/**
 * The cycles through `edge` (from u to v): the simple paths from v to u. Only owners that can reach u are walked
 * (found backwards first), so a search in a graph with few cycles stays among the owners that wait on u.
 */
export function cyclesThrough<E extends Edge>(edge: E, out: Adjacency<E>, into: Adjacency<E>, room: number): Found<E> {
  const u = edge.from;
  // Most new waits are of an owner nobody waits for: no cycle, and nothing to walk or allocate.
  if (!into.has(u)) return NO_CYCLE;
  const reaching = new Set<string>().add(u);
  const queue = [u];
  let steps = 0;
  while (queue.length) {
    if (++steps > MAX_STEPS) return { cycles: [], complete: false };
    for (const e of into.get(queue.pop()!) ?? NO_EDGES) {
      if (!reaching.has(e.from)) {
        reaching.add(e.from);
        queue.push(e.from);
      }
    }
  }
  if (!reaching.has(edge.to)) return NO_CYCLE;
  if (room <= 0) return { cycles: [], complete: false };
  const cycles: E[][] = [];
  const path: E[] = [edge];
  const onPath = new Set<string>().add(u).add(edge.to);
  let complete = true;
  const walk = (owner: string): void => {
    for (const e of out.get(owner) ?? NO_EDGES) {
      if (!complete) return;
      if (++steps > MAX_STEPS || cycles.length >= room) {
        complete = false;
        return;
      }
      if (e.to === u) {
        cycles.push([...path, e]);
      } else if (!onPath.has(e.to) && reaching.has(e.to)) {
        path.push(e);
        onPath.add(e.to);
        walk(e.to);
        onPath.delete(e.to);
        path.pop();
      }
    }
  };
  walk(edge.to);
  return { cycles, complete };
}

const NO_CYCLE: Found<never> = { cycles: [], complete: true };
const NO_EDGES: ReadonlySet<never> = new Set();

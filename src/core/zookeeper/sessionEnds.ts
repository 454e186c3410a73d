/**
 * Whether the sessions of lock nodes that just went lived on: `cons` asked of every server right after the read that
 * found them gone. A session a server lists was there when its node went (a session never comes back): its client
 * deleted the node, released. One that no server lists, every server having answered, had no client connected, and a
 * client without a connection cannot delete a node: its session closed or expired with the node, ownerLost (or its
 * client released and went away between the delete and this read, which `cons` cannot tell apart). Where a server
 * refuses `cons` nothing is told (holdEndEvidence.ts).
 */
import { readConnections } from './cons';
import type { ZooKeeperServer } from './url';

/** Answers kept for the views that hear of the change a little later (coalesced); the oldest go first. */
const MAX_KEPT = 1000;
/** The change waits for the answer: a server that does not answer holds it up no longer than this (then: not told). */
const ASK_TIMEOUT_MS = 500;

/**
 * After a server refused `cons` (ZooKeeper 3.5+ answers only `srvr` unless told) or did not answer, none is asked again
 * for this long: each ask is a connection to every server, and the change it holds up would wait for the same refusal
 * (or the same timeout) at every node that goes. Ends meanwhile are not told, as they are not where `cons` is refused.
 */
export const REFUSED_PAUSE_MS = 60_000;

export class SessionEnds {
  private readonly lives = new Map<string, boolean>();
  private refusedAt = -Infinity;

  constructor(
    private readonly servers: readonly ZooKeeperServer[],
    private readonly now: () => number = Date.now,
  ) {}

  /** Asks whether `sessions` live (nothing, with none to ask about, or while the servers refuse to say). */
  async ask(sessions: readonly string[]): Promise<void> {
    if (sessions.length === 0) return;
    for (const s of sessions) this.lives.delete(s);
    if (this.now() - this.refusedAt < REFUSED_PAUSE_MS) return;
    const { bySession } = await readConnections(this.servers, ASK_TIMEOUT_MS);
    if (!bySession) this.refusedAt = this.now();
    else for (const s of sessions) this.lives.set(s, bySession.has(s));
    for (const s of [...this.lives.keys()].slice(0, Math.max(0, this.lives.size - MAX_KEPT))) this.lives.delete(s);
  }

  /** Whether the session lived at the last read that found one of its nodes gone; undefined: not asked, or not told. */
  lived(session: string): boolean | undefined {
    return this.lives.get(session);
  }
}

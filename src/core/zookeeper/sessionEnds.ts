/**
 * Whether the sessions of lock nodes that just went lived on: `cons` asked of every server right after the read that
 * found them gone. A session a server lists was there when its node went (a session never comes back): its client
 * deleted the node, released. One that no server lists, every server having answered, had no client connected, and a
 * client without a connection cannot delete a node: its session closed or expired with the node, ownerLost (or its
 * client released and went away between the delete and this read, which `cons` cannot tell apart). Where a server
 * refuses `cons` nothing is told (holdEndEvidence.ts).
 */
import { keyId } from '../keys';
import { endsWithOwner, members, type LockState } from '../lockState';
import { readConnections } from './cons';
import type { ZooKeeperServer } from './url';

/** Answers kept for the views that hear of the change a little later (coalesced); the oldest go first. */
const MAX_KEPT = 1000;
/** The change waits for the answer: a server that does not answer holds it up no longer than this (then: not told). */
const ASK_TIMEOUT_MS = 500;

/** The sessions of the session-owned members of `before` that are not in `after` (the same locks, read again). */
export function goneSessions(before: readonly LockState[], after: readonly LockState[]): string[] {
  const still = new Set(after.flatMap((l) => members(l).map((m) => `${l.id}\0${keyId(m.key)}`)));
  const gone = before.flatMap((l) => members(l).filter((m) => endsWithOwner(m) && !still.has(`${l.id}\0${keyId(m.key)}`)));
  return [...new Set(gone.map((m) => m.lease))];
}

export class SessionEnds {
  private readonly lives = new Map<string, boolean>();

  constructor(private readonly servers: readonly ZooKeeperServer[]) {}

  /** Asks whether `sessions` live (nothing, with none to ask about). */
  async ask(sessions: readonly string[]): Promise<void> {
    if (sessions.length === 0) return;
    const { bySession } = await readConnections(this.servers, ASK_TIMEOUT_MS);
    for (const s of sessions) {
      this.lives.delete(s);
      if (bySession) this.lives.set(s, bySession.has(s));
    }
    for (const s of [...this.lives.keys()].slice(0, Math.max(0, this.lives.size - MAX_KEPT))) this.lives.delete(s);
  }

  /** Whether the session lived at the last read that found one of its nodes gone; undefined: not asked, or not told. */
  lived(session: string): boolean | undefined {
    return this.lives.get(session);
  }
}

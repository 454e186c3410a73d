/**
 * The members LockLens itself is ending in this process (Force Release, Revoke Lease: what its audit records), so that
 * their ends read `forceReleased`: the store tells a force release from a release no more than it says who deleted a
 * key. A mark is taken before the request is sent (the watch may report the end before the request returns) and
 * dropped if the request fails; it names a member by what the views know it by (an etcd lease, another store's owner).
 */

/** How long after its mark an end counts as LockLens's own: a polling watch sees it at its next read. */
export const OWN_END_MS = 60_000;
const MAX_MARKS = 100;

interface Mark {
  readonly connection: string;
  readonly who: string;
  readonly at: number;
}

export class OwnEnds {
  private marks: Mark[] = [];

  /** LockLens is about to end `who` (a lease or an owner) on `connection`; call the result if the request failed. */
  begin(connection: string, who: string, now = Date.now()): () => void {
    const mark = { connection, who, at: now };
    this.marks = [...this.marks.filter((m) => now - m.at <= OWN_END_MS), mark].slice(-MAX_MARKS);
    return () => (this.marks = this.marks.filter((m) => m !== mark));
  }

  /** Whether a member of `connection` with this lease or owner that ended `now` was ended by LockLens. */
  ended(connection: string, lease: string, owner: string, now = Date.now()): boolean {
    return this.marks.some((m) => m.connection === connection && now - m.at <= OWN_END_MS && (m.who === lease || m.who === owner) && m.who !== '');
  }
}

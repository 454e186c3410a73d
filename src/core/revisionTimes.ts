/**
 * When a store's revisions (etcd's) happened, as far as LockLens saw them live: the store keeps no time, and the
 * history places a revision in time with it.
 */

/** [revision, epoch ms] pairs seen live, in revision order. */
export type RevisionTimes = [number, number][];

const MAX_REVISION_TIMES = 4096;
/**
 * Two change sets at most this far apart bracket the time of every revision between them: the watch delivers within
 * milliseconds, so an unseen revision in between happened in that interval (placed at its end).
 */
const REVISION_BRACKET_MS = 1000;

export function noteRevision(c: { revisionTimes: RevisionTimes }, revision: number, now: number): void {
  const last = c.revisionTimes[c.revisionTimes.length - 1];
  if (last && last[0] === revision) return;
  // Revisions going back: the store was wiped or restored, and its old revisions name other events now.
  if (last && last[0] > revision) c.revisionTimes = c.revisionTimes.filter(([r]) => r < revision);
  c.revisionTimes.push([revision, now]);
  if (c.revisionTimes.length > MAX_REVISION_TIMES) c.revisionTimes.splice(0, c.revisionTimes.length - MAX_REVISION_TIMES);
}

/**
 * When `revision` happened, where LockLens saw it live: a change set at that revision, or two change sets close
 * enough together around it. Undefined otherwise: the store keeps no time.
 */
export function timeOfRevision(times: readonly [number, number][], revision: number): number | undefined {
  // The first pair at or after `revision` (they are in revision order).
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid][0] < revision) lo = mid + 1;
    else hi = mid;
  }
  const i = lo;
  if (i === times.length) return undefined;
  const [r, at] = times[i];
  if (r === revision) return at;
  return i > 0 && at - times[i - 1][1] <= REVISION_BRACKET_MS ? at : undefined;
}

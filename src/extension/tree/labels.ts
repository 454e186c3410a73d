import { displayKey, hasPrefix, isUtf8 } from '../../core/keys';
import { isElection, isSingleKey, type LockMember, type LockState } from '../../core/lockState';

/** Long owners (a Redisson `<uuid>:<thread>`, a 32-hex token) cut to fit a row; the tooltip has them whole. */
export function shorten(text: string, max = 24): string {
  return text.length > max ? text.slice(0, max - 1) + '…' : text;
}

/** The lock name below its prefix ("jobs" under "/locks/"), whole when the prefix is the lock's own. */
export function shortName(name: Buffer, prefix: string): string {
  const p = Buffer.from(prefix);
  let rest = hasPrefix(name, p) && name.length > p.length ? name.subarray(p.length) : name;
  // Under a path written without its last slash (a ZooKeeper path: /app), the rest starts with one: /app/jobs is jobs.
  if (rest !== name && rest[0] === 0x2f && rest.length > 1) rest = rest.subarray(1);
  return displayKey(rest);
}

/** Longest proposal shown as an election member's label. */
const MAX_PROPOSAL_LABEL = 40;

/**
 * A single key by its lock's name under the prefix (a lock-table row's key is the row's name alone, its lock
 * `<table>/<row>`); an election member by its proposal (what `etcdctl elect` prints), when that is text; a queue
 * member by the last segment of its key (the lease, for Go and etcdctl).
 */
export function memberLabel(lock: LockState, member: LockMember, prefix: string): string {
  if (isSingleKey(lock)) return shortName(lock.name, prefix);
  if (isElection(lock) && member.valueSize > 0 && isUtf8(member.valuePreview)) {
    const proposal = member.valuePreview.toString('utf8').replace(/\s+/g, ' ');
    return proposal.length > MAX_PROPOSAL_LABEL ? proposal.slice(0, MAX_PROPOSAL_LABEL - 1) + '…' : proposal;
  }
  return displayKey(member.key.subarray(member.key.lastIndexOf(0x2f) + 1));
}

/** Our own sentences can hold a lease ID or a setting name: keep markdown from reading `_` or `*` in them. */
export function escapeOwn(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-!<>]/g, '\\$&');
}

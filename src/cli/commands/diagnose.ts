import type { Capabilities } from '../../core/backend';
import { breakingChoices } from '../../core/diagnosis/breaking';
import type { ConfirmedCycle } from '../../core/diagnosis/detector';
import type { Inversion } from '../../core/diagnosis/inversions';
import { diagnoseTwoReads, type Read, type TwoReadsFindings } from '../../core/diagnosis/twoReads';
import { normalizePrefixes } from '../../core/keys';
import { sleep } from '../../core/sleep';
import { CONNECTION_HELP, CONNECTION_OPTIONS, parse } from '../options';
import type { Command } from './command';

/** Between the two reads: a cycle in both is no stale read. */
const REREAD_MS = 1000;
/** The exit code of a deadlock found (README's exit codes). */
export const DEADLOCK_EXIT = 10;

export const diagnose: Command = {
  name: 'diagnose',
  summary: 'find deadlocks across locks (owners each holding what another waits for), lock-order inversions, short TTLs',
  help: `Usage: locklens diagnose [--prefix P ...] [--json]

Reads the locks under the prefixes twice, ${REREAD_MS / 1000} s apart, and says:
  - deadlocks: owners (an etcd lease, a ZooKeeper session, a Redisson thread, a database connection) each holding a
    lock another waits in, round to the first; only a cycle present in both reads, made of the same holds and waits,
    is one. For each: what force-releasing each member's hold would free, and the 'locklens unlock' line to run.
    Only locks with a visible queue take part, with owners the store names across locks: a Redis token lock (its
    owner is its token) or a lock-table row is never guessed into one, and waits no store shows (a process waiting
    for its child) are not seen
  - inversions: two locks seen taken in both orders (an owner held A while it waited for B, another B while it
    waited for A) that are not yet a deadlock
  - TTLs: a hold that has run most of the TTL it was granted with nothing renewing it (a ShedLock row's lock_until
    − locked_at). Holds measured against their TTL over time need a watch that lasts: VS Code's lock statistics, or
    locklens serve
Exits 0 when no deadlock is found, ${DEADLOCK_EXIT} when one is (inversions and TTLs are warnings).

  --prefix P    a key prefix to read (repeatable; '' reads everything)
  --json        one JSON document: {"deadlocks": [{"since", "members": [{"owner", "holds": {"lock", "key",
                "token"}, "waitsIn": {"lock", "key"}}], "breaking": [{"owner", "lock", "key", "unblocks", "letsIn",
                "next", "text", "command"}]}], "inversions": [{"locks": [A, B], "first": {"owner", "held",
                "waitedFor", "at"}, "second": {…}}], "ttlFits": [{"lock", "ttlSeconds", "heldSeconds",
                "remainingSeconds", "text"}], "truncated"}; times in ISO 8601

${CONNECTION_HELP}`,
  options: { prefix: { type: 'string', multiple: true }, json: { type: 'boolean' } },
  async run(args, connect, out) {
    const { values } = parse(args, this);
    const prefixes = normalizePrefixes(((values.prefix as string[] | undefined) ?? ['']).map((p) => Buffer.from(p)));
    const backend = await connect(values);
    let found: TwoReadsFindings;
    let locks: number;
    try {
      const read = async (): Promise<Read> => {
        const listing = await backend.list(prefixes);
        return { locks: listing.locks, lease: (id) => listing.lease(id), at: Date.now() };
      };
      const first = await read();
      await sleep(REREAD_MS);
      const second = await read();
      locks = second.locks.length;
      found = diagnoseTwoReads(first, second);
    } finally {
      backend.close();
    }
    const who = ownerWords(backend.capabilities.owner);
    const unlockLine = (lock: string) => ['locklens', 'unlock', lock, '--force', ...connectionArgs(values)].map(shellWord).join(' ');
    if (values.json) {
      out.stdout(JSON.stringify(asJson(found, who, unlockLine), null, 2));
    } else {
      out.stdout(asText(found, who, unlockLine, locks));
    }
    return found.deadlocks.length ? DEADLOCK_EXIT : 0;
  },
};

type Who = (owner: string) => string;

function asJson(found: TwoReadsFindings, who: Who, unlockLine: (lock: string) => string): object {
  const at = (ms: number) => new Date(ms).toISOString();
  return {
    deadlocks: found.deadlocks.map((c) => ({
      since: at(c.since),
      members: c.members.map((m) => ({ owner: m.owner, holds: { lock: m.holds.name, key: m.holds.key, token: m.holds.token }, waitsIn: { lock: m.waitsIn.name, key: m.waitsIn.key } })),
      breaking: breakingChoices(c, who).map((b) => ({ owner: b.owner, lock: b.lock.name, key: b.key, unblocks: b.unblocks, letsIn: b.letsIn, next: b.next, text: b.text, command: unlockLine(b.lock.name) })),
    })),
    inversions: found.inversions.map((i) => ({
      locks: i.locks.map((l) => l.name),
      first: { owner: i.first.owner, held: i.first.held.name, waitedFor: i.first.waitedFor.name, at: at(i.first.at) },
      second: { owner: i.second.owner, held: i.second.held.name, waitedFor: i.second.waitedFor.name, at: at(i.second.at) },
    })),
    ttlFits: found.ttlFits.map((f) => ({ lock: f.lock.name, ttlSeconds: f.ttlSeconds, heldSeconds: f.heldSeconds, remainingSeconds: f.remainingSeconds, text: f.text })),
    truncated: found.truncated,
  };
}

function asText(found: TwoReadsFindings, who: Who, unlockLine: (lock: string) => string, locks: number): string {
  const lines: string[] = [];
  for (const c of found.deadlocks) lines.push(...deadlockText(c, who, unlockLine), '');
  for (const i of found.inversions) lines.push(inversionText(i, who));
  for (const f of found.ttlFits) lines.push(`ttl: ${f.lock.name}: ${f.text}`);
  if (found.truncated) lines.push('note: the wait-for graph is too tangled to walk whole: there may be more deadlocks than these');
  if (!found.deadlocks.length) lines.push(`no deadlock among ${locks} lock${locks === 1 ? '' : 's'} (read twice, ${REREAD_MS / 1000} s apart)`);
  lines.push('note: holds measured against their TTL over time need a watch that lasts: VS Code\'s lock statistics, or locklens serve');
  return lines.join('\n');
}

function deadlockText(c: ConfirmedCycle, who: Who, unlockLine: (lock: string) => string): string[] {
  return [
    `deadlock: ${c.members.length} owners each wait for a lock another holds (seen in both reads)`,
    ...c.members.map((m) => `  ${who(m.owner)} holds ${m.holds.name} (${m.holds.key}) and waits in ${m.waitsIn.name}`),
    '  to break it, force-release one hold (its owner is not told, and may still believe it holds the lock):',
    ...breakingChoices(c, who).flatMap((b) => [`    ${b.text}`, `      ${unlockLine(b.lock.name)}`]),
  ];
}

function inversionText(i: Inversion, who: Who): string {
  const time = (ms: number) => new Date(ms).toISOString();
  const said = (e: Inversion['first']) => `${who(e.owner)} held ${e.held.name} when it began waiting for ${e.waitedFor.name} (${time(e.at)})`;
  return `inversion: ${i.locks[0].name} and ${i.locks[1].name} are taken in both orders, a deadlock waiting to happen: ${said(i.first)}; ${said(i.second)}`;
}

/** An owner as the store names it: "lease 694d…", "session 1000…", "connection 4242", "owner <uuid>:1". */
function ownerWords(kind: Capabilities['owner']): Who {
  const word: Record<Capabilities['owner'], string> = { lease: 'lease', session: 'session', connection: 'connection', token: 'owner' };
  return (owner) => `${word[kind]} ${owner}`;
}

/** The connection flags given, to repeat on the unlock line; a password given inline is left out. */
function connectionArgs(values: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const name of Object.keys(CONNECTION_OPTIONS)) {
    const v = values[name];
    if (name === 'help' || v === undefined || v === false) continue;
    if (v === true) out.push(`--${name}`);
    else for (const item of Array.isArray(v) ? v : [v]) out.push(`--${name}`, name === 'user' ? String(item).split(':')[0] : String(item));
  }
  return out;
}

/** A word as a POSIX shell reads it back. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

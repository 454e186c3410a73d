import { LockLensError } from '../../core/errors';
import type { HoldEnd, LockHistory } from '../../core/history';
import { displayKey } from '../../core/keys';
import { keyJson } from '../lockJson';
import { CONNECTION_HELP, parse } from '../options';
import type { Command } from './command';

export const history: Command = {
  name: 'history',
  summary: "replay a lock's holds from etcd's history: who held it, from which revision to which, how it ended",
  help: `Usage: locklens history NAME [--single] [--json]

Replays the lock NAME from etcd's history (its MVCC revisions, back to the last compaction): every hold it had,
oldest first, with its key, lease, fencing token, the revision it began and the one it ended at, how it ended, and
how many were waiting when it began. Reads the queue NAME/… (Go Mutex, etcdctl lock, elections, UUID recipes), or
with --single the one key NAME. A hold already in place where compacted history begins is marked so. Redis keeps no
history: there, the VS Code Lock History view records what LockLens sees.

How a hold ended, from its lease now (etcd's history records the delete, never why):
  released            its key was deleted while its lease lives on, or it had no lease (an unlock, a delete)
  revoked or expired  its lease is gone: the key went with it (a revoke, an expiry), or was unlocked and the
                      lease ended since (etcdctl lock leaves its lease to run out, 10 s after it exits);
                      history cannot tell these apart

  --single      the single key NAME (etcd3 Lock, python-etcd3), not the queue NAME/…
  --json        one JSON document: {"lock", "fromRevision", "toRevision", "compactedAt", "holds": [{"key", "lease",
                "token", "acquiredRevision", "beforeHistory", "endedRevision", "end", "waiters"}]}; endedRevision
                and end are null while a hold holds; end is "released", "revokedOrExpired" or null (lease not
                asked); waiters are keys; compactedAt is null unless compaction cut the history short

${CONNECTION_HELP}`,
  options: { single: { type: 'boolean' }, json: { type: 'boolean' } },
  async run(args, connect, out) {
    const { values, positionals } = parse(args, this.options, 1);
    const backend = await connect(values);
    const stop = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => stop.abort(new LockLensError('CANCELLED', `interrupted by ${signal}`));
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
    signals.forEach((s) => process.on(s, onSignal));
    try {
      if (!backend.history) {
        throw new LockLensError('INVALID_ARGUMENT', `${backend.kind} keeps no history of its locks: locklens history replays etcd's revisions`);
      }
      const replayed = await backend.history.replay(Buffer.from(positionals[0]), { single: values.single === true, signal: stop.signal });
      out.stdout(values.json ? JSON.stringify(historyJson(replayed), null, 2) : historyText(replayed, values.single === true));
      return 0;
    } finally {
      signals.forEach((s) => process.off(s, onSignal));
      backend.close();
    }
  },
};

/** `locklens history --json`: the documented shape. */
export function historyJson(h: LockHistory) {
  return {
    lock: displayKey(h.name),
    fromRevision: h.fromRevision,
    toRevision: h.toRevision,
    compactedAt: h.compactedAt,
    holds: h.holds.map((hold) => ({
      ...keyJson(hold.key),
      lease: hold.lease,
      token: hold.token,
      acquiredRevision: hold.acquiredRevision,
      beforeHistory: hold.beforeHistory,
      endedRevision: hold.endedRevision,
      end: hold.end,
      waiters: hold.waiters.map(displayKey),
    })),
  };
}

const END_TEXT: Record<HoldEnd, string> = { released: 'released', revokedOrExpired: 'revoked or expired', expired: 'expired' };

/** What was read, then one line per hold, oldest first. */
export function historyText(h: LockHistory, single: boolean): string {
  const what = single ? `the key ${displayKey(h.name)}` : `the queue ${displayKey(h.name)}/…`;
  const compacted = h.compactedAt === null ? '' : ` (history before revision ${h.compactedAt} was compacted)`;
  const heading = `${what}: revisions ${h.fromRevision} to ${h.toRevision} read${compacted}, ${h.holds.length} hold${h.holds.length === 1 ? '' : 's'}`;
  const lines = h.holds.map((hold) => {
    const span = hold.endedRevision === null ? `holding since rev ${hold.acquiredRevision}` : `rev ${hold.acquiredRevision} → ${hold.endedRevision}`;
    return [
      `  ${displayKey(hold.key)}`,
      `lease ${hold.lease || '(none)'}`,
      `token ${hold.token}`,
      hold.beforeHistory ? `${span} (held before history)` : span,
      ...(hold.endedRevision === null ? [] : [hold.end ? END_TEXT[hold.end] : 'end unknown (lease not answered)']),
      `${hold.waiters.length} waiting`,
    ].join('  ');
  });
  return [heading, ...lines].join('\n');
}

import { LockLensError } from '../../core/errors';
import { MAX_REPLAY_REVISIONS, REPLAY_WAITERS_KEPT, type LockHistory } from '../../core/history';
import { displayKey, isUtf8 } from '../../core/keys';
import { groupDigits } from '../../shared/groupDigits';
import { HOLD_END_TEXT } from '../../shared/holdEnds';
import { keyJson } from '../lockJson';
import { CONNECTION_HELP, parse, parsePositiveInt } from '../options';
import { checkReaderFlags, printRecordedHistory, RECORDED_HELP, RECORDED_OPTIONS } from '../recordedHistory';
import type { Command } from './command';

export const history: Command = {
  name: 'history',
  summary: "replay a lock's holds from etcd's history, or read those locklens serve recorded (--data), for any store",
  help: `Usage: locklens history NAME [--single] [--from-revision N | --all] [--json]
       locklens history NAME --data DIR [--connection C] [--since AGE|TIME] [--json]

Replays the lock NAME from etcd's history (its MVCC revisions, back to the last compaction): every hold it had,
oldest first, with its key, lease, fencing token, the revision it began and the one it ended at, how it ended, and
how many were waiting when it began. Reads the queue NAME/… (Go Mutex, etcdctl lock, elections, UUID recipes), or
with --single the one key NAME. The holder at each revision is the one a Go concurrency.Mutex on NAME lets in: the
lowest create revision of every key under NAME/, a nested lock's keys included. A hold already in place where the
history read begins is marked so. Redis, ZooKeeper and the SQL databases keep no history: locklens serve records
it, and --data reads that (below).

How a hold ended, from its lease now (etcd's history records the delete, never why):
  released            its key was deleted while its lease lives on, or it had no lease (an unlock, a delete)
  revoked or expired  its lease is gone: the key went with it (a revoke, an expiry), or was unlocked and the
                      lease ended since (etcdctl lock leaves its lease to run out, 10 s after it exits);
                      history cannot tell these apart

etcd serves history by scanning every revision since the one asked for, of every key, while its writes wait: when
it keeps more than ${groupDigits(MAX_REPLAY_REVISIONS)} revisions, say where to start (--from-revision) or that all of them are meant (--all).

  --single             the single key NAME (etcd3 Lock, python-etcd3), not the queue NAME/…
  --from-revision N    start at revision N: the keys present then are read as they were (their holder held before),
                       older history is not read
  --all                read every revision etcd keeps, however many
  --json               one JSON document: {"lock", "fromRevision", "toRevision", "compactedAt", "skippedBefore",
                       "endedOnSilence", "holds": [{"key", "lease", "token", "acquiredRevision", "beforeHistory",
                       "endedRevision", "end", "waiters", "waiterCount"}]}; endedRevision and end are null while a
                       hold holds; end is "released", "revokedOrExpired" or null (lease not asked); waiters are the
                       first ${REPLAY_WAITERS_KEPT} keys waiting, waiterCount all of them; compactedAt is null unless compaction cut the
                       history short, skippedBefore null unless --from-revision did; endedOnSilence is true when etcd
                       sent no event and could not confirm it had none (see below). A name or key that is not UTF-8
                       also comes as base64: lockBase64, keyBase64, and waitersBase64 (every waiter, in order)

etcd before 3.4.31 and 3.5.13 cannot say when it has sent all of a lock's history: a lock with no event at all is
taken for one with none after a quiet time that grows with the revisions etcd must scan (a second, plus 0.2 ms a
revision), and the output says so.

${RECORDED_HELP}

${CONNECTION_HELP}`,
  argument: "the lock's NAME",
  options: { single: { type: 'boolean' }, json: { type: 'boolean' }, 'from-revision': { type: 'string' }, all: { type: 'boolean' }, ...RECORDED_OPTIONS },
  async run(args, connect, out) {
    const { values, positionals } = parse(args, this);
    checkReaderFlags(values);
    if (values.data !== undefined) return printRecordedHistory(positionals[0], values, out);
    const from = values['from-revision'];
    if (from !== undefined && values.all) throw new LockLensError('INVALID_ARGUMENT', '--from-revision and --all say two things: give one');
    const fromRevision = from === undefined ? undefined : parsePositiveInt(from as string, '--from-revision', 1);
    const backend = await connect(values);
    const stop = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => stop.abort(new LockLensError('CANCELLED', `interrupted by ${signal}`));
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
    signals.forEach((s) => process.on(s, onSignal));
    try {
      if (!backend.history) {
        throw new LockLensError('INVALID_ARGUMENT', `${backend.kind} keeps no history of its locks: locklens history replays etcd's revisions`);
      }
      const replayed = await backend.history.replay(Buffer.from(positionals[0]), {
        single: values.single === true,
        signal: stop.signal,
        fromRevision,
        maxRevisions: values.all ? Infinity : undefined,
      });
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
  const lock = keyJson(h.name);
  return {
    lock: lock.key,
    ...(lock.keyBase64 === undefined ? {} : { lockBase64: lock.keyBase64 }),
    fromRevision: h.fromRevision,
    toRevision: h.toRevision,
    compactedAt: h.compactedAt,
    skippedBefore: h.skippedBefore,
    endedOnSilence: h.endedOnSilence,
    holds: h.holds.map((hold) => ({
      ...keyJson(hold.key),
      lease: hold.lease,
      token: hold.token,
      acquiredRevision: hold.acquiredRevision,
      beforeHistory: hold.beforeHistory,
      endedRevision: hold.endedRevision,
      end: hold.end,
      waiters: hold.waiters.map(displayKey),
      // Beside the text, as keyBase64 is beside a key: the exact bytes, when any waiter's are not UTF-8.
      ...(hold.waiters.every(isUtf8) ? {} : { waitersBase64: hold.waiters.map((w) => w.toString('base64')) }),
      waiterCount: hold.waiterCount,
    })),
  };
}

/** What was read, then one line per hold, oldest first. */
export function historyText(h: LockHistory, single: boolean): string {
  const what = single ? `the key ${displayKey(h.name)}` : `the queue ${displayKey(h.name)}/…`;
  const cut =
    h.compactedAt !== null
      ? ` (history before revision ${h.compactedAt} was compacted)`
      : h.skippedBefore !== null
        ? ` (history before revision ${h.skippedBefore} not read: --from-revision)`
        : '';
  const heading = `${what}: revisions ${h.fromRevision} to ${h.toRevision} read${cut}, ${h.holds.length} hold${h.holds.length === 1 ? '' : 's'}`;
  const silence = h.endedOnSilence
    ? [`etcd sent no event of it and cannot confirm it had none (etcd before 3.4.31 or 3.5.13, or a proxy): taken as none after a quiet time`]
    : [];
  const lines = h.holds.map((hold) => {
    const span = hold.endedRevision === null ? `holding since rev ${hold.acquiredRevision}` : `rev ${hold.acquiredRevision} → ${hold.endedRevision}`;
    return [
      `  ${displayKey(hold.key)}`,
      `lease ${hold.lease || '(none)'}`,
      `token ${hold.token}`,
      hold.beforeHistory ? `${span} (held before history)` : span,
      ...(hold.endedRevision === null ? [] : [hold.end ? HOLD_END_TEXT[hold.end] : 'end unknown (lease not answered)']),
      `${hold.waiterCount} waiting`,
    ].join('  ');
  });
  return [heading, ...silence, ...lines].join('\n');
}

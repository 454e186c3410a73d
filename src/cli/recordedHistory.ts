/**
 * `locklens history NAME --data DIR`: the holds `locklens serve` recorded of a lock, for every store, in the shape of
 * etcd's replay where the two can be the same (`lock`, `holds`, each hold's `key`, `token`, `end`), with times where
 * the replay has revisions.
 */
import { LockLensError } from '../core/errors';
import { duration } from '../core/incidentReport';
import { displayKey } from '../core/keys';
import { HistoryStore } from '../core/recording/historyStore';
import type { RecordedHold } from '../core/recording/recordedHold';
import { parseSince } from '../core/recording/spans';
import { HOLD_END_TEXT } from '../shared/holdEnds';
import type { Output } from './commands/command';

export const RECORDED_HELP = `With --data, it reads instead the history locklens serve recorded in the data directory DIR (its config's data),
for any store: every hold it saw of the lock NAME, oldest first, with who held it (key, owner, fencing token), from
when to when, how it ended, and how long it had waited. An etcd lock's recorded holds are read this way too.

  --data DIR           the recorded history in DIR (history.db)
  --connection C       only holds on the connection named C in serve's config (all of them by default)
  --since AGE|TIME     only holds not ended by then: an age back from now (90s, 30m, 6h, 7d) or an ISO 8601 time
  --json               one JSON document: {"lock", "dataDir", "connection", "since", "holds": [{"connection", "store",
                       "key", "owner", "token", "acquiredAt", "acquiredExact", "endedAt", "endedExact", "end",
                       "forceReleasedBy", "waitedMs"}]}; times are ISO 8601; endedAt, endedExact and end are null
                       while a hold holds; acquiredExact is false for a hold already held when serve first saw it,
                       endedExact false for one found gone (a poll, a restart of serve); end is "released",
                       "expired", "forceReleased" (locklens unlock --force --data DIR ended it; forceReleasedBy says
                       who), "ownerLost" (its session or connection ended), "revokedOrExpired" (its etcd lease went,
                       revoked or expired, which nothing told apart) or null (the store could not tell)`;

/** Flags only the recorded history reads; etcd's replay's flags, which it does not. */
export const RECORDED_OPTIONS = { data: { type: 'string' }, connection: { type: 'string' }, since: { type: 'string' } } as const;
const REPLAY_ONLY = ['single', 'from-revision', 'all'] as const;

/** Refuses flags of one reader given to the other. */
export function checkReaderFlags(values: Record<string, unknown>): void {
  const recorded = values.data !== undefined;
  const misplaced = recorded ? REPLAY_ONLY.filter((f) => values[f] !== undefined) : (['connection', 'since'] as const).filter((f) => values[f] !== undefined);
  if (misplaced.length === 0) return;
  const flags = misplaced.map((f) => `--${f}`).join(' and ');
  throw new LockLensError(
    'INVALID_ARGUMENT',
    recorded ? `${flags}: etcd's replay's, not the recorded history's (--data)` : `${flags}: the recorded history's: give --data DIR`,
  );
}

export async function printRecordedHistory(name: string, values: Record<string, unknown>, out: Output): Promise<number> {
  const dir = values.data as string;
  const connection = values.connection as string | undefined;
  const since = values.since === undefined ? undefined : parseSince(values.since as string, Date.now());
  const lock = displayKey(Buffer.from(name));
  const store = await HistoryStore.openReader(dir);
  try {
    const holds = await store.holds({ lock, connection, since });
    const doc = { lock, dataDir: dir, connection: connection ?? null, since: since === undefined ? null : new Date(since).toISOString(), holds };
    out.stdout(values.json ? JSON.stringify(recordedJson(doc), null, 2) : recordedText(doc));
    return 0;
  } finally {
    store.close();
  }
}

interface RecordedDoc {
  readonly lock: string;
  readonly dataDir: string;
  readonly connection: string | null;
  readonly since: string | null;
  readonly holds: readonly RecordedHold[];
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function recordedJson(d: RecordedDoc) {
  return {
    lock: d.lock,
    dataDir: d.dataDir,
    connection: d.connection,
    since: d.since,
    holds: d.holds.map((h) => ({
      connection: h.connection,
      store: h.store,
      key: h.key,
      owner: h.owner,
      token: h.token,
      acquiredAt: iso(h.acquiredAt),
      acquiredExact: h.acquiredExact,
      endedAt: iso(h.endedAt),
      endedExact: h.endedExact,
      end: h.end,
      forceReleasedBy: h.forceReleasedBy,
      waitedMs: h.waitedMs,
    })),
  };
}

/** What was read, then one line per hold, oldest first (as etcd's replay prints its holds). */
function recordedText(d: RecordedDoc): string {
  const scope = [d.connection === null ? '' : `, connection ${d.connection}`, d.since === null ? '' : `, since ${d.since}`].join('');
  const heading = `the lock ${d.lock}: recorded in ${d.dataDir}${scope}, ${d.holds.length} hold${d.holds.length === 1 ? '' : 's'}`;
  const connections = new Set(d.holds.map((h) => h.connection));
  const lines = d.holds.map((h) => {
    const from = `${iso(h.acquiredAt)}${h.acquiredExact ? '' : ' (held when first seen)'}`;
    const span = h.endedAt === null ? `holding since ${from}` : `${from} → ${iso(h.endedAt)}${h.endedExact ? '' : ' (found gone)'} (${duration(h.endedAt - h.acquiredAt)})`;
    const end = h.end === 'forceReleased' && h.forceReleasedBy ? `force-released by ${h.forceReleasedBy}` : h.end ? HOLD_END_TEXT[h.end] : 'end unknown';
    return [
      `  ${h.key}`,
      `owner ${h.owner || '(none)'}`,
      `token ${h.token ?? 'none'}`,
      span,
      ...(h.endedAt === null ? [] : [end]),
      ...(h.waitedMs === null ? [] : [`waited ${duration(h.waitedMs)}`]),
      ...(connections.size > 1 ? [`on ${h.connection}`] : []),
    ].join('  ');
  });
  return [heading, ...lines].join('\n');
}

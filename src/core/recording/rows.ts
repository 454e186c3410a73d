/**
 * The statements behind the recorded history: a lock event becomes a row begun or completed, a force release is
 * matched with the hold it ended, and readers get holds back. Each runs inside a transaction its caller opened.
 */
import type { LockEvent } from '../lockEventTypes';
import type { HoldEnd } from '../../shared/holdEnds';
import type { LockKind } from '../lockState';
import type { ForceReleaseNote, HoldQuery, MatchedForceRelease, RecordedHold } from './recordedHold';
import type { SqliteFile } from './sqliteFile';

/** What the recorder writes, in the order it learned them. */
export type Pending =
  | { readonly type: 'event'; readonly store: string; readonly event: LockEvent }
  /** The connection's watch has read the store: rows an earlier run left open and this one did not see are over. */
  | { readonly type: 'caughtUp'; readonly connection: string; readonly at: number };

/**
 * A force release ends the hold of its member that ends from a moment before it (clocks of two processes, and the
 * note is taken before the release is sent) to this long after (a polling watch sees it at its next read).
 */
const MATCH_BEFORE_MS = 1_000;
const MATCH_AFTER_MS = 60_000;
const MAX_UNMATCHED = 100;

const SAME_MEMBER = 'connection = :connection AND lock_id = :lockId AND member = :member AND owner = :owner AND token IS :token AND ended_at IS NULL';

export function applyPending(f: SqliteFile, p: Pending, run: number): void {
  if (p.type === 'caughtUp') {
    for (const table of ['holds', 'waits']) {
      f.statement(`UPDATE ${table} SET ended_at = :at, ended_exact = 0 WHERE connection = :connection AND ended_at IS NULL AND run < :run`).run({
        ':at': p.at,
        ':connection': p.connection,
        ':run': run,
      });
    }
    return;
  }
  const e = p.event;
  const who = {
    ':connection': e.connection,
    ':lockId': e.lockId,
    ':member': e.member.key,
    ':owner': e.member.owner,
    ':token': e.member.token,
  };
  const row = { ...who, ':store': p.store, ':lock': e.lock, ':kind': e.kind, ':run': run };
  const table = e.type === 'holdStarted' || e.type === 'holdEnded' ? 'holds' : 'waits';
  switch (e.type) {
    case 'holdStarted':
    case 'waitStarted': {
      // One found already there (a first read, a reconnect) may be a row still open from before: it goes on.
      if (!e.exact && f.statement(`UPDATE ${table} SET run = :run WHERE ${SAME_MEMBER}`).run({ ...who, ':run': run }).changes > 0) return;
      if (e.type === 'holdStarted') {
        f.statement(
          `INSERT INTO holds (connection, store, lock_id, lock, kind, member, owner, token, started_at, started_exact, run, waited_ms, handoff)
           VALUES (:connection, :store, :lockId, :lock, :kind, :member, :owner, :token, :at, :exact, :run, :waited, :handoff)`,
        ).run({ ...row, ':at': e.at, ':exact': e.exact, ':waited': e.waitedMs, ':handoff': e.handoff });
      } else {
        f.statement(
          `INSERT INTO waits (connection, store, lock_id, lock, kind, member, owner, token, started_at, started_exact, run)
           VALUES (:connection, :store, :lockId, :lock, :kind, :member, :owner, :token, :at, :exact, :run)`,
        ).run({ ...row, ':at': e.at, ':exact': e.exact });
      }
      return;
    }
    case 'holdEnded':
    case 'waitEnded': {
      const outcome = e.type === 'holdEnded' ? { column: 'how', value: e.how } : { column: 'granted', value: e.granted };
      const spanMs = e.type === 'holdEnded' ? e.heldMs : e.waitedMs;
      const ended = f
        .statement(`UPDATE ${table} SET ended_at = :at, ended_exact = :exact, ${outcome.column} = :outcome WHERE id = (SELECT id FROM ${table} WHERE ${SAME_MEMBER} ORDER BY id DESC LIMIT 1)`)
        .run({ ...who, ':at': e.at, ':exact': e.exact, ':outcome': outcome.value }).changes;
      if (ended > 0) return;
      // Its start is not recorded (dropped while the disk was full, or pruned): the end is, with the start it implies.
      const columns = table === 'holds' ? 'handoff, how' : 'granted';
      const values = table === 'holds' ? '0, :outcome' : ':outcome';
      f.statement(
        `INSERT INTO ${table} (connection, store, lock_id, lock, kind, member, owner, token, started_at, started_exact, ended_at, ended_exact, run, ${columns})
         VALUES (:connection, :store, :lockId, :lock, :kind, :member, :owner, :token, :started, 0, :at, :exact, :run, ${values})`,
      ).run({ ...row, ':started': spanMs === null ? e.at : e.at - spanMs, ':at': e.at, ':exact': e.exact, ':outcome': outcome.value });
      return;
    }
  }
}

export function insertForceRelease(f: SqliteFile, note: ForceReleaseNote): void {
  f.statement('INSERT INTO force_releases (connection, lock, member, owner, by, at) VALUES (:connection, :lock, :member, :owner, :by, :at)').run({
    ':connection': note.connection,
    ':lock': note.lock,
    ':member': note.member,
    ':owner': note.owner,
    ':by': note.by,
    ':at': note.at,
  });
}

/**
 * Gives each force release not yet matched (the latest MAX_UNMATCHED: a note that never matches, of a connection
 * serve does not watch, stays unmatched until it ages out) the hold it ended: of its member and owner (a Redis lock's
 * key is the same for every hold; its token tells them apart), begun before it, ended in its window; and marks that
 * hold force-released. Run by whichever of the two writes comes second (the recorder's end of the hold,
 * or unlock's note), so the order they commit in does not matter.
 */
export function matchForceReleases(f: SqliteFile): void {
  const matched = f
    .statement(
      `UPDATE force_releases SET hold_id = (
         SELECT h.id FROM holds h
         WHERE h.connection = force_releases.connection AND h.lock = force_releases.lock AND h.member = force_releases.member
           AND h.owner = force_releases.owner AND h.started_at <= force_releases.at
           AND h.ended_at BETWEEN force_releases.at - :before AND force_releases.at + :after
           AND NOT EXISTS (SELECT 1 FROM force_releases o WHERE o.hold_id = h.id)
         ORDER BY h.ended_at LIMIT 1)
       WHERE id IN (SELECT id FROM force_releases WHERE hold_id IS NULL ORDER BY at DESC LIMIT ${MAX_UNMATCHED})
       RETURNING hold_id`,
    )
    .all({ ':before': MATCH_BEFORE_MS, ':after': MATCH_AFTER_MS }) as { hold_id: number | null }[];
  for (const { hold_id } of matched) if (hold_id !== null) f.statement("UPDATE holds SET how = 'forceReleased' WHERE id = :id").run({ ':id': hold_id });
}

/** The force releases noted from `since` on (epoch ms) that were matched with the hold they ended. */
export function selectMatchedForceReleases(f: SqliteFile, since: number): MatchedForceRelease[] {
  const rows = f.db.all(
    `SELECT fr.id, h.connection, h.lock_id, h.lock, h.kind FROM force_releases fr JOIN holds h ON h.id = fr.hold_id WHERE fr.at >= :since`,
    { ':since': since },
  ) as unknown as { id: number; connection: string; lock_id: string; lock: string; kind: string }[];
  return rows.map((r) => ({ id: Number(r.id), connection: r.connection, lockId: r.lock_id, lock: r.lock, kind: r.kind as LockKind }));
}

interface HoldRow {
  connection: string;
  store: string;
  lock: string;
  lock_id: string;
  member: string;
  owner: string;
  token: number | null;
  started_at: number;
  started_exact: number;
  ended_at: number | null;
  ended_exact: number | null;
  how: string | null;
  by: string | null;
  waited_ms: number | null;
  handoff: number;
}

/** The holds a query asks for, oldest first (with a limit: the newest that many). */
export function selectHolds(f: SqliteFile, q: HoldQuery): RecordedHold[] {
  const where = ['h.lock = :lock', ...(q.connection === undefined ? [] : ['h.connection = :connection']), ...(q.since === undefined ? [] : ['(h.ended_at IS NULL OR h.ended_at >= :since)'])];
  const rows = f.db.all(
    `SELECT h.*, fr.by FROM holds h LEFT JOIN force_releases fr ON fr.hold_id = h.id
     WHERE ${where.join(' AND ')} ORDER BY h.started_at DESC, h.id DESC ${q.limit === undefined ? '' : 'LIMIT :limit'}`,
    {
      ':lock': q.lock,
      ...(q.connection === undefined ? {} : { ':connection': q.connection }),
      ...(q.since === undefined ? {} : { ':since': q.since }),
      ...(q.limit === undefined ? {} : { ':limit': q.limit }),
    },
  ) as unknown as HoldRow[];
  return rows.reverse().map((r) => ({
    connection: r.connection,
    store: r.store,
    lock: r.lock,
    lockId: r.lock_id,
    key: r.member,
    owner: r.owner,
    token: r.token === null ? null : Number(r.token),
    acquiredAt: Number(r.started_at),
    acquiredExact: r.started_exact === 1,
    endedAt: r.ended_at === null ? null : Number(r.ended_at),
    endedExact: r.ended_exact === null ? null : r.ended_exact === 1,
    end: r.how as HoldEnd | null,
    forceReleasedBy: r.how === 'forceReleased' ? r.by : null,
    waitedMs: r.waited_ms === null ? null : Number(r.waited_ms),
    handoff: r.handoff === 1,
  }));
}

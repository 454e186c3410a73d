/**
 * The recorded history's tables. Names are display text (keys.displayKey), as `locklens list` shows them; times are
 * epoch ms. A row is written when its hold or wait begins (ended_at NULL while it lasts) and completed when it ends.
 * `run` is the recorder run that last saw a row open: rows left open by an earlier run and not seen again once the
 * watch has read the store are closed then (see rows.ts, caughtUp).
 */
import { LockLensError } from '../errors';
import { recoverHotJournal } from './hotJournal';
import type { SqliteFile } from './sqliteFile';

/** PRAGMA user_version: raised with each change of the tables below, with a step in MIGRATIONS. */
export const SCHEMA_VERSION = 1;

const WHO = `connection TEXT NOT NULL, store TEXT NOT NULL, lock_id TEXT NOT NULL, lock TEXT NOT NULL, kind TEXT NOT NULL,
  member TEXT NOT NULL, owner TEXT NOT NULL, token INTEGER,
  started_at INTEGER NOT NULL, started_exact INTEGER NOT NULL, ended_at INTEGER, ended_exact INTEGER, run INTEGER NOT NULL`;

const VERSION_1 = `
CREATE TABLE holds (id INTEGER PRIMARY KEY, ${WHO},
  how TEXT, waited_ms INTEGER, handoff INTEGER NOT NULL);
CREATE TABLE waits (id INTEGER PRIMARY KEY, ${WHO},
  granted INTEGER);
CREATE TABLE force_releases (id INTEGER PRIMARY KEY, connection TEXT NOT NULL, lock TEXT NOT NULL, member TEXT NOT NULL,
  owner TEXT NOT NULL, by TEXT NOT NULL, at INTEGER NOT NULL, hold_id INTEGER);
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- The readers: a lock's holds, optionally of one connection, from a time on.
CREATE INDEX holds_by_lock ON holds (lock, started_at);
CREATE INDEX waits_by_lock ON waits (lock, started_at);
-- Retention: by age (what ended before a time), by size (the oldest first).
CREATE INDEX holds_by_end ON holds (ended_at);
CREATE INDEX holds_by_start ON holds (started_at);
CREATE INDEX waits_by_end ON waits (ended_at);
CREATE INDEX waits_by_start ON waits (started_at);
CREATE INDEX force_releases_by_time ON force_releases (at);
-- The recorder: the open row of a member, to end or continue it; force releases still to match with a hold's end.
CREATE INDEX holds_open ON holds (connection, lock_id, member) WHERE ended_at IS NULL;
CREATE INDEX waits_open ON waits (connection, lock_id, member) WHERE ended_at IS NULL;
CREATE INDEX holds_of_member ON holds (connection, lock, member, ended_at);
CREATE INDEX force_releases_unmatched ON force_releases (at) WHERE hold_id IS NULL;
`;

/** From version i to i + 1. */
const MIGRATIONS: readonly string[] = [VERSION_1];

/**
 * Creates the tables of a new file, or brings an older one up to SCHEMA_VERSION; a file from a newer LockLens is
 * refused (its rows may mean what this version cannot read).
 */
export function ensureSchema(f: SqliteFile): void {
  recoverHotJournal(f.file);
  const version = userVersion(f);
  if (version === SCHEMA_VERSION) return;
  if (version > SCHEMA_VERSION) {
    throw new LockLensError('INVALID_ARGUMENT', `${f.file} was written by a newer LockLens (schema ${version}; this one knows up to ${SCHEMA_VERSION}): upgrade LockLens to read it`);
  }
  if (version === 0) {
    // Before the first table, or never: freed pages are then kept in a list that incremental_vacuum gives back to the
    // file system in steps (retention.ts), where VACUUM would rewrite the whole file while holding the lock.
    f.db.exec('PRAGMA auto_vacuum = INCREMENTAL');
  }
  f.write(() => {
    // Read again inside the transaction: another process may have created the tables meanwhile.
    for (let v = userVersion(f); v < SCHEMA_VERSION; v++) {
      f.db.exec(MIGRATIONS[v]);
      f.db.exec(`PRAGMA user_version = ${v + 1}`);
    }
  });
}

export function userVersion(f: SqliteFile): number {
  return Number((f.db.get('PRAGMA user_version') as { user_version: number }).user_version);
}

/** Refuses a file this version cannot read: none of ours (no tables yet), or a newer one's. */
export function checkReadable(f: SqliteFile): void {
  const version = userVersion(f);
  if (version === 0) throw new LockLensError('INVALID_ARGUMENT', `${f.file} holds no recorded history yet`);
  if (version > SCHEMA_VERSION) ensureSchema(f);
}

/**
 * Lock tables: locks kept as rows by ShedLock (JDBC), Liquibase (DATABASECHANGELOGLOCK), the seed article's `lock`
 * table, and tables the user describes (`LockTableSpec`). Shared by the PostgreSQL and MySQL/MariaDB stores, which
 * pass their SqlSession and merge `read()` into their own reading.
 *
 * API (stable for the store backends; the implementation is being filled in):
 *   new LockTables(session, profile.lockTables ?? [])   session: a SqlSession that also counts changed rows (below)
 *   read()          every held (or, for ShedLock, expired) row as a 'single' lock named `<table>/<row name>`
 *   owns(lock)      whether a lock came from here (its holder's convention)
 *   forceRelease    the library's own release, guarded on the values shown; LOCK_CHANGED when the row moved
 *   describeForceRelease
 */
import type { ForceReleaseResult } from '../backend';
import { LockLensError } from '../errors';
import type { LockMember, LockState } from '../lockState';
import type { LockTableSpec } from '../profile';
import type { ExpirySample } from './pollingWatch';
import type { SqlSession } from './session';

/** The conventions of lock-table members. */
export const LOCK_TABLE_CONVENTIONS = ['shedlock', 'liquibase', 'lock-table', 'custom-table'] as const;
export type LockTableConvention = (typeof LOCK_TABLE_CONVENTIONS)[number];

/**
 * A release must know whether its guarded UPDATE or DELETE changed the row (0 rows: the lock changed, nothing was
 * done), and MySQL/MariaDB have no UPDATE … RETURNING: the session says how many rows a statement changed (pg's
 * `rowCount`, mysql2's `affectedRows`). Meant to join SqlSession in session.ts.
 */
export interface SqlWriteSession extends SqlSession {
  execute(sql: string, params?: readonly unknown[]): Promise<number>;
}

export interface LockTablesReading {
  readonly locks: LockState[];
  readonly expiries: ExpirySample[];
}

export class LockTables {
  constructor(
    private readonly db: SqlWriteSession,
    private readonly custom: readonly LockTableSpec[],
  ) {}

  read(): Promise<LockTablesReading> {
    void this.db;
    void this.custom;
    return Promise.resolve({ locks: [], expiries: [] });
  }

  owns(lock: LockState): boolean {
    const convention = lock.holder?.convention;
    return convention !== undefined && (LOCK_TABLE_CONVENTIONS as readonly string[]).includes(convention);
  }

  forceRelease(_lock: LockState, _member: LockMember): Promise<ForceReleaseResult> {
    return Promise.reject(new LockLensError('STORE', 'lock tables: force release is being built'));
  }

  describeForceRelease(_lock: LockState, _member: LockMember): string {
    return '';
  }
}

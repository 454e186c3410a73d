/**
 * Reading a lock table's rows: the statement that selects a layout's locks, and a row read into a LockState.
 */
import { keyId } from '../keys';
import type { LockMember, LockState } from '../lockState';
import { rowText, type SqlRow } from './session';
import { quoteIdent, quoteTable, type TableLayout } from './tableLayouts';
import type { SqlDialect } from './url';

export function asText(dialect: SqlDialect, column: string): string {
  return `CAST(${quoteIdent(dialect, column)} AS ${dialect === 'postgres' ? 'text' : 'CHAR'})`;
}

/**
 * The database's now that an expiry column is compared with (never the client's clock): its UTC wall clock for a
 * ShedLock column without a time zone (see tableLayouts.ts); else its session's now, against which PostgreSQL
 * reads a column without a time zone in the session's TimeZone and MySQL a DATETIME in the session's time_zone.
 */
function nowOf(dialect: SqlDialect, utc: boolean): string {
  if (dialect === 'postgres') return utc ? "timezone('utc', CURRENT_TIMESTAMP)" : 'CURRENT_TIMESTAMP';
  return utc ? 'UTC_TIMESTAMP(6)' : 'CURRENT_TIMESTAMP(6)';
}

function secondsBetween(dialect: SqlDialect, from: string, to: string): string {
  return dialect === 'postgres' ? `EXTRACT(EPOCH FROM (${to} - ${from}))` : `TIMESTAMPDIFF(MICROSECOND, ${from}, ${to}) / 1000000`;
}

/**
 * The rows that are locks. Every shown value is read as text (`v0`, `v1`, …), so the release compares exactly what
 * was shown, never a client-side rounding of a timestamp; `ttl` and `granted` are computed by the database.
 */
export function rowsQuery(dialect: SqlDialect, layout: TableLayout): string {
  const q = (c: string) => quoteIdent(dialect, c);
  const select = [`${asText(dialect, layout.nameColumn)} AS n`, ...layout.shown.map((c, i) => `${asText(dialect, c)} AS v${i}`)];
  if (layout.expiry) {
    const until = q(layout.expiry.column);
    select.push(`${secondsBetween(dialect, nowOf(dialect, layout.expiry.utc), until)} AS ttl`);
    if (layout.expiry.since) select.push(`${secondsBetween(dialect, q(layout.expiry.since), until)} AS granted`);
  }
  const where = [`${q(layout.nameColumn)} IS NOT NULL`, ...(layout.heldWhen ? [`${q(layout.heldWhen)} = TRUE`] : [])];
  // Rows of one name (a user's name column need not be unique) in an order that holds from one read to the next.
  const order = [q(layout.nameColumn), ...layout.shown.map((_, i) => `v${i}`)];
  return `SELECT ${select.join(', ')} FROM ${quoteTable(dialect, layout.table)} WHERE ${where.join(' AND ')} ORDER BY ${order.join(', ')}`;
}

/** Longer values are cut in the preview; names and holders stay whole in the lock's name and the member's owner. */
export const PREVIEW_VALUE_CHARS = 256;

function cut(value: string | null): string | null {
  return value !== null && value.length > PREVIEW_VALUE_CHARS ? `${value.slice(0, PREVIEW_VALUE_CHARS)}…` : value;
}

/** What a read row becomes: a held lock, and the TTL it counts down where the table has an expiry. */
export interface RowLock {
  readonly lock: LockState;
  /**
   * Seconds left (negative: expired) and, where the row says when it was written (`written`, as text), the TTL it
   * was granted.
   */
  readonly expiry?: { readonly ttl: number; readonly granted?: number; readonly shown: string; readonly written?: string };
}

export function lockName(layout: TableLayout, rowName: string): Buffer {
  return Buffer.from(`${layout.label}/${rowName}`, 'utf8');
}

/** The row's name in the layout's table, from its lock's name; undefined when the lock is not one of its rows. */
export function rowNameOf(layout: TableLayout, lock: LockState): string | undefined {
  const name = lock.name.toString('utf8');
  return name.startsWith(`${layout.label}/`) ? name.slice(layout.label.length + 1) : undefined;
}

/**
 * The member's key: the row's name, and where the row says when it was taken, that too. ShedLock writes the same row
 * at every run, often with the same locked_by: with the name alone, a run taking the row within a poll of the last
 * one's lock_until would read as the last hold going on, and every view that tells holds apart by member (the tree's
 * age, the timeline's bars, the statistics, the recorded history) would join the two runs. `locked_at` is new at each
 * run and kept by ShedLock's extend and unlock, so it marks one run, and nothing else changes it.
 */
function memberKey(rowName: string, taken: string | null): Buffer {
  return Buffer.from(taken === null ? rowName : `${rowName}@${taken}`, 'utf8');
}

export function rowLock(layout: TableLayout, row: SqlRow): RowLock {
  // Never NULL: rowsQuery reads only rows whose name IS NOT NULL.
  const rowName = rowText(row.n)!;
  const name = lockName(layout, rowName);
  const values = layout.shown.map((_, i) => rowText(row[`v${i}`]) ?? null);
  const full: Record<string, string | null> = { [layout.nameColumn]: rowName };
  const preview: Record<string, string | null> = { [layout.nameColumn]: cut(rowName) };
  layout.shown.forEach((column, i) => {
    full[column] = values[i];
    // Guard values are timestamps, short: kept whole, since the release reads them back from here.
    preview[column] = layout.guard.includes(column) ? values[i] : cut(values[i]);
  });
  const holder = layout.holderColumn === undefined ? null : values[layout.shown.indexOf(layout.holderColumn)];
  const expiryShown = layout.expiry ? values[layout.shown.indexOf(layout.expiry.column)] : null;
  const written = layout.expiry?.since === undefined ? null : values[layout.shown.indexOf(layout.expiry.since)];
  const member: LockMember = {
    key: memberKey(rowName, written),
    convention: layout.convention,
    owner: holder ?? '',
    expiresWith: layout.expiry && expiryShown !== null ? 'ttl' : 'nothing',
    lease: layout.expiry && expiryShown !== null ? name.toString('utf8') : '',
    token: null,
    holds: null,
    valuePreview: Buffer.from(JSON.stringify(preview), 'utf8'),
    valueSize: Buffer.byteLength(JSON.stringify(full), 'utf8'),
  };
  const lock: LockState = { id: keyId(name), name, kind: 'single', holder: member, waiters: [] };
  if (!layout.expiry || expiryShown === null) return { lock };
  const granted = row.granted === undefined || row.granted === null ? undefined : Number(row.granted);
  return { lock, expiry: { ttl: Number(row.ttl), granted, shown: expiryShown, ...(written !== null ? { written } : {}) } };
}

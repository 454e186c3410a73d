/**
 * Releasing a lock-table row the library's own way, guarded on the row as it was shown.
 */
import { LockLensError } from '../errors';
import type { LockMember } from '../lockState';
import { quoteIdent, quoteTable, type TableLayout } from './tableLayouts';
import { asText } from './tableRows';
import type { SqlDialect } from './url';

/** The row's values as shown, read back from the member's preview: what the release guards on. */
export function shownValues(member: LockMember): Record<string, string | null> {
  try {
    const parsed: unknown = JSON.parse(member.valuePreview.toString('utf8'));
    if (parsed && typeof parsed === 'object') return parsed as Record<string, string | null>;
  } catch {
    // falls through: not a row LockLens showed
  }
  throw new LockLensError('INVALID_ARGUMENT', `${member.key.toString('utf8')} is not a lock-table row as LockLens shows it`);
}

/**
 * The library's own release, on the row named `name` (the lock's, not the member's key: a ShedLock member is a run)
 * only while it is as shown: its name, its holder and its guard columns, compared as the text that was read (null-safe,
 * byte for byte). ShedLock: `lock_until` set back to `locked_at`; Liquibase: the lock cleared (its releaseLock); the
 * seed table and the user's tables: the row deleted.
 *
 * ShedLock's own unlock sets `lock_until` to max(its now, `locked_at` + lockAtLeastFor), in the clock and zone it
 * wrote the row with: the database's UTC with usingDbTime(), else the JVM's local time. LockLens knows neither that
 * zone nor lockAtLeastFor, and any now of its own (the database's UTC) is hours in the future of a JVM west of UTC:
 * "releasing" would lock the job out for hours. `locked_at` is written by the same clock and zone as `lock_until`, when
 * the lock was taken, so it is at or before ShedLock's now whatever the zone: ShedLock's next `lock_until <= now`
 * takes the row at once. (Skipping lockAtLeastFor is what a force release is for.)
 */
export function releaseStatement(dialect: SqlDialect, layout: TableLayout, name: string, member: LockMember): { sql: string; params: unknown[] } {
  const shown = shownValues(member);
  const q = (c: string) => quoteIdent(dialect, c);
  // MySQL compares text in the column's or connection's collation, case-, accent- and trailing-space-insensitive
  // (`_ci`, PAD SPACE): as bytes, 'Job' and 'job ' are not the 'job' shown. The name's `=` lets an index find the row.
  const same = (c: string) =>
    dialect === 'postgres' ? `${asText(dialect, c)} IS NOT DISTINCT FROM ?` : `CAST(${asText(dialect, c)} AS BINARY) <=> CAST(? AS BINARY)`;
  const where = [`${q(layout.nameColumn)} = ?`, same(layout.nameColumn)];
  const params: unknown[] = [name, name];
  if (layout.holderColumn !== undefined) {
    where.push(same(layout.holderColumn));
    params.push(shown[layout.holderColumn] === null ? null : member.owner);
  }
  for (const column of layout.guard) {
    const value = shown[column];
    if (value !== null && typeof value !== 'string') throw new LockLensError('INVALID_ARGUMENT', `the shown row has no ${column}`);
    where.push(same(column));
    params.push(value);
  }
  const table = quoteTable(dialect, layout.table);
  switch (layout.convention) {
    case 'shedlock':
      return { sql: `UPDATE ${table} SET ${q(layout.expiry!.column)} = ${q(layout.expiry!.since!)} WHERE ${where.join(' AND ')}`, params };
    case 'liquibase': {
      const [granted] = layout.guard;
      const set = `${q(layout.heldWhen!)} = FALSE, ${q(granted)} = NULL, ${q(layout.holderColumn!)} = NULL`;
      return { sql: `UPDATE ${table} SET ${set} WHERE ${where.join(' AND ')} AND ${q(layout.heldWhen!)} = TRUE`, params };
    }
    default:
      // Several rows may be as shown (no unique name, no row address on MySQL): one lock shown, one row deleted.
      return { sql: `DELETE FROM ${table} WHERE ${where.join(' AND ')}${dialect === 'mysql' ? ' LIMIT 1' : ''}`, params };
  }
}

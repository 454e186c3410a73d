/**
 * The SqlSession the lock-table readers use, over a PostgreSQL connection: their `?` placeholders become `$1`, `$2`, …
 * (PostgreSQL's own), and rows come back as objects keyed by column name, as `pg` gives them.
 */
import type { SqlRow, SqlWriteSession } from '../sql/session';

/**
 * Numbers the `?` placeholders of `sql` as `$1`, `$2`, … A `?` inside a quoted string ('…'), a quoted identifier
 * ("…"), a dollar-quoted body or a comment is text, not a placeholder. (PostgreSQL's own `?` operators, jsonb's, are
 * not usable in statements written this way; the lock-table readers use none.)
 */
export function numberPlaceholders(sql: string): string {
  let out = '';
  let n = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    const end = skipQuoted(sql, i);
    if (end > i) {
      out += sql.slice(i, end);
      i = end;
    } else {
      out += c === '?' ? `$${++n}` : c;
      i++;
    }
  }
  return out;
}

/** The index just past a quoted or commented stretch starting at `i`, or `i` when none starts there. */
function skipQuoted(sql: string, i: number): number {
  const c = sql[i];
  const until = (closing: string, from: number) => {
    const at = sql.indexOf(closing, from);
    return at < 0 ? sql.length : at + closing.length;
  };
  if (c === "'" || c === '"') {
    // A doubled quote inside is an escaped quote: the stretch goes on past it.
    let j = i + 1;
    for (;;) {
      j = until(c, j);
      if (sql[j] !== c || j >= sql.length) return j;
      j++;
    }
  }
  if (c === '-' && sql[i + 1] === '-') return until('\n', i + 2);
  if (c === '/' && sql[i + 1] === '*') return until('*/', i + 2);
  if (c === '$') {
    const tag = /^\$[A-Za-z_]*\$/.exec(sql.slice(i))?.[0];
    if (tag) return until(tag, i + tag.length);
  }
  return i;
}

/**
 * The SqlWriteSession whose statements run through `query` and `execute` (a statement's count of changed rows, pg's
 * rowCount), numbered for PostgreSQL.
 */
export function pgSession(query: Run<SqlRow[]>, execute: Run<number>): SqlWriteSession {
  return {
    dialect: 'postgres',
    query: (sql, params = []) => query(numberPlaceholders(sql), params),
    execute: (sql, params = []) => execute(numberPlaceholders(sql), params),
  };
}

type Run<T> = (sql: string, params: readonly unknown[]) => Promise<T>;

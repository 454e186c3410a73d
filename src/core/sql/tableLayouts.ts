/**
 * The lock tables LockLens reads, as layouts: which column names a lock, which holds it, which expires it, which rows
 * count, and how the library itself releases one. Pure: the catalog rows found become layouts, a layout becomes the
 * SQL of each dialect, a row becomes a LockState. lockTables.ts runs the statements.
 *
 * Recognised (each library's own DDL and statements):
 * - ShedLock JDBC: `shedlock(name, lock_until, locked_at, locked_by)`; rows are never deleted, a row is held while
 *   `lock_until` is ahead of ShedLock's now. LockLens's TTL is `lock_until` less the database's clock: its UTC wall
 *   clock (`timezone('utc', CURRENT_TIMESTAMP)`, `UTC_TIMESTAMP(6)`) for a column without a time zone, the instant for
 *   a `timestamptz`. That assumes the writer's clock is UTC, as it is with ShedLock's usingDbTime(); without it ShedLock
 *   writes its JVM's local time (pgjdbc also sets the session's TimeZone to the JVM's), which shifts the TTL by the
 *   JVM's offset: lockTables.ts notes it where `locked_at` gives it away. Past `lock_until`, a row is shown expired.
 * - Liquibase: `DATABASECHANGELOGLOCK(ID, LOCKED, LOCKGRANTED, LOCKEDBY)`, a lock while LOCKED; never expires.
 * - The seed article's `lock(id, lock_name UNIQUE, desc, update_time)`: a row is a held lock with no holder and no
 *   expiry, released (deleted) only while its id and update_time are as shown. Only a table named `lock` whose `lock_name` alone has a unique index: any other table is described by the
 *   user (a `locks` table is too common a name to guess what its rows mean).
 */
import { LockLensError, isLockLensError } from '../errors';
import { keyId } from '../keys';
import type { LockMember, LockState } from '../lockState';
import type { LockTableSpec } from '../profile';
import { rowText, type SqlRow } from './session';
import type { SqlDialect } from './url';

export const LOCK_TABLE_CONVENTIONS = ['shedlock', 'liquibase', 'lock-table', 'custom-table'] as const;
export type LockTableConvention = (typeof LOCK_TABLE_CONVENTIONS)[number];

export interface TableRef {
  /** Absent: the one an unqualified name resolves to (PostgreSQL's search path, MySQL's current database). */
  readonly schema?: string;
  readonly name: string;
}

export interface TableLayout {
  readonly convention: LockTableConvention;
  readonly table: TableRef;
  /** What lock names start with before the '/': the table as the database (or the user's spec) names it. */
  readonly label: string;
  readonly nameColumn: string;
  readonly holderColumn?: string;
  readonly expiry?: {
    readonly column: string;
    /** Compared with the UTC wall clock (ShedLock's now for a column without a time zone), else the session's now. */
    readonly utc: boolean;
    /** The column saying when the row was written: its distance to the expiry is the granted TTL. */
    readonly since?: string;
  };
  /** The row as shown besides its name, in order; the holder and the guard columns are among them. */
  readonly shown: readonly string[];
  /** Compared, as the text shown, by the release (besides the name and the holder). Short values: timestamps. */
  readonly guard: readonly string[];
  /** A boolean column: only rows where it is true are locks (Liquibase's LOCKED). */
  readonly heldWhen?: string;
}

/** One column of a table the catalog query found. */
export interface CatalogColumn {
  readonly schema: string;
  readonly table: string;
  readonly column: string;
  /** information_schema's data_type, lowercase. */
  readonly type: string;
  /** The schema's place in PostgreSQL's search path (1 first); 1 for MySQL's current database, 0 elsewhere. */
  readonly pos: number;
  /** The column alone has a unique index (on MySQL, only asked of the seed article's `lock` table, which needs it). */
  readonly unique: boolean;
}

// ---- identifiers ----

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

function invalidSpec(spec: LockTableSpec, why: string): LockLensError {
  return new LockLensError('INVALID_ARGUMENT', `lock table '${spec.table}' (locklens.lockTables, or the CLI's --lock-table): ${why}`);
}

function checkIdentifier(spec: LockTableSpec, what: string, text: string): string {
  if (!IDENTIFIER.test(text)) {
    throw invalidSpec(spec, `${what} '${text}' is not a name LockLens reads: letters, digits, _ and $, starting with a letter or _, at most 63 characters`);
  }
  return text;
}

/** The spec's table, checked: `table` or `schema.table`. */
export function specTable(spec: LockTableSpec): TableRef {
  const parts = spec.table.split('.');
  if (parts.length > 2) throw invalidSpec(spec, 'write table or schema.table');
  const [schema, name] = parts.length === 2 ? parts : [undefined, parts[0]];
  return { schema: schema === undefined ? undefined : checkIdentifier(spec, 'schema', schema), name: checkIdentifier(spec, 'table', name) };
}

/** Throws INVALID_ARGUMENT on a spec whose names LockLens would not put in a statement. */
export function checkSpec(spec: LockTableSpec): void {
  specTable(spec);
  checkIdentifier(spec, 'nameColumn', spec.nameColumn);
  checkIdentifier(spec, 'holderColumn', spec.holderColumn);
  if (spec.expiryColumn !== undefined) checkIdentifier(spec, 'expiryColumn', spec.expiryColumn);
}

/** An identifier quoted for the dialect. Names reaching here are checked or come from the catalog; quotes are doubled anyway. */
export function quoteIdent(dialect: SqlDialect, name: string): string {
  return dialect === 'postgres' ? `"${name.replace(/"/g, '""')}"` : `\`${name.replace(/`/g, '``')}\``;
}

export function quoteTable(dialect: SqlDialect, table: TableRef): string {
  return (table.schema === undefined ? '' : `${quoteIdent(dialect, table.schema)}.`) + quoteIdent(dialect, table.name);
}

// ---- discovery ----

/** The seed article's table: the one whose recognition needs to know a column is unique. */
const RECOGNISED_SEED = ['lock'];
const RECOGNISED = ['shedlock', 'databasechangeloglock', ...RECOGNISED_SEED];

/** Table names the catalog query asks for: each recognised name as the library writes it, in either case (MariaDB's are case-sensitive on Linux). */
function catalogNames(specs: readonly LockTableSpec[]): { unqualified: string[]; qualified: TableRef[] } {
  const unqualified = new Set(RECOGNISED.flatMap((n) => [n, n.toUpperCase()]));
  const qualified: TableRef[] = [];
  for (const spec of specs) {
    const table = specTable(spec);
    if (table.schema === undefined) unqualified.add(table.name);
    else qualified.push(table);
  }
  return { unqualified: [...unqualified], qualified };
}

/** One statement for every candidate table's columns; `?` placeholders, parameters in order. */
export function catalogQuery(dialect: SqlDialect, specs: readonly LockTableSpec[]): { sql: string; params: string[] } {
  const { unqualified, qualified } = catalogNames(specs);
  if (dialect === 'postgres') {
    const marks = unqualified.map(() => '?').join(', ');
    const params = [...unqualified, ...qualified.flatMap((t) => [t.schema!, t.name])];
    const exact = qualified.map(() => ' OR (c.table_schema = ? AND c.table_name = ?)').join('');
    return {
      sql:
        'SELECT c.table_schema AS s, c.table_name AS t, c.column_name AS c, c.data_type AS type, ' +
        'COALESCE(array_position(current_schemas(false), c.table_schema::name), 0) AS pos, ' +
        'EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] ' +
        "WHERE i.indrelid = format('%I.%I', c.table_schema, c.table_name)::regclass AND i.indisunique AND i.indnkeyatts = 1 " +
        'AND a.attname = c.column_name) AS uniq ' +
        `FROM information_schema.columns c WHERE (c.table_schema::name = ANY (current_schemas(false)) AND c.table_name IN (${marks}))${exact} ORDER BY c.ordinal_position`,
      params,
    };
  }
  // MariaDB reads information_schema from the tables themselves: only a WHERE of constants keeps it from opening every
  // table of every database ("Scanned all databases" in EXPLAIN; an OR, or a column of another table, is no constant).
  // One SELECT per table, its schema and name equal to constants ("Scanned 0 databases": the table is looked up), and
  // uniqueness from an uncorrelated subquery, asked of the seed table only.
  const seed = RECOGNISED_SEED.flatMap((n) => [n, n.toUpperCase()]);
  const uniq =
    '(c.TABLE_SCHEMA = DATABASE() AND (c.TABLE_NAME, c.COLUMN_NAME) IN (SELECT st.TABLE_NAME, MIN(st.COLUMN_NAME) FROM information_schema.STATISTICS st ' +
    `WHERE st.TABLE_SCHEMA = DATABASE() AND st.TABLE_NAME IN (${seed.map(() => '?').join(', ')}) AND st.NON_UNIQUE = 0 ` +
    'GROUP BY st.TABLE_NAME, st.INDEX_NAME HAVING COUNT(*) = 1))';
  const select =
    'SELECT c.TABLE_SCHEMA AS s, c.TABLE_NAME AS t, c.COLUMN_NAME AS c, LOWER(c.DATA_TYPE) AS type, IF(c.TABLE_SCHEMA = DATABASE(), 1, 0) AS pos, ' +
    `${uniq} AS uniq, c.ORDINAL_POSITION AS o FROM information_schema.COLUMNS c WHERE `;
  const tables = [...unqualified.map((name) => ({ schema: undefined, name })), ...qualified];
  // UNION, not UNION ALL: a spec may name a table of the current database with its schema.
  return {
    sql: tables.map((t) => `${select}c.TABLE_SCHEMA = ${t.schema === undefined ? 'DATABASE()' : '?'} AND c.TABLE_NAME = ?`).join(' UNION ') + ' ORDER BY o',
    params: tables.flatMap((t) => [...seed, ...(t.schema === undefined ? [] : [t.schema]), t.name]),
  };
}

/** A catalog row: information_schema's names and types are never NULL. */
export function catalogColumn(row: SqlRow): CatalogColumn {
  return {
    schema: rowText(row.s)!,
    table: rowText(row.t)!,
    column: rowText(row.c)!,
    type: rowText(row.type)!.toLowerCase(),
    pos: Number(row.pos),
    unique: row.uniq === true || Number(row.uniq) === 1,
  };
}

interface FoundTable {
  readonly schema: string;
  readonly name: string;
  readonly pos: number;
  readonly columns: readonly CatalogColumn[];
}

function tablesOf(catalog: readonly CatalogColumn[]): FoundTable[] {
  const tables = new Map<string, FoundTable>();
  for (const col of catalog) {
    const key = `${col.schema}\0${col.table}`;
    const t = tables.get(key) ?? { schema: col.schema, name: col.table, pos: col.pos, columns: [] };
    tables.set(key, { ...t, columns: [...t.columns, col] });
  }
  return [...tables.values()];
}

/** The table an unqualified name resolves to: the first schema of the search path that has it. */
function resolveUnqualified(tables: readonly FoundTable[], name: string): FoundTable | undefined {
  const inPath = tables.filter((t) => t.pos > 0).sort((a, b) => a.pos - b.pos);
  // Exact first; MariaDB with lower_case_table_names stores names folded, so a unique case-insensitive match is it.
  const exact = inPath.find((t) => t.name === name);
  if (exact) return exact;
  const folded = inPath.filter((t) => t.name.toLowerCase() === name.toLowerCase());
  return new Set(folded.map((t) => t.name)).size === 1 ? folded[0] : undefined;
}

function columnOf(table: FoundTable, name: string): CatalogColumn | undefined {
  return table.columns.find((c) => c.column === name) ?? table.columns.find((c) => c.column.toLowerCase() === name.toLowerCase());
}

function recognise(table: FoundTable, dialect: SqlDialect): TableLayout | undefined {
  const col = (name: string) => columnOf(table, name);
  const ref: TableRef = { schema: table.schema, name: table.name };
  const base = { table: ref, label: table.name };
  switch (table.name.toLowerCase()) {
    case 'shedlock': {
      const [name, until, at, by] = ['name', 'lock_until', 'locked_at', 'locked_by'].map(col);
      if (!name || !until || !at || !by) return undefined;
      const utc = dialect === 'mysql' || until.type !== 'timestamp with time zone';
      return {
        ...base,
        convention: 'shedlock',
        nameColumn: name.column,
        holderColumn: by.column,
        expiry: { column: until.column, utc, since: at.column },
        shown: [until.column, at.column, by.column],
        guard: [until.column],
      };
    }
    case 'databasechangeloglock': {
      const [id, locked, granted, by] = ['id', 'locked', 'lockgranted', 'lockedby'].map(col);
      if (!id || !locked || !granted || !by) return undefined;
      return { ...base, convention: 'liquibase', nameColumn: id.column, holderColumn: by.column, shown: [granted.column, by.column], guard: [granted.column], heldWhen: locked.column };
    }
    case 'lock': {
      const name = col('lock_name');
      if (!name?.unique) return undefined;
      // update_time is to the second: a row deleted and taken again within it is told apart by its id.
      const [id, desc, updated] = ['id', 'desc', 'update_time'].map(col);
      const present = (cols: (CatalogColumn | undefined)[]) => cols.filter((c): c is CatalogColumn => c !== undefined).map((c) => c.column);
      const address = rowAddress(dialect);
      return { ...base, convention: 'lock-table', nameColumn: name.column, shown: [...present([id, desc, updated]), ...address], guard: [...present([id, updated]), ...address] };
    }
    default:
      return undefined;
  }
}

/**
 * The columns that tell one row from another whatever the table's keys, for the tables whose rows a release deletes:
 * PostgreSQL's `ctid` (a row's place, new at every UPDATE), so the DELETE removes the row read and no other with the
 * same values. MySQL has none: its DELETE is LIMIT 1 instead.
 */
function rowAddress(dialect: SqlDialect): string[] {
  return dialect === 'postgres' ? ['ctid'] : [];
}

const DATE_TYPES: Record<SqlDialect, readonly string[]> = {
  postgres: ['timestamp without time zone', 'timestamp with time zone', 'date'],
  mysql: ['timestamp', 'datetime', 'date'],
};

/**
 * The layout of a user's spec, or undefined when its table is not in this database: the specs are every SQL
 * connection's, and a table of one database is normally missing from the others. A table found without a named
 * column, or with an expiry that is no date, throws INVALID_ARGUMENT naming it (a spec to fix).
 */
function specLayout(spec: LockTableSpec, tables: readonly FoundTable[], dialect: SqlDialect): TableLayout | undefined {
  const ref = specTable(spec);
  const table = ref.schema === undefined ? resolveUnqualified(tables, ref.name) : tables.find((t) => t.schema === ref.schema && t.name === ref.name);
  if (!table) return undefined;
  const need = (what: string, name: string) => {
    const c = columnOf(table, name);
    if (!c) throw invalidSpec(spec, `${what} '${name}' is not a column of it (its columns: ${table.columns.map((x) => x.column).join(', ')})`);
    return c;
  };
  const name = need('nameColumn', spec.nameColumn);
  const holder = need('holderColumn', spec.holderColumn);
  const expiry = spec.expiryColumn === undefined ? undefined : need('expiryColumn', spec.expiryColumn);
  if (expiry && !DATE_TYPES[dialect].includes(expiry.type)) {
    throw invalidSpec(spec, `expiryColumn '${expiry.column}' is a ${expiry.type}: it must be one of ${DATE_TYPES[dialect].join(', ')}`);
  }
  return {
    convention: 'custom-table',
    table: { schema: table.schema, name: table.name },
    label: spec.table,
    nameColumn: name.column,
    holderColumn: holder.column,
    expiry: expiry ? { column: expiry.column, utc: false } : undefined,
    shown: [holder.column, ...(expiry ? [expiry.column] : []), ...rowAddress(dialect)],
    guard: [...(expiry ? [expiry.column] : []), ...rowAddress(dialect)],
  };
}

export interface Layouts {
  readonly layouts: TableLayout[];
  /** Why a spec whose table is here is not read (a missing column, an expiry that is no date): for the reading's `hidden`. */
  readonly problems: string[];
}

/**
 * The layouts of what the catalog found: the user's specs whose tables are here, then the recognised tables that
 * unqualified names resolve to, except one a spec already describes. A spec that cannot be read is a problem said
 * beside the others, never a failure of the whole read (the connection's other locks are still to be shown).
 */
export function layoutsOf(catalog: readonly CatalogColumn[], specs: readonly LockTableSpec[], dialect: SqlDialect): Layouts {
  const tables = tablesOf(catalog);
  const custom: TableLayout[] = [];
  const problems: string[] = [];
  for (const spec of specs) {
    try {
      const layout = specLayout(spec, tables, dialect);
      if (layout) custom.push(layout);
    } catch (e) {
      if (!isLockLensError(e, 'INVALID_ARGUMENT')) throw e;
      problems.push(e.message);
    }
  }
  const described = new Set(custom.map((l) => `${l.table.schema}\0${l.table.name}`));
  const recognised = new Set<FoundTable>();
  for (const name of new Set(tables.map((t) => t.name))) {
    const table = tables.filter((t) => t.name === name && t.pos > 0).sort((a, b) => a.pos - b.pos)[0];
    if (table && RECOGNISED.includes(name.toLowerCase())) recognised.add(table);
  }
  const found = [...recognised]
    .filter((t) => !described.has(`${t.schema}\0${t.name}`))
    .map((t) => recognise(t, dialect))
    .filter((l): l is TableLayout => l !== undefined);
  return { layouts: [...custom, ...found], problems };
}

// ---- reading rows ----

function asText(dialect: SqlDialect, column: string): string {
  return `CAST(${quoteIdent(dialect, column)} AS ${dialect === 'postgres' ? 'text' : 'CHAR'})`;
}

/**
 * The database's now that an expiry column is compared with (never the client's clock): its UTC wall clock for a
 * ShedLock column without a time zone (see the top of this file); else its session's now, against which PostgreSQL
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
  const member: LockMember = {
    key: Buffer.from(rowName, 'utf8'),
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
  const written = layout.expiry.since === undefined ? null : values[layout.shown.indexOf(layout.expiry.since)];
  return { lock, expiry: { ttl: Number(row.ttl), granted, shown: expiryShown, ...(written !== null ? { written } : {}) } };
}

// ---- releasing ----

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
 * The library's own release, on the row only while it is as shown: its name, its holder and its guard columns, compared
 * as the text that was read (null-safe, byte for byte). ShedLock: `lock_until` set back to `locked_at`; Liquibase: the lock cleared
 * (its releaseLock); the seed table and the user's tables: the row deleted.
 *
 * ShedLock's own unlock sets `lock_until` to max(its now, `locked_at` + lockAtLeastFor), in the clock and zone it
 * wrote the row with: the database's UTC with usingDbTime(), else the JVM's local time. LockLens knows neither that
 * zone nor lockAtLeastFor, and any now of its own (the database's UTC) is hours in the future of a JVM west of UTC:
 * "releasing" would lock the job out for hours. `locked_at` is written by the same clock and zone as `lock_until`, when
 * the lock was taken, so it is at or before ShedLock's now whatever the zone: ShedLock's next `lock_until <= now`
 * takes the row at once. (Skipping lockAtLeastFor is what a force release is for.)
 */
export function releaseStatement(dialect: SqlDialect, layout: TableLayout, member: LockMember): { sql: string; params: unknown[] } {
  const shown = shownValues(member);
  const q = (c: string) => quoteIdent(dialect, c);
  // MySQL compares text in the column's or connection's collation, case-, accent- and trailing-space-insensitive
  // (`_ci`, PAD SPACE): as bytes, 'Job' and 'job ' are not the 'job' shown. The name's `=` lets an index find the row.
  const same = (c: string) =>
    dialect === 'postgres' ? `${asText(dialect, c)} IS NOT DISTINCT FROM ?` : `CAST(${asText(dialect, c)} AS BINARY) <=> CAST(? AS BINARY)`;
  const name = member.key.toString('utf8');
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

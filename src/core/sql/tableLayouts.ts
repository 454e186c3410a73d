/**
 * The lock tables LockLens reads, as layouts: which column names a lock, which holds it, which expires it, which rows
 * count, and how the library itself releases one. Pure: the catalog's columns (tableCatalog.ts asks for them) become
 * layouts; tableRows.ts reads a layout's rows into LockStates, tableRelease.ts writes its release; lockTables.ts runs
 * the statements.
 *
 * Recognised (each library's own DDL and statements):
 * - ShedLock JDBC: `shedlock(name, lock_until, locked_at, locked_by)`; rows are never deleted, a row is held while
 *   `lock_until` is ahead of ShedLock's now. LockLens's TTL is `lock_until` less the database's clock: its UTC wall
 *   clock (`timezone('utc', CURRENT_TIMESTAMP)`, `UTC_TIMESTAMP(6)`) for a column without a time zone, the instant for
 *   a `timestamptz`. That is ShedLock's own now with usingDbTime(), whose statements compare `lock_until <=` that very
 *   expression; without it ShedLock compares with its JVM's clock in the JVM's zone (pgjdbc also sets the session's
 *   TimeZone to the JVM's), which is the database's UTC for a JVM in UTC and otherwise off by the JVM's offset:
 *   lockTables.ts reads the TTL on the writer's clock where `locked_at` gives that offset away. Past `lock_until` a
 *   row is a free lock, as ShedLock reads it (its next run takes the row by `UPDATE … WHERE lock_until <= now`), and
 *   each `locked_at` is one run: one hold.
 * - Liquibase: `DATABASECHANGELOGLOCK(ID, LOCKED, LOCKGRANTED, LOCKEDBY)`, a lock while LOCKED; never expires.
 * - The seed article's `lock(id, lock_name UNIQUE, desc, update_time)`: a row is a held lock with no holder and no
 *   expiry, released (deleted) only while its id and update_time are as shown. Only a table named `lock` whose `lock_name` alone has a unique index: any other table is described by the
 *   user (a `locks` table is too common a name to guess what its rows mean).
 */
import { LockLensError, isLockLensError } from '../errors';
import type { LockTableSpec } from '../profile';
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
    /**
     * The column saying when the row was taken: its distance to the expiry is the granted TTL, and a new value is a
     * new hold (ShedLock's `locked_at`, written at every run into the same row).
     */
    readonly since?: string;
    /**
     * Past the expiry the row is a free lock, not a holder whose TTL ran out: ShedLock's reading. Absent for a user's
     * table, which is not known to be read so by its clients: its expired rows stay shown.
     */
    readonly freeWhenPast?: true;
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

// ---- recognition ----

/** The seed article's table: the one whose recognition needs to know a column is unique. */
export const RECOGNISED_SEED = ['lock'];
export const RECOGNISED = ['shedlock', 'databasechangeloglock', ...RECOGNISED_SEED];

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
        expiry: { column: until.column, utc, since: at.column, freeWhenPast: true },
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

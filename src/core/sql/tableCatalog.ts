/**
 * The catalog query that finds the lock tables: one statement for the columns of every table LockLens recognises or a
 * spec names, and its rows read into CatalogColumns, which layoutsOf (tableLayouts.ts) turns into layouts.
 */
import type { LockTableSpec } from '../profile';
import { rowText, type SqlRow } from './session';
import { RECOGNISED, RECOGNISED_SEED, specTable, type CatalogColumn, type TableRef } from './tableLayouts';
import type { SqlDialect } from './url';

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

/**
 * PostgreSQL: what information_schema.columns says of a column (its data_type too), read from pg_catalog the way that
 * view is defined: planning the view took 2 ms of each discovery, several times the listing's own statement.
 */
const PG_COLUMNS =
  'SELECT n.nspname::text AS s, c.relname::text AS t, a.attname::text AS c, ' +
  "CASE WHEN ty.typtype = 'd' THEN CASE WHEN bt.typelem <> 0 AND bt.typlen = -1 THEN 'ARRAY' WHEN nbt.nspname = 'pg_catalog' THEN format_type(ty.typbasetype, NULL) ELSE 'USER-DEFINED' END " +
  "ELSE CASE WHEN ty.typelem <> 0 AND ty.typlen = -1 THEN 'ARRAY' WHEN nty.nspname = 'pg_catalog' THEN format_type(a.atttypid, NULL) ELSE 'USER-DEFINED' END END AS type, " +
  'COALESCE(array_position(current_schemas(false), n.nspname), 0) AS pos, ' +
  'EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisunique AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum) AS uniq ' +
  'FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid ' +
  'JOIN pg_type ty ON ty.oid = a.atttypid JOIN pg_namespace nty ON nty.oid = ty.typnamespace ' +
  "LEFT JOIN (pg_type bt JOIN pg_namespace nbt ON nbt.oid = bt.typnamespace) ON ty.typtype = 'd' AND ty.typbasetype = bt.oid ";

/** The columns information_schema.columns shows the current user (tables, views, foreign and partitioned tables). */
const PG_VISIBLE =
  "c.relkind IN ('r', 'v', 'f', 'p') AND a.attnum > 0 AND NOT a.attisdropped AND NOT pg_is_other_temp_schema(n.oid) " +
  "AND (pg_has_role(c.relowner, 'USAGE') OR has_column_privilege(c.oid, a.attnum, 'SELECT, INSERT, UPDATE, REFERENCES'))";

/** One statement for every candidate table's columns; `?` placeholders, parameters in order. */
export function catalogQuery(dialect: SqlDialect, specs: readonly LockTableSpec[]): { sql: string; params: string[] } {
  const { unqualified, qualified } = catalogNames(specs);
  if (dialect === 'postgres') {
    const marks = unqualified.map(() => '?').join(', ');
    const params = [...unqualified, ...qualified.flatMap((t) => [t.schema!, t.name])];
    const exact = qualified.map(() => ' OR (n.nspname = ? AND c.relname = ?)').join('');
    return { sql: `${PG_COLUMNS}WHERE ${PG_VISIBLE} AND ((n.nspname = ANY (current_schemas(false)) AND c.relname IN (${marks}))${exact}) ORDER BY a.attnum`, params };
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

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

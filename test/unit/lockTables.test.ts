import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isLockLensError } from '../../src/core/errors';
import { keyId } from '../../src/core/keys';
import type { LockTableSpec } from '../../src/core/profile';
import { catalogQuery } from '../../src/core/sql/tableCatalog';
import { checkSpec, layoutsOf, quoteIdent, quoteTable, specTable, type CatalogColumn, type TableLayout } from '../../src/core/sql/tableLayouts';
import { releaseStatement, shownValues } from '../../src/core/sql/tableRelease';
import { PREVIEW_VALUE_CHARS, rowLock, rowsQuery } from '../../src/core/sql/tableRows';

function columns(table: string, names: string[], extra: Partial<CatalogColumn> = {}): CatalogColumn[] {
  return names.map((column) => ({ schema: 'public', table, column, type: 'character varying', pos: 1, unique: false, ...extra }));
}

const SHEDLOCK = [
  ...columns('shedlock', ['name', 'locked_by']),
  ...columns('shedlock', ['lock_until', 'locked_at'], { type: 'timestamp without time zone' }),
];
const LIQUIBASE = columns('DATABASECHANGELOGLOCK', ['ID', 'LOCKED', 'LOCKGRANTED', 'LOCKEDBY']);
const SEED = [...columns('lock', ['id', 'desc', 'update_time']), ...columns('lock', ['lock_name'], { unique: true })];
const SPEC: LockTableSpec = { table: 'job_locks', nameColumn: 'job', holderColumn: 'owner_id', expiryColumn: 'expires_at' };
const CUSTOM = [...columns('job_locks', ['job', 'owner_id']), ...columns('job_locks', ['expires_at'], { type: 'timestamp with time zone' })];

function layout(catalog: CatalogColumn[], convention: string, specs: LockTableSpec[] = []): TableLayout {
  const found = layoutsOf(catalog, specs, 'postgres').layouts.find((l) => l.convention === convention);
  assert.ok(found, convention);
  return found;
}

function invalid(pattern: RegExp) {
  return (e: unknown) => isLockLensError(e, 'INVALID_ARGUMENT') && pattern.test(e.message);
}

describe('lock table identifiers', () => {
  test('quoted per dialect; schema-qualified tables', () => {
    assert.equal(quoteIdent('postgres', 'lock'), '"lock"');
    assert.equal(quoteIdent('mysql', 'desc'), '`desc`');
    assert.equal(quoteIdent('postgres', 'a"b'), '"a""b"', 'quotes doubled even so');
    assert.equal(quoteIdent('mysql', 'a`b'), '`a``b`');
    assert.equal(quoteTable('postgres', { schema: 'jobs', name: 'locks' }), '"jobs"."locks"');
    assert.equal(quoteTable('mysql', { name: 'DATABASECHANGELOGLOCK' }), '`DATABASECHANGELOGLOCK`');
    assert.deepEqual(specTable({ ...SPEC, table: 'jobs.locks' }), { schema: 'jobs', name: 'locks' });
    assert.deepEqual(specTable(SPEC), { schema: undefined, name: 'job_locks' });
  });

  test('odd names in a spec are refused, naming the field', () => {
    for (const table of ['', 'a.b.c', 'x; DROP TABLE y', '"quoted"', '1abc', 'a-b', 'a'.repeat(64), 'é']) {
      assert.throws(() => checkSpec({ ...SPEC, table }), invalid(/not a name|write table or schema.table/), table);
    }
    assert.throws(() => checkSpec({ ...SPEC, nameColumn: 'na me' }), invalid(/nameColumn 'na me'/));
    assert.throws(() => checkSpec({ ...SPEC, holderColumn: 'h`' }), invalid(/holderColumn/));
    assert.throws(() => checkSpec({ ...SPEC, expiryColumn: '' }), invalid(/expiryColumn/));
    checkSpec({ ...SPEC, table: 'Jobs_1.locks$2' });
  });
});

describe('lock table recognition', () => {
  test('ShedLock, Liquibase (any case) and the seed table with a unique lock_name', () => {
    const { layouts } = layoutsOf([...SHEDLOCK, ...LIQUIBASE, ...SEED], [], 'postgres');
    assert.deepEqual(layouts.map((l) => [l.convention, l.label]), [
      ['shedlock', 'shedlock'],
      ['liquibase', 'DATABASECHANGELOGLOCK'],
      ['lock-table', 'lock'],
    ]);
    const liquibase = layouts[1];
    assert.equal(liquibase.nameColumn, 'ID');
    assert.equal(liquibase.heldWhen, 'LOCKED');
    assert.deepEqual(liquibase.guard, ['LOCKGRANTED']);
    assert.deepEqual(layouts[2].shown, ['id', 'desc', 'update_time', 'ctid'], "PostgreSQL's row address besides");
    assert.deepEqual(layouts[2].guard, ['id', 'update_time', 'ctid']);
    assert.deepEqual(layoutsOf(SEED, [], 'mysql').layouts[0].guard, ['id', 'update_time']);
    assert.deepEqual(layouts[0].expiry, { column: 'lock_until', utc: true, since: 'locked_at', freeWhenPast: true });
  });

  test('not recognised: a lock table whose lock_name is not unique, a ShedLock table missing a column, other tables', () => {
    const loose = [...columns('lock', ['id', 'lock_name'])];
    const partial = SHEDLOCK.filter((c) => c.column !== 'locked_at');
    assert.deepEqual(layoutsOf([...loose, ...partial, ...columns('locks', ['lock_name'], { unique: true })], [], 'postgres'), { layouts: [], problems: [] });
  });

  test("ShedLock's now: UTC for a column without a time zone (and always on MySQL), the instant for timestamptz", () => {
    const tz = SHEDLOCK.map((c) => (c.column === 'lock_until' ? { ...c, type: 'timestamp with time zone' } : c));
    assert.equal(layout(tz, 'shedlock').expiry?.utc, false);
    assert.equal(layoutsOf(tz, [], 'mysql').layouts[0].expiry?.utc, true);
  });

  test('an unqualified name is the first schema of the search path that has it; other schemas are not read', () => {
    const later = SHEDLOCK.map((c) => ({ ...c, schema: 'audit', pos: 2 }));
    const outside = LIQUIBASE.map((c) => ({ ...c, schema: 'other', pos: 0 }));
    const { layouts } = layoutsOf([...later, ...SHEDLOCK, ...outside], [], 'postgres');
    assert.deepEqual(layouts.map((l) => l.table), [{ schema: 'public', name: 'shedlock' }]);
  });

  test("a user's spec: found by its exact name (else one case-insensitive match), its columns, its expiry type", () => {
    const custom = layout(CUSTOM, 'custom-table', [SPEC]);
    assert.equal(custom.label, 'job_locks');
    assert.equal(custom.holderColumn, 'owner_id');
    assert.deepEqual(custom.expiry, { column: 'expires_at', utc: false });
    assert.equal(layout(CUSTOM, 'custom-table', [{ ...SPEC, table: 'JOB_LOCKS' }]).table.name, 'job_locks');
    // Every SQL connection gets every spec: a table not in this database is another database's, skipped unsaid.
    assert.deepEqual(layoutsOf(CUSTOM, [{ ...SPEC, table: 'jobs.job_locks' }], 'postgres'), { layouts: [], problems: [] });
    assert.deepEqual(layoutsOf([], [SPEC], 'mysql'), { layouts: [], problems: [] });
    // A table that is here but does not fit the spec is said, and the rest is still read.
    const misfits = layoutsOf([...CUSTOM, ...SHEDLOCK], [{ ...SPEC, nameColumn: 'name' }, { ...SPEC, expiryColumn: 'owner_id' }], 'postgres');
    assert.deepEqual(misfits.layouts.map((l) => l.convention), ['shedlock']);
    assert.deepEqual(misfits.problems, [
      "lock table 'job_locks' (locklens.lockTables, or the CLI's --lock-table): nameColumn 'name' is not a column of it (its columns: job, owner_id, expires_at)",
      "lock table 'job_locks' (locklens.lockTables, or the CLI's --lock-table): expiryColumn 'owner_id' is a character varying: it must be one of timestamp without time zone, timestamp with time zone, date",
    ]);
  });

  test("a spec naming a recognised table replaces its recognition (the user's description wins)", () => {
    const spec = { table: 'shedlock', nameColumn: 'name', holderColumn: 'locked_by' };
    assert.deepEqual(layoutsOf(SHEDLOCK, [spec], 'postgres').layouts.map((l) => l.convention), ['custom-table']);
  });

  test('the catalog query asks for each recognised name in both cases, and for the specs, by constants on MariaDB', () => {
    const { sql, params } = catalogQuery('mysql', [SPEC, { ...SPEC, table: 'jobs.locks' }]);
    // MariaDB: one SELECT per table, by constants (a lookup, not a scan of every database), each asking whether the seed table's columns are unique.
    const tables = ['shedlock', 'SHEDLOCK', 'databasechangeloglock', 'DATABASECHANGELOGLOCK', 'lock', 'LOCK', 'job_locks'];
    assert.deepEqual(params, [...tables.flatMap((t) => ['lock', 'LOCK', t]), 'lock', 'LOCK', 'jobs', 'locks']);
    assert.equal(sql.split('?').length - 1, params.length);
    assert.equal(sql.split(' UNION ').length, tables.length + 1);
    assert.equal(sql.match(/c\.TABLE_SCHEMA = DATABASE\(\) AND c\.TABLE_NAME = \? /g)?.length, tables.length);
    assert.doesNotMatch(sql, /\bOR\b|st\.TABLE_NAME = c\./, 'no OR of tables, no subquery on the outer row');
    const pg = catalogQuery('postgres', []);
    assert.equal(pg.sql.split('?').length - 1, pg.params.length);
    assert.match(pg.sql, /current_schemas\(false\)/);
  });
});

describe('lock table rows', () => {
  const shedlock = layout(SHEDLOCK, 'shedlock');

  test('the read statement: values as text, TTLs computed by the database, held rows only', () => {
    assert.equal(
      rowsQuery('postgres', shedlock),
      'SELECT CAST("name" AS text) AS n, CAST("lock_until" AS text) AS v0, CAST("locked_at" AS text) AS v1, CAST("locked_by" AS text) AS v2, ' +
        `EXTRACT(EPOCH FROM ("lock_until" - timezone('utc', CURRENT_TIMESTAMP))) AS ttl, EXTRACT(EPOCH FROM ("lock_until" - "locked_at")) AS granted ` +
        'FROM "public"."shedlock" WHERE "name" IS NOT NULL ORDER BY "name", v0, v1, v2',
    );
    const liquibase = layoutsOf(LIQUIBASE, [], 'mysql').layouts[0];
    assert.match(rowsQuery('mysql', liquibase), /FROM `public`.`DATABASECHANGELOGLOCK` WHERE `ID` IS NOT NULL AND `LOCKED` = TRUE ORDER BY `ID`, v0, v1$/);
    assert.match(rowsQuery('mysql', shedlock), /TIMESTAMPDIFF\(MICROSECOND, UTC_TIMESTAMP\(6\), `lock_until`\) \/ 1000000 AS ttl/);
  });

  test('a ShedLock row: a single lock named table/name, owned by locked_by, expiring with its lease', () => {
    const { lock, expiry } = rowLock(shedlock, { n: 'report-job', v0: '2030-01-01 10:00:30.5', v1: '2030-01-01 10:00:00.5', v2: 'host-a', ttl: '29.75', granted: '30.000000' });
    assert.equal(lock.name.toString(), 'shedlock/report-job');
    assert.equal(lock.id, keyId(Buffer.from('shedlock/report-job')));
    assert.equal(lock.kind, 'single');
    assert.deepEqual(lock.waiters, []);
    const m = lock.holder!;
    assert.deepEqual([m.key.toString(), m.convention, m.owner, m.lease, m.token, m.holds, m.session], ['report-job@2030-01-01 10:00:00.5', 'shedlock', 'host-a', 'shedlock/report-job', null, null, undefined]);
    assert.deepEqual(shownValues(m), { name: 'report-job', lock_until: '2030-01-01 10:00:30.5', locked_at: '2030-01-01 10:00:00.5', locked_by: 'host-a' });
    assert.deepEqual(expiry, { ttl: 29.75, granted: 30, shown: '2030-01-01 10:00:30.5', written: '2030-01-01 10:00:00.5' });
  });

  test('a row without expiry never expires; unicode, HTML and long names kept whole in the name, cut in the preview', () => {
    const seed = layout(SEED, 'lock-table');
    const name = `<img src=x onerror=alert(1)> ☃ ${'ü'.repeat(1000)}`;
    const { lock, expiry } = rowLock(seed, { n: name, v0: '7', v1: 'd'.repeat(2000), v2: '2024-01-01 00:00:00' });
    assert.equal(expiry, undefined);
    assert.equal(lock.holder!.lease, '');
    assert.equal(lock.holder!.owner, '');
    assert.equal(lock.name.toString('utf8'), `lock/${name}`);
    const preview = shownValues(lock.holder!);
    assert.equal(preview.lock_name, `${name.slice(0, PREVIEW_VALUE_CHARS)}…`);
    assert.equal(preview.desc!.length, PREVIEW_VALUE_CHARS + 1);
    assert.equal(preview.update_time, '2024-01-01 00:00:00');
    assert.ok(lock.holder!.valueSize > lock.holder!.valuePreview.length);
  });

  test('values the driver gives as numbers or Buffers are text; a NULL holder is no owner', () => {
    const custom = layout(CUSTOM, 'custom-table', [SPEC]);
    const { lock } = rowLock(custom, { n: 42, v0: null, v1: Buffer.from('2030-01-01 00:00:00+00'), ttl: 5 });
    assert.equal(lock.name.toString(), 'job_locks/42');
    assert.equal(lock.holder!.owner, '');
    assert.equal(shownValues(lock.holder!).owner_id, null);
  });
});

describe('lock table releases', () => {
  test("ShedLock's row: lock_until set back to its locked_at (same clock and zone, so past), guarded on the name, holder and lock_until shown", () => {
    const shedlock = layout(SHEDLOCK, 'shedlock');
    const { lock } = rowLock(shedlock, { n: 'job', v0: '2030-01-01 10:00:30.5', v1: '2030-01-01 10:00:00', v2: 'host-a', ttl: 1, granted: 30 });
    assert.deepEqual(releaseStatement('postgres', shedlock, 'job', lock.holder!), {
      sql:
        'UPDATE "public"."shedlock" SET "lock_until" = "locked_at" WHERE "name" = ? AND CAST("name" AS text) IS NOT DISTINCT FROM ? ' +
        'AND CAST("locked_by" AS text) IS NOT DISTINCT FROM ? AND CAST("lock_until" AS text) IS NOT DISTINCT FROM ?',
      params: ['job', 'job', 'host-a', '2030-01-01 10:00:30.5'],
    });
  });

  test("Liquibase's releaseLock, only while LOCKED; the seed table's and a user's rows deleted", () => {
    const liquibase = layoutsOf(LIQUIBASE, [], 'mysql').layouts[0];
    const held = rowLock(liquibase, { n: '1', v0: '2024-05-01 12:00:00', v1: 'ci (10.0.0.7)' }).lock.holder!;
    assert.deepEqual(releaseStatement('mysql', liquibase, '1', held), {
      sql:
        'UPDATE `public`.`DATABASECHANGELOGLOCK` SET `LOCKED` = FALSE, `LOCKGRANTED` = NULL, `LOCKEDBY` = NULL WHERE `ID` = ? ' +
        'AND CAST(CAST(`ID` AS CHAR) AS BINARY) <=> CAST(? AS BINARY) AND CAST(CAST(`LOCKEDBY` AS CHAR) AS BINARY) <=> CAST(? AS BINARY) ' +
        'AND CAST(CAST(`LOCKGRANTED` AS CHAR) AS BINARY) <=> CAST(? AS BINARY) AND `LOCKED` = TRUE',
      params: ['1', '1', 'ci (10.0.0.7)', '2024-05-01 12:00:00'],
    });
    const seed = layout(SEED, 'lock-table');
    const row = rowLock(seed, { n: 'a', v0: '7', v1: null, v2: '2024-01-01 00:00:00', v3: '(0,3)' }).lock.holder!;
    assert.deepEqual(releaseStatement('postgres', seed, 'a', row), {
      sql:
        'DELETE FROM "public"."lock" WHERE "lock_name" = ? AND CAST("lock_name" AS text) IS NOT DISTINCT FROM ? AND CAST("id" AS text) IS NOT DISTINCT FROM ? ' +
        'AND CAST("update_time" AS text) IS NOT DISTINCT FROM ? AND CAST("ctid" AS text) IS NOT DISTINCT FROM ?',
      params: ['a', 'a', '7', '2024-01-01 00:00:00', '(0,3)'],
    });
    const custom = layout(CUSTOM, 'custom-table', [SPEC]);
    const nobody = rowLock(custom, { n: 'x', v0: null, v1: null, v2: '(0,1)' }).lock.holder!;
    assert.deepEqual(releaseStatement('postgres', custom, 'x', nobody).params, ['x', 'x', null, null, '(0,1)'], 'NULLs compared as NULL');
    // On MySQL, compared as bytes (not in a _ci collation), and one row deleted at most.
    const mysqlCustom = layoutsOf(CUSTOM.map((c) => (c.column === 'expires_at' ? { ...c, type: 'datetime' } : c)), [SPEC], 'mysql').layouts[0];
    const shownRow = rowLock(mysqlCustom, { n: 'x', v0: 'w', v1: '2030-01-01 00:00:00.000' }).lock.holder!;
    assert.deepEqual(releaseStatement('mysql', mysqlCustom, 'x', shownRow), {
      sql:
        'DELETE FROM `public`.`job_locks` WHERE `job` = ? AND CAST(CAST(`job` AS CHAR) AS BINARY) <=> CAST(? AS BINARY) ' +
        'AND CAST(CAST(`owner_id` AS CHAR) AS BINARY) <=> CAST(? AS BINARY) AND CAST(CAST(`expires_at` AS CHAR) AS BINARY) <=> CAST(? AS BINARY) LIMIT 1',
      params: ['x', 'x', 'w', '2030-01-01 00:00:00.000'],
    });
  });

  test('a long holder is cut in the preview but guarded whole (from the owner)', () => {
    const custom = layout(CUSTOM, 'custom-table', [SPEC]);
    const owner = 'o'.repeat(1000);
    const m = rowLock(custom, { n: 'x', v0: owner, v1: '2030-01-01 00:00:00+00', ttl: 3 }).lock.holder!;
    assert.equal(shownValues(m).owner_id!.length, PREVIEW_VALUE_CHARS + 1);
    assert.equal(releaseStatement('postgres', custom, 'x', m).params[2], owner);
  });

  test('a member that is not a row LockLens showed is refused', () => {
    const custom = layout(CUSTOM, 'custom-table', [SPEC]);
    const m = { ...rowLock(custom, { n: 'x', v0: 'o', v1: null }).lock.holder!, valuePreview: Buffer.from('ADDED:2024@host') };
    assert.throws(() => releaseStatement('postgres', custom, 'x', m), invalid(/not a lock-table row/));
  });
});

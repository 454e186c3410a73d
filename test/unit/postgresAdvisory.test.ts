import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isLockLensError } from '../../src/core/errors';
import { altNameOfKey, keyArguments, keyOfRow, nameOfKey, namesOfRow, parseAdvisoryName, rowOfKey } from '../../src/core/postgres/advisoryKeys';
import { hiddenSessions, INSUFFICIENT_PRIVILEGE, locksOfRows, sessionOf, type AdvisoryRow } from '../../src/core/postgres/advisoryLocks';
import { holdersText } from '../../src/core/postgres/acquire';
import { describeForceRelease } from '../../src/core/postgres/forceRelease';
import { numberPlaceholders } from '../../src/core/postgres/session';
import { SESSION_WORDS, requireHolder, sessionText } from '../../src/core/sql/sessionText';

describe('advisory keys', () => {
  test('a bigint key and pg_locks` halves, both ways, signs included', () => {
    const cases: [string, bigint, bigint][] = [
      ['42', 0n, 42n],
      ['-1', 0xffffffffn, 0xffffffffn],
      ['4294967296', 1n, 0n],
      ['9223372036854775807', 0x7fffffffn, 0xffffffffn],
      ['-9223372036854775808', 0x80000000n, 0n],
    ];
    for (const [name, classid, objid] of cases) {
      const key = parseAdvisoryName(name);
      assert.deepEqual(rowOfKey(key), { classid, objid, objsubid: 1 }, name);
      assert.equal(nameOfKey(keyOfRow(classid, objid, 1)), name);
      assert.equal(altNameOfKey(key), `(${classid}, ${objid})`);
    }
  });

  test('an int pair: k1:k2, signed, with no other name', () => {
    const key = parseAdvisoryName('-5:2147483647');
    assert.deepEqual(rowOfKey(key), { classid: 0xfffffffbn, objid: 0x7fffffffn, objsubid: 2 });
    assert.equal(nameOfKey(keyOfRow(0xfffffffbn, 0x7fffffffn, 2)), '-5:2147483647');
    assert.equal(altNameOfKey(key), undefined);
    assert.deepEqual(keyArguments(key, 2), { sql: '$2::int4, $3::int4', params: ['-5', '2147483647'] });
    assert.deepEqual(keyArguments(parseAdvisoryName('7')), { sql: '$1::int8', params: ['7'] });
  });

  test("a row's names from its text columns are the key's names, on both sides of where a double stops holding a key exactly", () => {
    const halves = [0n, 1n, 0x1fffffn, 0x200000n, 0x7fffffffn, 0x80000000n, 0xfffffffbn, 0xffffffffn];
    for (const classid of halves) {
      for (const objid of [0n, 42n, 0x7fffffffn, 0x80000000n, 0xfffffffen, 0xffffffffn]) {
        for (const objsubid of [1, 2]) {
          const key = keyOfRow(classid, objid, objsubid);
          assert.deepEqual(namesOfRow(classid.toString(), objid.toString(), objsubid), { name: nameOfKey(key), ...(altNameOfKey(key) ? { altName: altNameOfKey(key) } : {}) }, `${classid} ${objid} ${objsubid}`);
        }
      }
    }
  });

  test('anything else is refused, saying the two forms', () => {
    for (const name of ['', 'orders', '1.5', ' 1', '1:', ':1', '1:2:3', '2147483648:0', '0:-2147483649', '9223372036854775808', '-9223372036854775809', 'shedlock/job']) {
      assert.throws(() => parseAdvisoryName(name), (e: unknown) => isLockLensError(e, 'INVALID_ARGUMENT') && /a bigint such as 42.*an int pair such as 1:2/.test(e.message), name);
    }
  });
});

const row = (over: Partial<AdvisoryRow>): AdvisoryRow => ({
  classid: '0',
  objid: '42',
  objsubid: 1,
  pid: 100,
  virtualtransaction: '3/7',
  granted: true,
  shared: false,
  waitstart: null,
  blocked_by: null,
  usename: 'app',
  application_name: 'worker',
  client_addr: '10.0.0.5',
  client_port: 5555,
  backend_start: 1_700_000_000_123.456,
  state: 'idle',
  query: 'SELECT pg_advisory_lock(42)',
  ...over,
});

describe('advisory rows as locks', () => {
  test('holder, then waiters by waitstart (a waiter without one yet last), pid breaking ties', () => {
    const [lock] = locksOfRows([
      row({ pid: 300, granted: false, waitstart: null }),
      row({ pid: 250, granted: false, waitstart: 2000 }),
      row({ pid: 200, granted: false, waitstart: 1000 }),
      row({ pid: 210, granted: false, waitstart: 2000 }),
      row({ pid: 100 }),
    ]);
    assert.equal(lock.kind, 'queue');
    assert.equal(lock.holder?.owner, '100');
    assert.deepEqual(lock.waiters.map((w) => w.owner), ['200', '210', '250', '300']);
    assert.equal(lock.holder?.mode, undefined, 'no modes in an exclusive queue');
    assert.equal(lock.waiters[0].session?.waitingSince, 1000);
  });

  test('before PostgreSQL 14 (no waitstart): waiters in the order of what each waits behind (pg_blocking_pids), not by pid', () => {
    // Holder 100 (exclusive); the queue: 400 shared, then 300 exclusive, then 200 and 250 shared (granted together).
    const [lock] = locksOfRows([
      row({ pid: 100 }),
      row({ pid: 200, granted: false, shared: true, blocked_by: [100, 300] }),
      row({ pid: 250, granted: false, shared: true, blocked_by: [300, 100] }),
      row({ pid: 300, granted: false, blocked_by: [100, 400] }),
      row({ pid: 400, granted: false, shared: true, blocked_by: [100] }),
    ]);
    assert.deepEqual(lock.waiters.map((w) => w.owner), ['400', '300', '200', '250']);
    assert.equal(lock.waiters[0].session?.waitingSince, undefined, 'no wait start is made up');
  });

  test('before PostgreSQL 14: a holder waiting for the other mode orders the waiters behind it, and a deadlock cycle does not hang the order', () => {
    // 100 holds shared and waits for exclusive behind 150's shared hold; 300 (exclusive) waits behind 100's request.
    const [lock] = locksOfRows([
      row({ pid: 100, shared: true }),
      row({ pid: 150, shared: true }),
      row({ pid: 100, granted: false, blocked_by: [150] }),
      row({ pid: 200, granted: false, blocked_by: [100, 150, 300] }),
      row({ pid: 300, granted: false, blocked_by: [100, 150] }),
    ]);
    assert.deepEqual(lock.waiters.map((w) => w.owner), ['300', '200']);
    const [cycle] = locksOfRows([row({ pid: 100 }), row({ pid: 200, granted: false, blocked_by: [100, 300] }), row({ pid: 300, granted: false, blocked_by: [100, 200] })]);
    assert.deepEqual(cycle.waiters.map((w) => w.owner).sort(), ['200', '300']);
  });

  test('a session holding one key and waiting for another: only its waiting member says since when it waits', () => {
    const [a, b, c] = locksOfRows([row({ objid: '1' }), row({ objid: '2', granted: false, waitstart: 5000 }), row({ objid: '3', shared: true }), row({ objid: '3', pid: 101 })]);
    assert.equal(a.holder!.session!.waitingSince, undefined);
    assert.equal(b.waiters[0].session!.waitingSince, 5000);
    assert.deepEqual([c.holder!.owner, c.holder!.mode, c.sharedWith!.map((m) => [m.owner, m.mode])], ['101', 'write', [['100', 'read']]]);
    assert.equal(a.holder!.mode, undefined, 'the same session is a reader in a read/write lock and a plain holder in a queue');
  });

  test('shared holders are readers, exclusive ones writers; a session holding both ways is one writer', () => {
    const [lock] = locksOfRows([
      row({ pid: 5, shared: true }),
      row({ pid: 3, shared: true }),
      row({ pid: 3, shared: false }),
      row({ pid: 9, granted: false, waitstart: 1 }),
      row({ pid: 5, granted: false, waitstart: 2 }),
    ]);
    assert.equal(lock.kind, 'readwrite');
    assert.deepEqual([lock.holder, ...lock.sharedWith!].map((m) => [m!.owner, m!.mode]), [['3', 'write'], ['5', 'read']]);
    assert.deepEqual(lock.waiters.map((w) => [w.owner, w.mode]), [['9', 'write']], 'a holder asking for the other mode is shown holding');
  });

  test("a session's statement, sent on one of its rows, is in its every lock, held or waited for", () => {
    const locks = locksOfRows([
      row({ objid: '1', query: null }),
      row({ objid: '2' }),
      row({ objid: '3', query: null, pid: 200 }),
      row({ objid: '3', query: null, granted: false, waitstart: 1000 }),
    ]);
    const queries = locks.flatMap((l) => [l.holder, ...l.waiters]).map((m) => [m!.owner, m!.session?.query]);
    assert.deepEqual(queries, [['100', 'SELECT pg_advisory_lock(42)'], ['100', 'SELECT pg_advisory_lock(42)'], ['200', undefined], ['100', 'SELECT pg_advisory_lock(42)']]);
  });

  test('locks by key, in name order; a pair and a bigint of the same bits are two locks', () => {
    const locks = locksOfRows([row({ classid: '7', objid: '4294967294', objsubid: 2 }), row({ classid: '7', objid: '4294967294', objsubid: 1, pid: 101 }), row({ objid: '5', pid: 102 })]);
    assert.deepEqual(locks.map((l) => [l.name.toString(), l.id, l.altName]), [
      ['34359738366', '34359738366', '(7, 4294967294)'],
      ['5', '5', '(0, 5)'],
      ['7:-2', '7:-2', undefined],
    ]);
  });

  test('a member: its pid as key, owner and lease; its session without what is hidden', () => {
    const [lock] = locksOfRows([row({ client_addr: '::1' })]);
    const m = lock.holder!;
    assert.deepEqual([m.key.toString(), m.owner, m.lease, m.token, m.holds, m.convention], ['pid 100', '100', '100', null, null, 'pg-advisory']);
    assert.deepEqual(m.session, { user: 'app', application: 'worker', client: '[::1]:5555', connectedAt: 1_700_000_000_123, state: 'idle', query: 'SELECT pg_advisory_lock(42)' });
    const hidden = sessionOf(row({ client_addr: null, client_port: null, backend_start: null, state: null, query: INSUFFICIENT_PRIVILEGE, application_name: '' }));
    assert.deepEqual(hidden, { user: 'app' });
    assert.equal(sessionOf(row({ client_addr: null, client_port: -1 })).client, 'local socket');
    const [prepared] = locksOfRows([row({ pid: null, virtualtransaction: '-1/55' })]);
    assert.deepEqual([prepared.holder!.key.toString(), prepared.holder!.owner, prepared.holder!.lease], ['prepared transaction -1/55', '', '']);
    assert.match(describeForceRelease(prepared, prepared.holder!), /COMMIT PREPARED or ROLLBACK PREPARED/);
  });

  test('hidden sessions are counted and the way to see them is named', () => {
    assert.equal(hiddenSessions([row({})], 'app'), undefined);
    const one = hiddenSessions([row({ query: INSUFFICIENT_PRIVILEGE }), row({ query: INSUFFICIENT_PRIVILEGE, granted: false })], 'reader')!;
    assert.match(one, /^1 session of another role is shown without/);
    assert.match(one, /GRANT pg_read_all_stats TO "reader"/);
    assert.match(hiddenSessions([row({ query: INSUFFICIENT_PRIVILEGE }), row({ pid: 7, query: INSUFFICIENT_PRIVILEGE })], 'r')!, /^2 sessions of other roles are/);
  });

  test('LOCKED names every holder with what is known of it', () => {
    const [lock] = locksOfRows([row({ shared: true }), row({ pid: 101, shared: true, client_addr: null, client_port: null, application_name: '' })]);
    assert.equal(
      holdersText(lock),
      'session pid 100 (application "worker", role app, from 10.0.0.5:5555, connected at 2023-11-14T22:13:20.123Z, last ran "SELECT pg_advisory_lock(42)") and ' +
        'session pid 101 (role app, connected at 2023-11-14T22:13:20.123Z, last ran "SELECT pg_advisory_lock(42)")',
    );
    assert.equal(holdersText(undefined), 'another session (gone by now)');
  });
});

describe('sessions in words (PostgreSQL and MySQL alike)', () => {
  test('what is known, in one parenthesis; a running or last statement cut at 200 characters, never inside one', () => {
    assert.equal(sessionText('7', undefined, SESSION_WORDS.mysql), 'connection 7');
    assert.equal(sessionText('7', { user: 'app', client: '10.0.0.5:4000', state: 'Sleep' }, SESSION_WORDS.mysql), 'connection 7 (user app, from 10.0.0.5:4000, state Sleep)');
    assert.equal(sessionText('7', { state: 'Query: User lock', query: "SELECT GET_LOCK('a', 60)" }, SESSION_WORDS.mysql), `connection 7 (running "SELECT GET_LOCK('a', 60)")`);
    assert.equal(sessionText('9', { state: 'active', query: 'SELECT 1' }, SESSION_WORDS.postgres), 'session pid 9 (running "SELECT 1")');
    const long = sessionText('9', { state: 'idle in transaction', query: `${'x'.repeat(199)}😀 and more` }, SESSION_WORDS.postgres);
    assert.equal(long, `session pid 9 (last ran "${'x'.repeat(199)}😀…")`);
  });

  test('only a holder may be force-released', () => {
    const [lock] = locksOfRows([row({ pid: 1, shared: true }), row({ pid: 2, shared: true }), row({ pid: 3, granted: false, waitstart: 1 })]);
    requireHolder(lock, lock.sharedWith![0]);
    assert.throws(() => requireHolder(lock, lock.waiters[0]), (e: unknown) => isLockLensError(e, 'INVALID_ARGUMENT') && /pid 3 does not hold 42: only a holder/.test(e.message));
  });
});

describe('placeholders', () => {
  test('? becomes $n outside quotes, identifiers, dollar quotes and comments', () => {
    assert.equal(numberPlaceholders('SELECT a FROM t WHERE x = ? AND y = ?'), 'SELECT a FROM t WHERE x = $1 AND y = $2');
    assert.equal(numberPlaceholders(`SELECT '?', 'it''s ?', "we?ird", ? -- why?\n, ? /* ? */ , $$?$$, $q$ ? $q$, ?`), `SELECT '?', 'it''s ?', "we?ird", $1 -- why?\n, $2 /* ? */ , $$?$$, $q$ ? $q$, $3`);
    assert.equal(numberPlaceholders("SELECT $1 FROM t WHERE 'unterminated ?"), "SELECT $1 FROM t WHERE 'unterminated ?");
  });
});

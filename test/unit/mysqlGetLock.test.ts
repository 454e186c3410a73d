import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isLockLensError } from '../../src/core/errors';
import { checkLockName } from '../../src/core/mysql/acquire';
import { readGreeting } from '../../src/core/mysql/connect';
import { getLockName } from '../../src/core/mysql/getLockCall';
import { byWaitOrder, connectionMember, processRow } from '../../src/core/mysql/getLockReading';

const name = (statement: string | Buffer) => getLockName(Buffer.isBuffer(statement) ? statement : Buffer.from(statement))?.toString();

describe('the lock a waiting statement names', () => {
  const cases: [string, string | undefined][] = [
    ["SELECT GET_LOCK('jobs', 10)", 'jobs'],
    ['select get_lock("jobs",-1)', 'jobs'],
    ["SELECT  GET_LOCK( _utf8mb4'only\\'held' , 100) as x", "only'held"],
    ["SELECT GET_LOCK('it''s', 1)", "it's"],
    ["SELECT GET_LOCK('a\\\\b\\nc\\0', 1)", 'a\\b\nc\0'],
    ["SELECT GET_LOCK('50\\%', 1)", '50\\%'],
    ["SELECT GET_LOCK(N'n', 1)", 'n'],
    ["SELECT GET_LOCK('a' 'b', 1)", 'ab'],
    ["SELECT GET_LOCK(/* why */ 'c', 1)", 'c'],
    ["SELECT GET_LOCK(X'4142', 1)", 'AB'],
    ['SELECT GET_LOCK(0x4142, 1)', 'AB'],
    ["SELECT GET_LOCK('<b>x</b>&amp;', 1)", '<b>x</b>&amp;'],
    ['SELECT GET_LOCK(@name, 1)', undefined],
    ['SELECT GET_LOCK(?, 1)', undefined],
    ["SELECT GET_LOCK(CONCAT('a', 'b'), 1)", undefined],
    ["SELECT GET_LOCK('unterminated, 1)", undefined],
    ['SELECT SLEEP(10)', undefined],
  ];
  for (const [statement, expected] of cases) test(statement, () => assert.equal(name(statement), expected));

  test('the name comes back byte for byte, whatever its encoding', () => {
    const bytes = Buffer.concat([Buffer.from("SELECT GET_LOCK('"), Buffer.from('é€'), Buffer.from([0xff]), Buffer.from("', 5)")]);
    assert.deepEqual(getLockName(bytes), Buffer.concat([Buffer.from('é€'), Buffer.from([0xff])]));
  });
});

describe('lock names the servers accept', () => {
  test('MySQL: at most 64 characters', () => {
    assert.equal(checkLockName('mysql', Buffer.from('é'.repeat(64))), 'é'.repeat(64));
    assert.ok(throwsCode(() => checkLockName('mysql', Buffer.from('a'.repeat(65)))));
  });
  test('MariaDB: at most 192 bytes, no characters beyond the BMP', () => {
    assert.equal(checkLockName('mariadb', Buffer.from('a'.repeat(192))), 'a'.repeat(192));
    assert.ok(throwsCode(() => checkLockName('mariadb', Buffer.from('é'.repeat(97)))));
    assert.ok(throwsCode(() => checkLockName('mariadb', Buffer.from('a😀'))));
  });
  test('never empty, always UTF-8', () => {
    assert.ok(throwsCode(() => checkLockName('mysql', Buffer.alloc(0))));
    assert.ok(throwsCode(() => checkLockName('mariadb', Buffer.from([0x61, 0xff]))));
  });
});

function throwsCode(f: () => unknown): boolean {
  try {
    f();
    return false;
  } catch (e) {
    return isLockLensError(e, 'INVALID_ARGUMENT');
  }
}

describe('members and their order', () => {
  test('waiters: longest statement first, then connection id', () => {
    const rows = [
      { id: 9, timeMs: '100.5' },
      { id: 3, timeMs: '900' },
      { id: 4, timeMs: '100.5' },
    ].map(processRow);
    assert.deepEqual(rows.sort(byWaitOrder).map((r) => r.id), [3, 4, 9]);
  });

  test('a connection as a member: its id owns it, its session as the processlist says', () => {
    const proc = processRow({ id: 12, user: 'app', host: '10.0.0.5:51234', command: 'Query', state: 'User lock', timeMs: 1500, info: Buffer.from("SELECT GET_LOCK('x', 9)") });
    const m = connectionMember(12, proc, 1000);
    assert.equal(m.key.toString(), 'connection 12');
    assert.equal(m.owner, '12');
    assert.equal(m.lease, '12');
    assert.deepEqual(m.session, { user: 'app', client: '10.0.0.5:51234', state: 'Query: User lock', query: "SELECT GET_LOCK('x', 9)", waitingSince: 1000 });
    assert.equal(connectionMember(13, undefined).session, undefined, "another user's session, hidden: no session at all");
  });
});

describe("a server's first bytes", () => {
  const greeting = (flags: number) => {
    const payload = Buffer.concat([Buffer.from([10]), Buffer.from('10.11.6-MariaDB\0'), Buffer.alloc(4), Buffer.alloc(8), Buffer.alloc(1), Buffer.from([flags & 0xff, flags >> 8])]);
    const header = Buffer.from([payload.length & 0xff, payload.length >> 8, 0, 0]);
    return Buffer.concat([header, payload]);
  };
  test('MySQL greetings, with and without TLS', () => {
    assert.deepEqual(readGreeting(greeting(0xffff)), { kind: 'mysql', offersTls: true });
    assert.deepEqual(readGreeting(greeting(0xffff & ~0x0800)), { kind: 'mysql', offersTls: false });
    assert.equal(readGreeting(greeting(0xffff).subarray(0, 12)), undefined, 'not all there yet');
  });
  test('anything else', () => {
    assert.deepEqual(readGreeting(Buffer.from('HTTP/1.1 400 Bad Request\r\n')), { kind: 'other', text: 'HTTP/1.1 400 Bad Request' });
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseEndpoints, splitEndpoints } from '../../src/core/profile';
import { LockLensError } from '../../src/core/errors';

/** Asserts that parsing throws INVALID_ARGUMENT naming `bad`. */
function assertRejected(endpoints: string[], bad?: string): void {
  assert.throws(
    () => parseEndpoints(endpoints),
    (e: unknown) => {
      assert.ok(e instanceof LockLensError, `not a LockLensError: ${String(e)}`);
      assert.equal(e.code, 'INVALID_ARGUMENT');
      if (bad !== undefined) assert.ok(e.message.includes(`'${bad}'`), `message does not name '${bad}': ${e.message}`);
      return true;
    },
  );
}

describe('parseEndpoints', () => {
  test('accepts host:port', () => {
    assert.deepEqual(parseEndpoints(['127.0.0.1:2379']), {
      endpoints: [{ host: '127.0.0.1', port: 2379, text: '127.0.0.1:2379' }],
      wantsTls: false,
    });
  });

  test('a bare host gets the default port 2379', () => {
    const { endpoints } = parseEndpoints(['localhost']);
    assert.equal(endpoints[0].host, 'localhost');
    assert.equal(endpoints[0].port, 2379);
  });

  test('accepts http://host:port without asking for TLS', () => {
    const r = parseEndpoints(['http://h:1']);
    assert.deepEqual(r.endpoints, [{ host: 'h', port: 1, text: 'http://h:1' }]);
    assert.equal(r.wantsTls, false);
  });

  test('https://host:port asks for TLS', () => {
    const r = parseEndpoints(['https://h:1']);
    assert.deepEqual(r.endpoints, [{ host: 'h', port: 1, text: 'https://h:1' }]);
    assert.equal(r.wantsTls, true);
  });

  test('one https endpoint among plain ones asks for TLS', () => {
    assert.equal(parseEndpoints(['a:1', 'https://b:2', 'c:3']).wantsTls, true);
  });

  test('accepts a bracketed IPv6 address, host without brackets', () => {
    const { endpoints } = parseEndpoints(['[::1]:2379']);
    assert.equal(endpoints[0].host, '::1');
    assert.equal(endpoints[0].port, 2379);
  });

  test('accepts https with a bracketed IPv6 address', () => {
    const r = parseEndpoints(['https://[fe80::1]:2380']);
    assert.equal(r.endpoints[0].host, 'fe80::1');
    assert.equal(r.endpoints[0].port, 2380);
    assert.equal(r.wantsTls, true);
  });

  test('accepts a trailing slash', () => {
    assert.equal(parseEndpoints(['http://h:1/']).endpoints[0].port, 1);
  });

  test('trims whitespace but keeps the text as given', () => {
    const { endpoints } = parseEndpoints([' h:7 ']);
    assert.deepEqual(endpoints[0], { host: 'h', port: 7, text: ' h:7 ' });
  });

  test('accepts port 65535 and keeps endpoints in order', () => {
    const { endpoints } = parseEndpoints(['b:65535', 'a:1']);
    assert.deepEqual(
      endpoints.map((e) => [e.host, e.port]),
      [
        ['b', 65535],
        ['a', 1],
      ],
    );
  });

  test('rejects an empty list', () => {
    assertRejected([]);
  });

  test('rejects a port above 65535, naming the endpoint', () => {
    assertRejected(['h:99999'], 'h:99999');
  });

  test('rejects port 0', () => {
    assertRejected(['h:0'], 'h:0');
  });

  test('rejects a non-numeric port', () => {
    assertRejected(['h:abc'], 'h:abc');
  });

  test('rejects garbage', () => {
    for (const bad of ['not an endpoint', '', 'ftp://h:1', 'http://h:1/path', '::1', 'h:1:2', 'h:123456']) assertRejected([bad], bad);
  });

  test('names the bad endpoint, not a good one next to it', () => {
    assert.throws(
      () => parseEndpoints(['good:1', 'bad:x']),
      (e: unknown) => e instanceof LockLensError && e.code === 'INVALID_ARGUMENT' && e.message.includes("'bad:x'") && !e.message.includes('good:1'),
    );
  });
});

describe('splitEndpoints', () => {
  test('splits on commas', () => {
    assert.deepEqual(splitEndpoints('a:1,b:2,c:3'), ['a:1', 'b:2', 'c:3']);
  });

  test('trims each endpoint', () => {
    assert.deepEqual(splitEndpoints(' a:1 , b:2\t,\nc:3 '), ['a:1', 'b:2', 'c:3']);
  });

  test('drops empty entries', () => {
    assert.deepEqual(splitEndpoints(',a:1,, ,b:2,'), ['a:1', 'b:2']);
  });

  test('an empty or blank list gives no endpoints', () => {
    assert.deepEqual(splitEndpoints(''), []);
    assert.deepEqual(splitEndpoints(' , '), []);
  });

  test('a single endpoint without commas', () => {
    assert.deepEqual(splitEndpoints('https://h:2379'), ['https://h:2379']);
  });
});

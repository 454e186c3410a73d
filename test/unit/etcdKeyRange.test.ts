import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { prefixRange, prefixRangeEnd } from '../../src/core/etcd/keyRange';

const s = (text: string) => Buffer.from(text, 'utf8');
const b = (...bytes: number[]) => Buffer.from(bytes);

describe('prefixRangeEnd and prefixRange', () => {
  test('increments the last byte of a normal prefix', () => {
    assert.deepEqual(prefixRangeEnd(s('/locks/')), s('/locks0'));
  });

  test('drops trailing 0xff bytes and increments the byte before them', () => {
    assert.deepEqual(prefixRangeEnd(b(0x61, 0xff, 0xff)), b(0x62));
    assert.deepEqual(prefixRangeEnd(b(0x61, 0xfe, 0xff)), b(0x61, 0xff));
  });

  test('spells "to the end of the keyspace" as a single NUL for a prefix of only 0xff bytes', () => {
    assert.deepEqual(prefixRangeEnd(b(0xff, 0xff)), b(0));
  });

  test('spells the empty prefix as range_end NUL', () => {
    assert.deepEqual(prefixRangeEnd(b()), b(0));
  });

  test('does not modify the prefix it is given', () => {
    const prefix = b(0x61, 0x62);
    prefixRangeEnd(prefix);
    assert.deepEqual(prefix, b(0x61, 0x62));
  });

  test('prefixRange of a normal prefix is [prefix, prefixRangeEnd)', () => {
    const r = prefixRange(s('jobs/'));
    assert.deepEqual(r.key, s('jobs/'));
    assert.deepEqual(r.range_end, s('jobs0'));
  });

  test('prefixRange of the empty prefix is the whole keyspace: key "\\0", range_end "\\0"', () => {
    const r = prefixRange(b());
    assert.deepEqual(r.key, b(0));
    assert.deepEqual(r.range_end, b(0));
  });

  test('every key with the prefix sorts inside the range, and the first key after it does not', () => {
    const prefix = b(0x61, 0xff);
    const { key, range_end } = prefixRange(prefix);
    for (const k of [b(0x61, 0xff), b(0x61, 0xff, 0x00), b(0x61, 0xff, 0xff, 0xff)]) {
      assert.ok(Buffer.compare(k, key) >= 0 && Buffer.compare(k, range_end) < 0, k.toString('hex'));
    }
    assert.ok(Buffer.compare(b(0x62), range_end) >= 0);
  });
});

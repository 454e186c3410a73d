import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizePrefixes } from '../../src/core/keys';
import { LockLensError } from '../../src/core/errors';

const bufs = (...texts: string[]) => texts.map((t) => Buffer.from(t));
const texts = (prefixes: Buffer[]) => prefixes.map((p) => p.toString('latin1'));

describe('normalizePrefixes', () => {
  test('sorts prefixes in byte order', () => {
    assert.deepEqual(texts(normalizePrefixes(bufs('jobs/', 'B/', 'apps/'))), ['B/', 'apps/', 'jobs/']);
  });

  test('removes duplicates', () => {
    assert.deepEqual(texts(normalizePrefixes(bufs('jobs/', 'jobs/', 'mail/', 'jobs/'))), ['jobs/', 'mail/']);
  });

  test('drops a prefix covered by a shorter one', () => {
    assert.deepEqual(texts(normalizePrefixes(bufs('/locks/a/b/', '/locks/', '/other/', '/locks/a/'))), ['/locks/', '/other/']);
  });

  test('keeps prefixes that only share leading bytes without covering each other', () => {
    assert.deepEqual(texts(normalizePrefixes(bufs('ab', 'ac', 'a-'))), ['a-', 'ab', 'ac']);
  });

  test('a prefix without a trailing slash covers longer names too', () => {
    assert.deepEqual(texts(normalizePrefixes(bufs('jobs-2/', 'jobs'))), ['jobs']);
  });

  test('the empty prefix covers everything', () => {
    assert.deepEqual(texts(normalizePrefixes(bufs('jobs/', '', 'mail/'))), ['']);
  });

  test('handles non-UTF-8 prefixes as bytes', () => {
    const out = normalizePrefixes([Buffer.from([0xff, 0x01]), Buffer.from([0xfe]), Buffer.from([0xff])]);
    assert.deepEqual(out, [Buffer.from([0xfe]), Buffer.from([0xff])]);
  });

  test('accepts Uint8Arrays and returns Buffers', () => {
    const out = normalizePrefixes([new Uint8Array([0x61, 0x2f])]);
    assert.ok(Buffer.isBuffer(out[0]));
    assert.deepEqual(out, [Buffer.from('a/')]);
  });

  test('does not reorder the array it is given', () => {
    const input = bufs('b/', 'a/');
    normalizePrefixes(input);
    assert.deepEqual(texts(input), ['b/', 'a/']);
  });

  test('an empty list throws INVALID_ARGUMENT', () => {
    assert.throws(
      () => normalizePrefixes([]),
      (e: unknown) => e instanceof LockLensError && e.code === 'INVALID_ARGUMENT',
    );
  });
});

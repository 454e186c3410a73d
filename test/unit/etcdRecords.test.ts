import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { toKeyRecord, VALUE_PREVIEW_BYTES, type RawKeyValue } from '../../src/core/etcd/records';

function raw(over: Partial<RawKeyValue> = {}): RawKeyValue {
  return {
    key: Buffer.from('ns/jobs/694d7a1b2c3d4e5f'),
    value: Buffer.alloc(0),
    create_revision: '10',
    mod_revision: '12',
    version: '2',
    lease: BigInt('0x694d7a1b2c3d4e5f').toString(10),
    ...over,
  };
}

describe('toKeyRecord', () => {
  test('converts revisions to numbers and the decimal lease to lowercase hex', () => {
    const r = toKeyRecord(raw());
    assert.equal(r.createRevision, 10);
    assert.equal(r.modRevision, 12);
    assert.equal(r.version, 2);
    assert.equal(r.lease, '694d7a1b2c3d4e5f');
  });

  test('a key without a lease (lease "0") has lease ""', () => {
    assert.equal(toKeyRecord(raw({ lease: '0' })).lease, '');
  });

  test('strips a namespace prefix from the key', () => {
    assert.deepEqual(toKeyRecord(raw(), 3).key, Buffer.from('jobs/694d7a1b2c3d4e5f'));
    assert.deepEqual(toKeyRecord(raw()).key, Buffer.from('ns/jobs/694d7a1b2c3d4e5f'));
  });

  test('keeps the full size of the value but only a bounded preview', () => {
    const value = Buffer.alloc(VALUE_PREVIEW_BYTES * 3, 0x61);
    const r = toKeyRecord(raw({ value }));
    assert.equal(r.valueSize, VALUE_PREVIEW_BYTES * 3);
    assert.equal(r.valuePreview.length, VALUE_PREVIEW_BYTES);
  });

  test('the preview is a copy, not a view of the gRPC buffer', () => {
    const value = Buffer.from('proposal');
    const r = toKeyRecord(raw({ value }));
    value.fill(0);
    assert.deepEqual(r.valuePreview, Buffer.from('proposal'));
  });

  test('an empty value has size 0', () => {
    const r = toKeyRecord(raw());
    assert.equal(r.valueSize, 0);
    assert.equal(r.valuePreview.length, 0);
  });
});

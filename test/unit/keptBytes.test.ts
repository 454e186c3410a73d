import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { keptBytes, keptText } from '../../src/core/keptBytes';

/** 1,000 keys of ~20 bytes kept, each made among 20 allocations of the same size that are not: a read's garbage. */
function keysAmongGarbage(keep: (text: string) => Buffer): Buffer[] {
  const kept: Buffer[] = [];
  for (let i = 0; i < 1000; i++) {
    for (let j = 0; j < 20; j++) Buffer.from(`/locks/garbage-${i}-${j}`);
    kept.push(keep(`/locks/l${i}/lock-000${i}`));
  }
  return kept;
}

const slabsOf = (buffers: Buffer[]) => new Set(buffers.map((b) => b.buffer)).size;

describe('kept bytes', () => {
  test("kept keys share slabs of their own, where Node's pool spreads them over the slabs of everything else", () => {
    const kept = keysAmongGarbage(keptText);
    assert.deepEqual(kept.slice(0, 2).map(String), ['/locks/l0/lock-0000', '/locks/l1/lock-0001']);
    assert.ok(slabsOf(kept) <= 3, `${slabsOf(kept)} slabs for 1,000 kept keys (24 KB)`);
    assert.ok(slabsOf(keysAmongGarbage((t) => Buffer.from(t))) >= 50, "Buffer.from's pool slabs: each kept key keeps one");
  });

  test('a copy, not a view: the bytes it was made from may change', () => {
    const source = Buffer.from('holder-1');
    const kept = keptBytes(source);
    source.write('HOLDER');
    assert.equal(String(kept), 'holder-1');
  });

  test('nothing and large values keep no slab', () => {
    assert.equal(keptBytes(Buffer.alloc(0)).buffer.byteLength, 0);
    const large = keptBytes(Buffer.alloc(5000, 1));
    assert.deepEqual([large.length, large.buffer.byteLength, large.every((b) => b === 1)], [5000, 5000, true]);
    assert.equal(String(keptText('é/锁')), 'é/锁');
  });
});

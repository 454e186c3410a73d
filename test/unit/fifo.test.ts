import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Fifo } from '../../src/core/fifo';

test('Fifo gives items back in the order pushed, across the cuts of its array and while pushed to as it drains', () => {
  const fifo = new Fifo<number>();
  const out: number[] = [];
  let pushed = 0;
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 3000; i++) fifo.push(pushed++);
    for (let i = 0; i < 2500; i++) out.push(fifo.shift()!);
  }
  for (let item = fifo.shift(); item !== undefined; item = fifo.shift()) out.push(item);
  assert.deepEqual(out, Array.from({ length: pushed }, (_, i) => i));
  assert.equal(fifo.shift(), undefined);
  fifo.push(7);
  assert.equal(fifo.shift(), 7);
});

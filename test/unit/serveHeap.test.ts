import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SEMI_SPACE_MB } from '../../src/cli/serve/heap';

/**
 * A process of its own, as serve is one: allocates 100 batches of short-lived objects, a twentieth of them kept a while
 * (enough to grow V8's young generation to its largest), and says the largest semi-space it had.
 */
function largestSemiSpace(sized: boolean, nodeFlags: string[] = []): number {
  const heap = JSON.stringify(join(__dirname, '../../src/cli/serve/heap.js'));
  const script = `
    const { sizeHeap, semiSpaceMb } = require(${heap});
    const unsize = ${sized} ? sizeHeap() : () => {};
    const kept = [];
    let most = 0;
    let batch = 0;
    const step = () => {
      for (let i = 0; i < 20000; i++) {
        const o = { i, s: 'x' + i, a: [i] };
        if (i % 20 === 0 && kept.push(o) > 200000) kept.splice(0, 20000);
      }
      most = Math.max(most, semiSpaceMb());
      if (++batch < 100) setImmediate(step);
      else (unsize(), process.stdout.write(String(most)));
    };
    step();`;
  const run = spawnSync(process.execPath, [...nodeFlags, '-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  return Number(run.stdout);
}

describe("serve's heap", () => {
  test("the young generation grows to SEMI_SPACE_MB and no further, where V8's own grows past it", () => {
    assert.ok(largestSemiSpace(false) > SEMI_SPACE_MB, 'the allocations grow an unsized young generation past the cap');
    assert.equal(largestSemiSpace(true), SEMI_SPACE_MB);
  });

  test('a smaller --max-semi-space-size given to node still rules', () => {
    assert.equal(largestSemiSpace(true, ['--max-semi-space-size=2']), 2);
  });
});

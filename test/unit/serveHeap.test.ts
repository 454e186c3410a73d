import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SEMI_SPACE_MB } from '../../src/cli/serve/heap';

type Sizing = 'unsized' | 'sized';

/**
 * A process of its own, as serve is one: keeps 300,000 objects in one task (serve's first reads, every lock's state
 * built at once), then allocates 100 batches of short-lived objects, a twentieth of them kept a while (enough to grow
 * V8's young generation to its largest). Says the largest semi-space it had.
 */
function largestSemiSpace(sizing: Sizing, nodeFlags: string[] = []): number {
  const heap = JSON.stringify(join(__dirname, '../../src/cli/serve/heap.js'));
  const script = `
    const { sizeHeap, semiSpaceMb } = require(${heap});
    let readsDone;
    const firstReads = new Promise((resolve) => (readsDone = resolve));
    const sizing = ${JSON.stringify(sizing)};
    const unsize = sizing === 'unsized' ? () => {} : sizeHeap(firstReads);
    let most = 0;
    setImmediate(() => {
      const models = [];
      for (let i = 0; i < 300000; i++) models.push({ i, name: 'lock/' + i, members: [i, i + 1] });
      globalThis.models = models;
      most = semiSpaceMb();
      readsDone();
      const kept = [];
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
      step();
    });`;
  const run = spawnSync(process.execPath, [...nodeFlags, '-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  return Number(run.stdout);
}

describe("serve's heap", () => {
  // Without the wait for the first reads, the sized run overshoots as well: the task that keeps 300,000 objects grows
  // the space twice before the observer is told.
  test('the young generation grows to SEMI_SPACE_MB and no further, once the first reads are done', () => {
    assert.ok(largestSemiSpace('unsized') > SEMI_SPACE_MB, 'the allocations grow an unsized young generation past the cap');
    assert.equal(largestSemiSpace('sized'), SEMI_SPACE_MB);
  });

  test('a smaller --max-semi-space-size given to node still rules', () => {
    assert.equal(largestSemiSpace('sized', ['--max-semi-space-size=2']), 2);
  });

  test('WebAssembly compiled once serve asked for Liftoff alone is never tiered up, however hot', () => {
    assert.deepEqual(hotWasm(false), { liftoff: false, turbofan: true }, 'V8 tiers a hot function up by default');
    assert.deepEqual(hotWasm(true), { liftoff: true, turbofan: false });
  });
});

/** A process of its own: a WebAssembly function (x + 1) called a million times a round; which of V8's compilers made its code. */
function hotWasm(liftoffOnly: boolean): { liftoff: boolean; turbofan: boolean } {
  const heap = JSON.stringify(join(__dirname, '../../src/cli/serve/heap.js'));
  const script = `
    if (${liftoffOnly}) require(${heap}).compileWasmWithLiftoff();
    const bytes = new Uint8Array([0,97,115,109,1,0,0,0,1,6,1,96,1,127,1,127,3,2,1,0,7,5,1,1,102,0,0,10,9,1,7,0,32,0,65,1,106,11]);
    const f = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports.f;
    let x = 0;
    // Tiering up compiles on a worker thread, its code in place a moment later: up to 5 s for it on a busy machine.
    const round = (n) => {
      for (let i = 0; i < 1e6; i++) x = f(x);
      if (%IsTurboFanFunction(f) || n === 20) process.stdout.write(JSON.stringify({ liftoff: %IsLiftoffFunction(f), turbofan: %IsTurboFanFunction(f) }));
      else setTimeout(() => round(n + 1), 250);
    };
    round(1);`;
  const run = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as { liftoff: boolean; turbofan: boolean };
}

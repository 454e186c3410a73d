import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { breakingChoices } from '../../src/core/diagnosis/breaking';
import type { Cycle } from '../../src/core/diagnosis/cycle';
import { DeadlockDetector } from '../../src/core/diagnosis/detector';
import { WaitForGraph } from '../../src/core/diagnosis/waitFor';
import { keyId } from '../../src/core/keys';
import type { LockState } from '../../src/core/lockState';
import { mulberry32 } from '../harness/random';
import { lockOf, member } from '../harness/waitLocks';

/** Each cycle as `owner holds > waits in` steps. */
const drawn = (cycles: readonly Cycle[]) => cycles.map((c) => c.members.map((m) => `${m.owner}:${m.holds.name}>${m.waitsIn.name}`).join(' '));
const graphOf = (locks: LockState[]) => {
  const g = new WaitForGraph();
  g.replace(locks);
  return g;
};

describe('the wait-for graph', () => {
  test('two owners each holding one lock and waiting in the other: one cycle, from the least owner, whatever the order read', () => {
    const locks = [lockOf('/locks/a', 'b1', ['c2']), lockOf('/locks/b', 'c2', ['b1'])];
    const g = graphOf(locks);
    assert.deepEqual(drawn(g.cycles()), ['b1:/locks/a>/locks/b c2:/locks/b>/locks/a']);
    const [cycle] = g.cycles();
    assert.equal(cycle.members[0].holds.key, '/locks/a/b1');
    assert.equal(cycle.members[0].waitsIn.key, '/locks/b/b1');
    assert.equal(graphOf([...locks].reverse()).cycles()[0].id, cycle.id);
  });

  test('a queue, and a chain of waits, are no deadlock', () => {
    assert.deepEqual(graphOf([lockOf('/q', 'a', ['b', 'c', 'd'])]).cycles(), []);
    assert.deepEqual(graphOf([lockOf('/a', 'x', ['y']), lockOf('/b', 'y', ['z']), lockOf('/c', 'z', [])]).cycles(), []);
  });

  test('three owners in a ring, and two cycles through one owner, each reported, in the order of their ids', () => {
    const ring = graphOf([lockOf('/a', 'p', ['r']), lockOf('/b', 'q', ['p']), lockOf('/c', 'r', ['q'])]);
    assert.deepEqual(drawn(ring.cycles()), ['p:/a>/b q:/b>/c r:/c>/a']);
    const two = graphOf([lockOf('/a', 'm', ['n', 'o']), lockOf('/b', 'n', ['m']), lockOf('/c', 'o', ['m'])]);
    assert.deepEqual(drawn(two.cycles()).sort(), ['m:/a>/b n:/b>/a', 'm:/a>/c o:/c>/a']);
    const ids = two.cycles().map((c) => c.id);
    assert.deepEqual(ids, [...ids].sort());
  });

  test('single-key locks (a Redis token lock, a lock-table row) and the owner nobody never join a cycle', () => {
    // Contrived: a single key never has waiters; even listed so, its owner is no one's to tie across locks.
    const single = graphOf([lockOf('/tok', 't', ['u'], { kind: 'single' }), lockOf('/q', 'u', ['t'])]);
    assert.deepEqual(single.cycles(), []);
    assert.equal(single.size.edges, 1, 'only the queue waits');
    const nobody = graphOf([lockOf('/a', '', ['v']), lockOf('/b', 'v', [''])]);
    assert.deepEqual(nobody.cycles(), []);
    assert.equal(nobody.size.edges, 0);
  });

  test('an owner waiting behind itself is no cycle; a reader waits only for writers', () => {
    assert.deepEqual(graphOf([lockOf('/a', 's', ['s'])]).cycles(), []);
    const rw = (holderMode: 'read' | 'write', waiterMode: 'read' | 'write'): LockState => ({
      ...lockOf('/rw', null),
      kind: 'readwrite',
      holder: member('/rw', 'h', 1, holderMode),
      waiters: [member('/rw', 'w', 1, waiterMode)],
    });
    const edges = (l: LockState) => graphOf([l, lockOf('/x', 'w', ['h'])]).cycles().length;
    assert.equal(edges(rw('read', 'read')), 0);
    assert.equal(edges(rw('write', 'read')), 1);
    assert.equal(edges(rw('read', 'write')), 1);
  });

  test('change sets: a cycle forms, stays while the same holds and waits last, goes when one is released', () => {
    const g = new WaitForGraph();
    const begun = g.apply({ changed: [lockOf('/a', 'x'), lockOf('/b', 'y')], removed: [] });
    assert.deepEqual(begun, []);
    const waits = g.apply({ changed: [lockOf('/a', 'x', ['y'])], removed: [] });
    assert.deepEqual(waits.map((w) => [w.owner, w.lock.name, w.holding.map((r) => r.name)]), [['y', '/a', ['/b']]]);
    g.apply({ changed: [lockOf('/b', 'y', ['x'])], removed: [] });
    const [cycle] = g.cycles();
    assert.ok(cycle);
    g.apply({ changed: [lockOf('/c', 'z')], removed: [] });
    assert.equal(g.cycles()[0].id, cycle.id, 'untouched');
    g.apply({ changed: [lockOf('/b', 'y', ['x'], { tokens: { y: 1, x: 1 } })], removed: [] });
    assert.equal(g.cycles()[0].id, cycle.id, 'read again the same');
    g.apply({ changed: [lockOf('/b', 'x')], removed: [] });
    assert.deepEqual(g.cycles(), [], 'y released /b and x took it');
    g.apply({ changed: [lockOf('/b', 'y', ['x'], { tokens: { y: 2 } })], removed: [] });
    assert.notEqual(g.cycles()[0]?.id, undefined);
    assert.notEqual(g.cycles()[0].id, cycle.id, 'a new hold is a new cycle');
    g.apply({ changed: [], removed: [keyId(Buffer.from('/a'))] });
    assert.deepEqual(g.cycles(), []);
  });

  test('randomized: the cycles kept through change sets are those of the whole state read at once', () => {
    const seed = Number(process.env.LOCKLENS_SEED ?? 22);
    const random = mulberry32(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)];
    const owners = ['a', 'b', 'c', 'd', 'e', 'f'];
    const names = ['/l0', '/l1', '/l2', '/l3', '/l4', '/l5', '/l6', '/l7'];
    const state = new Map<string, LockState>();
    const g = new WaitForGraph();
    let token = 0;
    let truncated = 0;
    for (let step = 0; step < 2000; step++) {
      const changed: LockState[] = [];
      const removed: string[] = [];
      for (let k = 0; k < 1 + Math.floor(random() * 3); k++) {
        const name = pick(names);
        if (random() < 0.15) {
          const id = keyId(Buffer.from(name));
          if (state.delete(id)) removed.push(id);
          changed.splice(0, changed.length, ...changed.filter((l) => l.id !== id));
          continue;
        }
        const waiters = owners.filter(() => random() < 0.25);
        const tokens = Object.fromEntries(owners.map((o) => [o, random() < 0.1 ? ++token : 0]));
        const l = lockOf(name, random() < 0.8 ? pick(owners) : null, waiters, { tokens });
        state.set(l.id, l);
        const at = removed.indexOf(l.id);
        if (at >= 0) removed.splice(at, 1);
        changed.push(l);
      }
      g.apply({ changed: [...new Map(changed.map((l) => [l.id, l])).values()], removed });
      if (g.truncated) {
        truncated++;
        continue;
      }
      assert.deepEqual(g.cycles().map((c) => c.id), graphOf([...state.values()]).cycles().map((c) => c.id), `seed ${seed}, step ${step}`);
    }
    assert.ok(truncated < 100, `${truncated} steps beyond the bounds`);
  });
});

describe('breaking a deadlock', () => {
  test("each choice says whose hold goes, which lock it frees and who takes it", () => {
    const queued = graphOf([lockOf('/a', 'x', ['z', 'y']), lockOf('/b', 'y', ['x'])]);
    const choices = breakingChoices(queued.cycles()[0], (o) => `lease ${o}`);
    assert.deepEqual(
      choices.map((c) => [c.owner, c.lock.name, c.key, c.letsIn, c.next, c.text]),
      [
        ['x', '/a', '/a/x', false, 'z', "force-releasing lease x's hold on /a hands it to lease z, first of 1 queued ahead of lease y"],
        ['y', '/b', '/b/y', true, 'x', "force-releasing lease y's hold on /b lets lease x take /b"],
      ],
    );
    const shared: LockState = { ...lockOf('/r', null), kind: 'readwrite', holder: member('/r', 'p', 1, 'read'), sharedWith: [member('/r', 'o', 1, 'read')], waiters: [member('/r', 'q', 1, 'write')] };
    const [cycle] = graphOf([shared, lockOf('/s', 'q', ['p'])]).cycles();
    assert.equal(breakingChoices(cycle).find((c) => c.owner === 'p')!.text, "force-releasing p's hold on /r does not free it: 1 other holder holds it too");
  });
});

describe('the deadlock detector', () => {
  const cycleIn = (locks: LockState[]) => graphOf(locks).cycles();
  const deadlock = [lockOf('/a', 'x', ['y']), lockOf('/b', 'y', ['x'])];

  test('a cycle is confirmed by the second read that shows it, said once, and said cleared once', () => {
    const d = new DeadlockDetector();
    const first = d.read(cycleIn(deadlock), 1000);
    assert.deepEqual([first.confirmed.length, first.appeared.length], [0, 0], 'one read is never enough');
    const second = d.read(cycleIn(deadlock), 2000);
    assert.equal(second.appeared.length, 1);
    assert.equal(second.appeared[0].since, 1000);
    const third = d.read(cycleIn(deadlock), 3000);
    assert.deepEqual([third.confirmed.length, third.appeared.length, third.cleared.length], [1, 0, 0]);
    const gone = d.read([], 4000);
    assert.deepEqual([gone.confirmed.length, gone.cleared.length], [0, 1]);
    assert.equal(d.read([], 5000).cleared.length, 0);
  });

  test('a stale read: a cycle shown once, or made of other holds in the next read, is not confirmed', () => {
    const d = new DeadlockDetector();
    d.read(cycleIn(deadlock), 1000);
    d.read([], 2000);
    assert.equal(d.read(cycleIn(deadlock), 3000).appeared.length, 0);
    const again = [lockOf('/a', 'x', ['y'], { tokens: { x: 9 } }), lockOf('/b', 'y', ['x'])];
    assert.equal(d.read(cycleIn(again), 4000).appeared.length, 0, 'x took /a again in between');
    d.reset();
    assert.equal(d.read(cycleIn(again), 5000).appeared.length, 0, 'a new watch starts over');
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LockRef, WaitBegun } from '../../src/core/diagnosis/cycle';
import { LockOrder } from '../../src/core/diagnosis/inversions';
import { WaitForGraph } from '../../src/core/diagnosis/waitFor';
import { identityOf } from '../../src/core/holdObservation';
import { keyId } from '../../src/core/keys';
import { isSingleKey, type LockMember, type LockState } from '../../src/core/lockState';
import { mulberry32 } from '../harness/random';
import { lockOf, member } from '../harness/waitLocks';

/**
 * The graph and the lock orders are kept from change sets, touching only the changed locks' holds and waits; what they
 * say must be what a graph made from scratch of the whole state says, at every step.
 */
const fromScratch = (locks: Iterable<LockState>) => {
  const g = new WaitForGraph();
  g.replace([...locks]);
  return g;
};
const ids = (g: WaitForGraph) => g.cycles().map((c) => c.id);
const names = (refs: readonly LockRef[]) => refs.map((r) => r.name);
const id = (name: string) => keyId(Buffer.from(name));

describe('the wait-for graph, change by change', () => {
  test('an edge added closes a chain into a cycle; another change elsewhere leaves it as it is', () => {
    const g = new WaitForGraph();
    g.apply({ changed: [lockOf('/a', 'p', ['q']), lockOf('/b', 'q', ['r']), lockOf('/c', 'r')], removed: [] });
    assert.deepEqual(g.cycles(), [], 'a chain');
    const begun = g.apply({ changed: [lockOf('/c', 'r', ['p'])], removed: [] });
    assert.deepEqual(begun.map((w) => [w.owner, w.lock.name, names(w.holding)]), [['p', '/c', ['/a']]]);
    const state = [lockOf('/a', 'p', ['q']), lockOf('/b', 'q', ['r']), lockOf('/c', 'r', ['p'])];
    assert.deepEqual(ids(g), ids(fromScratch(state)));
    assert.equal(g.cycles().length, 1);
    g.apply({ changed: [lockOf('/d', 'p', ['s'])], removed: [] });
    assert.deepEqual(ids(g), ids(fromScratch(state)));
  });

  test('an edge removed breaks the cycle, and only the holds are left', () => {
    const g = fromScratch([lockOf('/a', 'p', ['r']), lockOf('/b', 'q', ['p']), lockOf('/c', 'r', ['q'])]);
    assert.equal(g.cycles().length, 1);
    assert.deepEqual(g.apply({ changed: [lockOf('/b', 'q')], removed: [] }), [], 'a wait ending begins none');
    assert.deepEqual(g.cycles(), []);
    assert.equal(g.size.edges, 2);
    assert.deepEqual(names(g.holding('q')), ['/b']);
  });

  test('a lock forgotten takes its holds, its waits and its cycles with it; seen again, its waits begin again', () => {
    const g = fromScratch([lockOf('/a', 'x', ['y']), lockOf('/b', 'y', ['x']), lockOf('/c', 'x')]);
    assert.equal(g.cycles().length, 1);
    g.apply({ changed: [], removed: [id('/a')] });
    assert.deepEqual(g.cycles(), []);
    assert.deepEqual(names(g.holding('x')), ['/c']);
    assert.deepEqual(g.size, { locks: 2, owners: 2, edges: 1 });
    g.apply({ changed: [], removed: [id('/a')] });
    assert.deepEqual(g.size, { locks: 2, owners: 2, edges: 1 }, 'forgetting it twice is forgetting it once');
    const begun = g.apply({ changed: [lockOf('/a', 'x', ['y'])], removed: [] });
    assert.deepEqual(begun.map((w) => [w.owner, names(w.holding)]), [['y', ['/b']]]);
    assert.deepEqual(names(g.holding('x')), ['/a', '/c']);
    assert.equal(g.cycles().length, 1);
  });

  test('an owner with several waits: one cycle through each, and one wait ending leaves the other', () => {
    const g = fromScratch([lockOf('/a', 'm'), lockOf('/b', 'n', ['m']), lockOf('/c', 'o', ['m'])]);
    assert.deepEqual(g.cycles(), []);
    const begun = g.apply({ changed: [lockOf('/a', 'm', ['n', 'o'])], removed: [] });
    assert.deepEqual(begun.map((w) => [w.owner, names(w.holding)]), [['n', ['/b']], ['o', ['/c']]]);
    assert.equal(g.cycles().length, 2);
    g.apply({ changed: [lockOf('/c', 'o')], removed: [] });
    const left = [lockOf('/a', 'm', ['n', 'o']), lockOf('/b', 'n', ['m']), lockOf('/c', 'o')];
    assert.deepEqual(ids(g), ids(fromScratch(left)));
    assert.equal(g.cycles().length, 1);
    assert.equal(g.cycles()[0].members.length, 2);
  });

  test('randomized: cycles, holds, sizes and the waits said to begin are those a graph made from scratch says', () => {
    const seed = Number(process.env.LOCKLENS_SEED ?? 22);
    const random = mulberry32(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)];
    const owners = ['a', 'b', 'c', 'd', 'e', 'f', ''];
    const lockNames = Array.from({ length: 10 }, (_, i) => `/l${i}`);
    const state = new Map<string, LockState>();
    const g = new WaitForGraph();
    const order = new LockOrder({ maxPairs: 1e9 });
    const sightings: { held: string; waitedFor: string; owner: string; at: number }[] = [];
    let token = 0;
    const someone = () => member('', pick(owners), random() < 0.2 ? ++token : 1);
    for (let step = 0; step < 1000; step++) {
      const changed = new Map<string, LockState>();
      const removed: string[] = [];
      for (let k = 0; k < 1 + Math.floor(random() * 4); k++) {
        const name = pick(lockNames);
        if (random() < 0.1) {
          if (state.has(id(name)) && !changed.has(id(name))) removed.push(id(name));
          continue;
        }
        if (removed.includes(id(name))) continue;
        changed.set(id(name), randomLock(name, random, someone));
      }
      const before = new Map(state);
      for (const r of removed) state.delete(r);
      for (const [k, l] of changed) state.set(k, l);
      const begun = g.apply({ changed: [...changed.values()], removed });
      const now = step * 1000;
      order.observe(begun, now);
      const scratch = fromScratch(state.values());
      const at = `seed ${seed}, step ${step}`;
      assert.deepEqual(g.size, scratch.size, at);
      for (const o of owners) assert.deepEqual(g.holding(o), scratch.holding(o), `${at}, owner ${o}`);
      assert.deepEqual(drawn(begun), drawn(waitsBegun(before, [...changed.values()], scratch)), at);
      if (!g.truncated && !scratch.truncated) assert.deepEqual(ids(g), ids(scratch), at);
      for (const w of begun) for (const h of w.holding) sightings.push({ held: h.id, waitedFor: w.lock.id, owner: w.owner, at: now });
      if (step % 50 === 49) assert.deepEqual(inversionsOf(order.inversions(now)), inversionsFrom(sightings, now), at);
    }
    assert.ok(sightings.length > 100, `${sightings.length} orders seen: the sequence exercises them`);
  });
});

describe('lock orders beyond maxPairs', () => {
  test('among orders last seen at the same time, the one kept first is forgotten first, even when seen again since', () => {
    const ref = (name: string) => ({ id: name, name });
    const order = new LockOrder({ maxPairs: 4 });
    const seen = (held: string, waitedFor: string): WaitBegun => ({ owner: 'o', lock: ref(waitedFor), holding: [ref(held)] });
    order.observe([seen('/1', '/x'), seen('/2', '/x'), seen('/3', '/x'), seen('/4', '/x')], 0);
    order.observe([seen('/1', '/x'), seen('/5', '/x')], 0);
    assert.equal(order.size, 3);
    assert.deepEqual(
      order.observe([seen('/x', '/1'), seen('/x', '/2'), seen('/x', '/3')], 0).map((i) => i.locks[0].id),
      ['/3'],
      '/1 then /x and /2 then /x were the first kept: they went, though /1 then /x was seen again as late as the rest',
    );
  });
});

/** A lock of one of the kinds that take part or not: a queue, a read/write lock with readers sharing, a single key. */
function randomLock(name: string, random: () => number, someone: () => LockMember): LockState {
  const waiters = Array.from({ length: Math.floor(random() * 4) }, someone).map((m) => ({ ...m, key: Buffer.from(`${name}/${m.owner}`) }));
  const holder = random() < 0.85 ? { ...someone(), key: Buffer.from(`${name}/h`) } : null;
  const kind = random();
  if (kind < 0.7 || !holder) return { ...lockOf(name, null), holder, waiters };
  if (kind < 0.9) {
    const mode = (): 'read' | 'write' => (random() < 0.6 ? 'read' : 'write');
    const shared = random() < 0.5 ? [{ ...someone(), mode: 'read' as const }] : [];
    return { ...lockOf(name, null), kind: 'readwrite', holder: { ...holder, mode: shared.length ? 'read' : mode() }, sharedWith: shared, waiters: waiters.map((w) => ({ ...w, mode: mode() })) };
  }
  return { ...lockOf(name, null, [], { kind: 'single' }), holder };
}

/** The waits present now and not in the lock before (by member identity), with what each owner holds now. */
function waitsBegun(before: ReadonlyMap<string, LockState>, changed: readonly LockState[], now: WaitForGraph): WaitBegun[] {
  const takesPart = (l: LockState | undefined) => l && !isSingleKey(l) && (l.holder?.owner || l.sharedWith?.some((m) => m.owner) || l.waiters.some((m) => m.owner));
  const out: WaitBegun[] = [];
  for (const lock of changed) {
    if (!takesPart(lock)) continue;
    const was = before.get(lock.id);
    const had = new Set(takesPart(was) ? was!.waiters.filter((w) => w.owner).map(identityOf) : []);
    const ref = { id: lock.id, name: lock.name.toString() };
    // A member listed twice is one wait.
    for (const w of lock.waiters) if (w.owner && !had.has(identityOf(w)) && had.add(identityOf(w))) out.push({ owner: w.owner, lock: ref, holding: now.holding(w.owner).filter((r) => r.id !== lock.id) });
  }
  return out;
}

/** Begun waits as text, their holds in name order (the graph gives them in the order they were taken). */
function drawn(begun: readonly WaitBegun[]): string[] {
  return begun.map((w) => `${w.owner} in ${w.lock.name} holding ${names(w.holding).sort().join(',')}`).sort();
}

function inversionsOf(inversions: ReturnType<LockOrder['inversions']>): string[] {
  return inversions.map((i) => `${i.locks[0].id}|${i.locks[1].id} ${i.first.owner}@${i.first.at} ${i.second.owner}@${i.second.at}`).sort();
}

/** From scratch: each ordered pair's latest sighting within the hour; a pair seen both ways is an inversion. */
function inversionsFrom(sightings: readonly { held: string; waitedFor: string; owner: string; at: number }[], now: number): string[] {
  const latest = new Map<string, { owner: string; at: number }>();
  for (const s of sightings) latest.set(`${s.held}|${s.waitedFor}`, s);
  const fresh = (s: { at: number } | undefined) => s && now - s.at <= 60 * 60_000;
  const out: string[] = [];
  for (const [pair, s] of latest) {
    const [a, b] = pair.split('|');
    const reverse = latest.get(`${b}|${a}`);
    if (a < b && fresh(s) && fresh(reverse)) out.push(`${a}|${b} ${s.owner}@${s.at} ${reverse!.owner}@${reverse!.at}`);
  }
  return out.sort();
}

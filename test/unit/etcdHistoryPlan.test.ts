import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  answersProgressWhenCaughtUp,
  ETCD_BATCH_REVISIONS,
  HistoryReadPlan,
  PROGRESS_FALLBACK_MS,
  QUIET_MIN_MS,
  silenceEndsReadAt,
  type Delivery,
  type PlanStep,
  type ReadWindow,
} from '../../src/core/etcd/historyPlan';

const spans = (windows: readonly ReadWindow[]) => windows.map((w) => `${w.start}-${w.end}`);
/** A batch of `revisions` consecutive revisions from `first`, sent when etcd was at `header`. */
const batch = (first: number, revisions: number, header: number): Delivery => ({ firstRevision: first, lastRevision: first + revisions - 1, revisions, header });
const opened = (step: PlanStep) => step.open.map((o) => `${o.window.start}@${o.from}`);

describe('HistoryReadPlan: reading [from, to] with parallel watches', () => {
  test('the span is cut into contiguous windows of about one batch each, at most one per watch', () => {
    assert.deepEqual(spans(new HistoryReadPlan(1, 3500, 64).windows), ['1-875', '876-1750', '1751-2625', '2626-3500']);
    const wide = new HistoryReadPlan(1, 1_000_000, 64).windows;
    assert.equal(wide.length, 64);
    wide.forEach((w, i) => i && assert.equal(w.start, wide[i - 1].end + 1));
    assert.equal(wide.at(-1)!.end, 1_000_000);
    assert.deepEqual(spans(new HistoryReadPlan(1, 10, 64).windows), ['1-10']);
  });

  test('nothing to read: done at once', () => {
    const plan = new HistoryReadPlan(51, 50, 64);
    assert.equal(plan.windows.length, 0);
    assert.ok(plan.done);
  });

  test("a batch of fewer than etcd's batch revisions is a watch's last: read through its header, every window passed closes", () => {
    const plan = new HistoryReadPlan(1, 3000, 64);
    const [first] = plan.windows;
    const step = plan.delivered(first, batch(2, 10, 3004));
    assert.deepEqual(spans(step.close), ['1-1000', '1001-2000', '2001-3000'], 'the later windows had nothing to read: they close unread');
    assert.deepEqual(step.open, []);
    assert.ok(plan.done);
  });

  test('a full batch proves only its revisions: its watch starts again from its last one, whose events exist', () => {
    const plan = new HistoryReadPlan(1, 3000, 2);
    const [first, second] = plan.windows;
    assert.deepEqual(spans(plan.windows), ['1-1500', '1501-3000']);
    const step = plan.delivered(first, batch(1, ETCD_BATCH_REVISIONS, 3000));
    assert.deepEqual(step.close, []);
    assert.deepEqual(opened(step), ['1@1000']);
    assert.equal(plan.frontier, 1000);
    plan.delivered(first, batch(1000, ETCD_BATCH_REVISIONS, 3000));
    assert.ok(first.closed, 'read past its end');
    assert.ok(!plan.done);
    const last = plan.delivered(second, batch(1501, 400, 3000));
    assert.deepEqual(spans(last.close), ['1501-3000']);
    assert.ok(plan.done);
  });

  test('a window read exactly to its end goes on while the next has heard nothing (it may stay silent)', () => {
    const plan = new HistoryReadPlan(1, 2000, 64);
    const [first] = plan.windows;
    const step = plan.delivered(first, batch(1, 1000, 2000));
    assert.deepEqual(step.close, []);
    assert.deepEqual(opened(step), ['1@1000']);
    // No event after 1000: the next batch is the events of 1000 alone, the watch's last, through its header.
    const end = plan.delivered(first, batch(1000, 1, 2000));
    assert.deepEqual(spans(end.close), ['1-1000', '1001-2000']);
    assert.ok(plan.done);
    // Had the next window heard events of its own, this one could stop at its end.
    const plan2 = new HistoryReadPlan(1, 2000, 64);
    const [a, b] = plan2.windows;
    plan2.delivered(b, batch(1001, 1000, 2000));
    assert.deepEqual(spans(plan2.delivered(a, batch(1, 1000, 2000)).close), ['1-1000']);
  });

  test('a sparse full batch that stops short of its window end goes on from its last revision', () => {
    const plan = new HistoryReadPlan(1, 4000, 2);
    const [w] = plan.windows;
    const step = plan.delivered(w, { firstRevision: 1, lastRevision: 1999, revisions: 1000, header: 4000 });
    assert.deepEqual(step.close, []);
    assert.deepEqual(opened(step), ['1@1999']);
  });

  test('a last batch from a member still behind `to` is not the end: the watch starts again from its last revision', () => {
    const plan = new HistoryReadPlan(1, 500, 64);
    const [w] = plan.windows;
    const step = plan.delivered(w, batch(10, 5, 400));
    assert.deepEqual(opened(step), ['1@14']);
    assert.equal(plan.frontier, 400);
    assert.ok(!plan.done);
    plan.delivered(w, batch(14, 1, 520));
    assert.ok(plan.done);
  });

  test('a dense window is split over the watches that are done', () => {
    const plan = new HistoryReadPlan(1, 40_000, 4);
    const [a, b, c, d] = plan.windows;
    for (const w of [a, b, c]) plan.reached(w, w.end + 1);
    assert.deepEqual(spans(plan.windows.filter((w) => !w.closed)), ['30001-40000']);
    const step = plan.delivered(d, batch(30001, 1000, 40000));
    // 9001 revisions left, dense: four watches of 2251 revisions, the one that read the batch going on from its end.
    assert.deepEqual(opened(step), ['30001@31000', '33251@33251', '35502@35502', '37753@37753']);
    assert.deepEqual(spans(plan.windows.slice(3)), ['30001-33250', '33251-35501', '35502-37752', '37753-40000']);
    assert.equal(plan.frontier, 31000);
  });

  test('a sparse full batch is not split: idle watches would read the same events again', () => {
    const plan = new HistoryReadPlan(1, 100_000, 2);
    const [a, b] = plan.windows;
    plan.reached(a, a.end);
    // 1000 revisions with events over 40,000 revisions: about 250 more in the 10,000 left.
    const step = plan.delivered(b, { firstRevision: 50_001, lastRevision: 90_000, revisions: 1000, header: 100_000 });
    assert.deepEqual(opened(step), ['50001@90000']);
  });

  test('a progress reply etcd sends only to a watch that caught up reads it through that revision', () => {
    const plan = new HistoryReadPlan(1, 3000, 64);
    const step = plan.reached(plan.windows[0], 3001);
    assert.equal(step.close.length, 3);
    assert.ok(plan.done);
  });

  test('the frontier waits for the lowest window: a later one read first does not count yet', () => {
    const plan = new HistoryReadPlan(101, 3100, 64);
    const [first, , third] = plan.windows;
    plan.delivered(third, batch(2200, 3, 3100));
    assert.equal(plan.frontier, 100);
    plan.delivered(first, batch(101, 1000, 3100));
    assert.equal(plan.frontier, 1100);
    assert.ok(!plan.done);
  });
});

describe('answersProgressWhenCaughtUp: which etcd a progress reply can be believed from', () => {
  test('3.4.31, 3.5.13, 3.6 and later: yes; the versions before, with either bug: no', () => {
    for (const v of ['3.4.31', '3.4.34', '3.5.13', '3.5.17', '3.6.0', '3.7.1', '4.0.0']) assert.equal(answersProgressWhenCaughtUp(v), true, v);
    for (const v of ['3.4.23', '3.4.30', '3.5.0', '3.5.12', '3.3.27', '2.3.8']) assert.equal(answersProgressWhenCaughtUp(v), false, v);
  });
});

describe('silenceEndsReadAt: when a read that heard no event may end on silence', () => {
  test('where progress replies cannot be believed: after a quiet time that grows with the revisions to scan, a second at least', () => {
    assert.equal(silenceEndsReadAt(300, false, false), QUIET_MIN_MS);
    // etcd sends about 1,000 revisions a 100 ms pass: 100 s for a million, twice that for margin.
    assert.equal(silenceEndsReadAt(1_000_000, false, false), 200_000);
    assert.ok(silenceEndsReadAt(100_000, false, false)! > 10 * QUIET_MIN_MS);
  });

  test('where they can: never once one came; without any, the same quiet time, after PROGRESS_FALLBACK_MS at the earliest', () => {
    assert.equal(silenceEndsReadAt(300, true, true), undefined);
    assert.equal(silenceEndsReadAt(1_000_000, true, true), undefined);
    assert.equal(silenceEndsReadAt(300, true, false), PROGRESS_FALLBACK_MS);
    assert.equal(silenceEndsReadAt(1_000_000, true, false), 200_000);
  });
});

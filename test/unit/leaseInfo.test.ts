import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_REFRESH_MARKS, observeLease, remainingTtl, sampleDue, tellsNews, type LeaseInfo, type LeaseSample } from '../../src/core/leaseInfo';

const ID = '694d7a1b2c3d4e5f';
const T0 = 1_700_000_000_000;
const KEYS = [Buffer.from(`jobs/${ID}`)];

function sample(ttl: number, atSeconds: number, grantedTtl = 60, keys: readonly Buffer[] = KEYS): LeaseSample {
  return { ttl, grantedTtl, keys, at: T0 + atSeconds * 1000 };
}

/** Feeds samples in order, each folded into the previous result. */
function fold(samples: LeaseSample[], stallFraction?: number): LeaseInfo {
  let info: LeaseInfo | undefined;
  for (const s of samples) info = observeLease(info, ID, s, stallFraction);
  return info!;
}

describe('observeLease', () => {
  test('a first sample is alive, with no refreshes, first seen now', () => {
    const info = observeLease(undefined, ID, sample(55, 0));
    assert.deepEqual(info, {
      id: ID,
      state: 'alive',
      grantedTtl: 60,
      ttl: 55,
      observedAt: T0,
      firstSeenAt: T0,
      refreshes: [],
      stalled: false,
      stallFraction: 0.5,
      keys: KEYS,
    });
  });

  test('a normal countdown is not a refresh', () => {
    const info = fold([sample(60, 0), sample(50, 10), sample(40, 20)]);
    assert.deepEqual(info.refreshes, []);
    assert.equal(info.ttl, 40);
  });

  test('one second of slack: a TTL exactly 1 s above the countdown is not a refresh', () => {
    const info = fold([sample(30, 0), sample(21, 10)]); // expected 20
    assert.deepEqual(info.refreshes, []);
  });

  test('a TTL more than 1 s above the counted-down expectation is a refresh, marked at the sample time', () => {
    const info = fold([sample(60, 0), sample(40, 20), sample(60, 25)]); // expected 35
    assert.deepEqual(info.refreshes, [T0 + 25_000]);
  });

  test('a refresh is detected from a fractional-second gap', () => {
    const first = observeLease(undefined, ID, { ttl: 10, grantedTtl: 10, keys: KEYS, at: T0 });
    const next = observeLease(first, ID, { ttl: 10, grantedTtl: 10, keys: KEYS, at: T0 + 1500 }); // expected 8.5
    assert.deepEqual(next.refreshes, [T0 + 1500]);
  });

  test('keeps the first-seen time and earlier refresh marks across samples', () => {
    const info = fold([sample(60, 0), sample(60, 30), sample(50, 40), sample(60, 60)]);
    assert.equal(info.firstSeenAt, T0);
    assert.equal(info.observedAt, T0 + 60_000);
    assert.deepEqual(info.refreshes, [T0 + 30_000, T0 + 60_000]);
  });

  test('does not change the previous info', () => {
    const first = fold([sample(60, 0), sample(60, 30)]);
    const refreshesBefore = [...first.refreshes];
    observeLease(first, ID, sample(60, 60));
    assert.deepEqual(first.refreshes, refreshesBefore);
  });

  test('takes the keys of the latest sample', () => {
    const later = [Buffer.from('a'), Buffer.from('b')];
    const info = fold([sample(60, 0), sample(55, 5, 60, later)]);
    assert.equal(info.keys, later);
  });

  test('stalled when the TTL falls below half the granted TTL', () => {
    assert.equal(observeLease(undefined, ID, sample(29, 0, 60)).stalled, true);
  });

  test('not stalled at exactly half the granted TTL, nor above it', () => {
    assert.equal(observeLease(undefined, ID, sample(30, 0, 60)).stalled, false);
    assert.equal(observeLease(undefined, ID, sample(45, 0, 60)).stalled, false);
  });

  test('a custom stallFraction moves the threshold', () => {
    assert.equal(observeLease(undefined, ID, sample(40, 0, 60), 0.7).stalled, true);
    assert.equal(observeLease(undefined, ID, sample(42, 0, 60), 0.7).stalled, false);
    assert.equal(observeLease(undefined, ID, sample(29, 0, 60), 0.25).stalled, false);
  });

  test('a lease with granted TTL 0 is never stalled', () => {
    assert.equal(observeLease(undefined, ID, sample(0, 0, 0)).stalled, false);
  });

  test('a refreshed lease is no longer stalled', () => {
    const info = fold([sample(60, 0), sample(20, 40), sample(60, 41)]);
    assert.equal(info.stalled, false);
    assert.equal(info.refreshes.length, 1);
  });

  test('TTL -1 means expired: state expired, ttl 0, not stalled', () => {
    const info = fold([sample(10, 0), sample(-1, 20)]);
    assert.equal(info.state, 'expired');
    assert.equal(info.ttl, 0);
    assert.equal(info.stalled, false);
    assert.equal(info.observedAt, T0 + 20_000);
  });

  test('a first sample that is already expired is expired', () => {
    const info = observeLease(undefined, ID, sample(-1, 0, 10, []));
    assert.equal(info.state, 'expired');
    assert.equal(info.ttl, 0);
    assert.deepEqual(info.refreshes, []);
  });

  test('expiry is not counted as a refresh, and keeps earlier marks', () => {
    const info = fold([sample(60, 0), sample(60, 30), sample(-1, 200)]);
    assert.deepEqual(info.refreshes, [T0 + 30_000]);
  });

  test('a sample after an expired one is not compared with it for refreshes', () => {
    const info = fold([sample(10, 0), sample(-1, 20), sample(50, 21)]);
    assert.equal(info.state, 'alive');
    assert.deepEqual(info.refreshes, []);
  });

  test(`keeps at most MAX_REFRESH_MARKS (${MAX_REFRESH_MARKS}) refresh marks, newest last`, () => {
    const samples = [sample(60, 0)];
    for (let i = 1; i <= MAX_REFRESH_MARKS + 8; i++) samples.push(sample(60, i * 30));
    const info = fold(samples);
    assert.equal(info.refreshes.length, MAX_REFRESH_MARKS);
    assert.equal(info.refreshes.at(-1), T0 + (MAX_REFRESH_MARKS + 8) * 30_000);
    assert.equal(info.refreshes[0], T0 + 9 * 30_000);
    assert.deepEqual(info.refreshes, [...info.refreshes].sort((a, b) => a - b));
  });
});

describe('remainingTtl', () => {
  const info = observeLease(undefined, ID, sample(10, 0, 10));

  test('is the sampled TTL at the sample time', () => {
    assert.equal(remainingTtl(info, T0), 10);
  });

  test('counts down from the sample', () => {
    assert.equal(remainingTtl(info, T0 + 4000), 6);
    assert.equal(remainingTtl(info, T0 + 2500), 7.5);
  });

  test('floors at 0 once the TTL has run out', () => {
    assert.equal(remainingTtl(info, T0 + 10_000), 0);
    assert.equal(remainingTtl(info, T0 + 60_000), 0);
  });

  test('is 0 for an expired lease', () => {
    const expired = observeLease(info, ID, sample(-1, 1, 10));
    assert.equal(remainingTtl(expired, T0 + 1000), 0);
  });
});

describe('sampleDue', () => {
  test('a lease never sampled, stalled or expired is always due', () => {
    assert.equal(sampleDue(undefined, T0), true);
    assert.equal(sampleDue(fold([sample(60, 0), sample(20, 40)]), T0 + 40_000), true);
    assert.equal(sampleDue(fold([sample(60, 0), sample(-1, 1)]), T0 + 1000), true);
  });

  test('an alive lease is due once its countdown comes within a second of the stall line, not before', () => {
    const info = observeLease(undefined, ID, sample(60, 0));
    assert.equal(sampleDue(info, T0 + 28_000), false);
    assert.equal(sampleDue(info, T0 + 29_000), true);
    assert.equal(sampleDue(info, T0 + 10_000, 0.9), true, 'a higher stall fraction draws the line earlier');
  });

  test('a due sample finds the stall a sample at every sweep would, no sweep later', () => {
    // Sweeps every 2 s of a 60 s lease nobody renews: every sample at once, or only those due, in turn.
    let every: LeaseInfo | undefined;
    let due: LeaseInfo | undefined;
    const stalledAt = { every: -1, due: -1 };
    for (let t = 0; t <= 60; t += 2) {
      const s = sample(60 - t, t);
      every = observeLease(every, ID, s);
      if (sampleDue(due, s.at)) due = observeLease(due, ID, s);
      if (every.stalled && stalledAt.every < 0) stalledAt.every = t;
      if (due!.stalled && stalledAt.due < 0) stalledAt.due = t;
    }
    assert.equal(stalledAt.due, stalledAt.every);
  });
});

describe('tellsNews', () => {
  const first = observeLease(undefined, ID, sample(60, 0));

  test('a first sample, a refresh, a stall and an expiry are news', () => {
    assert.equal(tellsNews(undefined, first), true);
    assert.equal(tellsNews(first, observeLease(first, ID, sample(60, 10))), true, 'refreshed');
    assert.equal(tellsNews(first, observeLease(first, ID, sample(29, 31))), true, 'stalled');
    assert.equal(tellsNews(first, observeLease(first, ID, sample(-1, 31))), true, 'expired');
  });

  test('a sample that finds the countdown where it was is not', () => {
    assert.equal(tellsNews(first, observeLease(first, ID, sample(50, 10))), false);
    assert.equal(tellsNews(first, observeLease(first, ID, sample(49, 10))), false, "etcd's whole seconds");
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PollPacer, adaptiveInterval, formatCount, formatMs, POLL_COST_FACTOR } from '../../src/core/redis/pollPacing';
import { unlockedNames } from '../../src/core/redis/nodeSubscriptions';

const b = (s: string) => Buffer.from(s);

describe('Redis poll pacing (pure)', () => {
  test('the next poll waits the configured interval, or k times the last read when that is longer', () => {
    assert.equal(POLL_COST_FACTOR, 10);
    assert.equal(adaptiveInterval(1000, 5), 1000, 'a cheap read: the configured interval');
    assert.equal(adaptiveInterval(1000, 100), 1000, 'exactly k times: still the configured one');
    assert.equal(adaptiveInterval(1000, 320), 3200, 'an expensive read: k times it');
    assert.equal(adaptiveInterval(50, 41), 410);
    assert.equal(adaptiveInterval(1000, 320, 20), 6400, 'k is a parameter');
    assert.equal(adaptiveInterval(1000, 0), 1000);
    assert.equal(adaptiveInterval(1000, Number.NaN), 1000, 'no measure: the configured interval');
    assert.equal(adaptiveInterval(0, 0.25), 3, 'rounded up to whole ms');
  });

  test('the pacer slows down at once, speeds up only on a clear drop, and says why in the status', () => {
    const pacer = new PollPacer(1000);
    assert.equal(pacer.intervalMs, 1000);
    assert.equal(pacer.describe(), 'polling every 1 s: keyspace notifications are off');
    assert.equal(pacer.observe({ keys: 500, ms: 3 }), false, 'cheap reads change nothing');
    assert.equal(pacer.slowed, false);

    const slow = new PollPacer(1000);
    assert.equal(slow.observe({ keys: 2_100_000, ms: 320 }), true);
    assert.equal(slow.intervalMs, 3200);
    assert.equal(slow.describe(), 'polling every 3.2 s: a full read of 2.1M keys takes 320 ms; turn on keyspace notifications for live updates');
    // CONFIG refused: turning notifications on is not advice LockLens can check.
    assert.equal(
      slow.describe('unreadable'),
      'polling every 3.2 s: a full read of 2.1M keys takes 320 ms; CONFIG is refused, so LockLens cannot tell whether keyspace notifications are on: it follows them if they come',
    );
    // Reads vary a little from poll to poll: the status does not flicker.
    for (const ms of [330, 310, 335, 300, 325]) assert.equal(slow.observe({ keys: 2_100_000, ms }), false, `${ms} ms keeps the interval`);
    assert.equal(slow.intervalMs, 3200);
    // A read twice as slow raises it (smoothed: one spike moves it part of the way).
    assert.equal(slow.observe({ keys: 2_100_000, ms: 640 }), true);
    assert.ok(slow.intervalMs > 3200 * 1.1 && slow.intervalMs < 6400, `raised towards 6.4 s: ${slow.intervalMs}`);
    // The keyspace shrinks: back to the configured interval, and the plain status.
    let changed = false;
    for (let i = 0; i < 30; i++) changed = slow.observe({ keys: 900, ms: 2 }) || changed;
    assert.ok(changed);
    assert.equal(slow.intervalMs, 1000);
    assert.equal(slow.describe(), 'polling every 1 s: keyspace notifications are off');

    const refused = new PollPacer(200);
    refused.observe({ keys: undefined, ms: 41 });
    assert.equal(refused.describe(), 'polling every 410 ms: a full read takes 41 ms; turn on keyspace notifications for live updates', 'DBSIZE refused: no count');
  });

  test('the least gap after a read, for reads that events ask for', () => {
    const pacer = new PollPacer(1000);
    assert.equal(pacer.gapAfter(2), 20);
    assert.equal(pacer.gapAfter(640), 6400);
  });

  test('figures as the status shows them', () => {
    assert.deepEqual([200, 999, 1000, 3200, 12_345, 60_000, 150_000].map(formatMs), ['200 ms', '999 ms', '1 s', '3.2 s', '12 s', '60 s', '2.5 min']);
    assert.deepEqual([950, 1000, 1500, 200_003, 2_100_000, 12_600_000].map(formatCount), ['950', '1k', '1.5k', '200k', '2.1M', '13M']);
  });

  test('a Redisson unlock channel names the lock it was for', () => {
    const uuid = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
    const names = (c: string) => unlockedNames(b(c)).map((n) => n.toString());
    assert.deepEqual(names('redisson_lock__channel:{app:orders}'), ['app:orders']);
    assert.deepEqual(names('redisson_rwlock:{app:rw}'), ['app:rw']);
    // A fair lock wakes the head of its queue on a channel of its own; both readings are given.
    assert.deepEqual(names(`redisson_lock__channel:{app:fair}:${uuid}:7`), [`{app:fair}:${uuid}:7`, 'app:fair']);
    // A name with a brace is used as it is.
    assert.deepEqual(names('redisson_lock__channel:app:{tag}x'), ['app:{tag}x']);
    assert.deepEqual(names('something_else:{x}'), []);
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CONVENTIONS, recognize, type FairQueue, type KeyRecord } from '../../src/core/redis/recognize';
import { TtlTable } from '../../src/core/redis/ttlTable';
import { NON_EXPIRABLE, SemaphoreCounters, permitTimeoutKey, permitTtlId, semaphoreChannel } from '../../src/core/redis/semaphores';

const b = (s: string) => Buffer.from(s);
const NOW = 1_700_000_000_000;
const ALL = [b('')];
const none = new Map<string, FairQueue>();

function zset(key: string, entries: [string, number][], pttl = 10_000): KeyRecord {
  return { key: b(key), type: 'zset', pttl, entries: entries.map(([m, s]) => [b(m), s] as const) };
}
function counter(key: string, value: string, extra: Partial<KeyRecord> = {}): KeyRecord {
  return { key: b(key), type: 'string', pttl: -1, value: b(value), valueSize: value.length, ...extra };
}

describe('Redis semaphore recognition', () => {
  test("redis-semaphore: semaphore:<key>'s tokens are its permit holders, each expiring lockTimeout after its score", () => {
    // The newest entry (NOW - 1000) set the key's PTTL to lockTimeout: 9000 left, so lockTimeout is 10 s.
    const { locks, ttls } = recognize([zset('semaphore:jobs', [['tok-b', NOW - 1000], ['tok-a', NOW - 4000]], 9000)], none, ALL, NOW);
    assert.equal(locks.length, 1);
    const [lock] = locks;
    assert.equal(lock.kind, 'semaphore');
    assert.deepEqual(lock.permits, { limit: null, free: null, holdersRecorded: true });
    assert.deepEqual([lock.holder, ...lock.sharedWith!].map((m) => m!.owner), ['tok-a', 'tok-b'], 'by token: a refresh moves a score');
    assert.equal(lock.holder?.convention, CONVENTIONS.redisSemaphore);
    assert.equal(lock.holder?.expiresWith, 'ttl');
    assert.equal(ttls.get(permitTtlId(b('semaphore:jobs'), b('tok-a')))?.ms, 6000);
    assert.equal(ttls.get(permitTtlId(b('semaphore:jobs'), b('tok-b')))?.deadline, NOW + 9000);
    assert.equal(ttls.get(permitTtlId(b('semaphore:jobs'), b('tok-b')))?.stallFraction, 0.1, 'refreshed with a fifth left: late only under a tenth');
    assert.deepEqual(lock.waiters, []);
  });

  test('redis-semaphore MultiSemaphore: <identifier>_<i> entries are permits of one owner', () => {
    const { locks } = recognize([zset('semaphore:m', [['abc_0', NOW], ['abc_1', NOW]])], none, ALL, NOW);
    const holders = [locks[0].holder!, ...locks[0].sharedWith!];
    assert.deepEqual(holders.map((h) => [h.owner, h.key.toString(), h.convention]), [
      ['abc', 'abc_0', CONVENTIONS.redisMultiSemaphore],
      ['abc', 'abc_1', CONVENTIONS.redisMultiSemaphore],
    ]);
  });

  test('sorted sets that are not redis-semaphore permits are not locks', () => {
    const cases = [
      zset('leaderboard', [['alice', NOW]]), // not named semaphore:<key>
      zset('semaphore:x', [['a', NOW]], -1), // redis-semaphore always sets an expiry
      zset('semaphore:ranks', [['a', 3], ['b', 7]]), // scores are no acquire times
      zset('semaphore:future', [['a', NOW + 7 * 86_400_000]]),
      zset('semaphore:', [['a', NOW]]),
    ];
    assert.deepEqual(recognize(cases, none, ALL, NOW).locks, []);
  });

  test('Redisson RPermitExpirableSemaphore: the counter is the free permits, {name}:timeout the ids held and when each expires', () => {
    const id = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
    const forever = Buffer.from('ffeeddccbbaa99887766554433221100', 'hex');
    const record = counter('pool', '1', { permitIds: [[id, NOW + 5000], [forever, NON_EXPIRABLE]] });
    const { locks, ttls } = recognize([record], none, ALL, NOW);
    const [lock] = locks;
    assert.equal(lock.kind, 'semaphore');
    assert.deepEqual(lock.permits, { limit: 3, free: 1, holdersRecorded: true });
    assert.equal(lock.holder?.owner, '00112233445566778899aabbccddeeff', 'the id as Redisson returns it, in hex');
    assert.equal(lock.holder?.convention, CONVENTIONS.redissonPermitSemaphore);
    assert.equal(ttls.get(lock.holder!.lease)?.ms, 5000);
    assert.equal(lock.sharedWith?.[0].expiresWith, 'nothing', 'a permit taken without a lease time never expires');
    assert.equal(permitTimeoutKey(b('pool')).toString(), '{pool}:timeout');
    assert.equal(permitTimeoutKey(b('{pool}')).toString(), '{pool}:timeout');
  });

  test('Redisson RSemaphore: an integer is a semaphore only while a Redisson client waits on its channel; holders not recorded', () => {
    const { locks } = recognize([counter('slots', '0', { semaphoreWaiters: 2 })], none, ALL, NOW);
    assert.equal(locks[0].kind, 'semaphore');
    assert.equal(locks[0].holder, null);
    assert.deepEqual(locks[0].permits, { limit: null, free: 0, holdersRecorded: false });
    assert.equal(semaphoreChannel(b('slots')).toString(), 'redisson_sc:{slots}');
  });

  test('an integer nobody waits on stays a token lock (SET name 1 NX PX writes one too)', () => {
    const { locks } = recognize([counter('lock:a', '1')], none, ALL, NOW);
    assert.equal(locks[0].kind, 'single');
    assert.equal(locks[0].holder?.convention, CONVENTIONS.token);
  });

  test("a redis-semaphore permit with a fifth of its TTL left is not late: its client refreshes then", () => {
    const stalled = (stallFraction?: number) => {
      const table = new TtlTable();
      table.observe([{ id: 'p', ms: 10_000, keys: [b('k')], ...(stallFraction ? { stallFraction } : {}) }], 0);
      return table.observe([{ id: 'p', ms: 3000, keys: [b('k')], ...(stallFraction ? { stallFraction } : {}) }], 7000)[0].stalled;
    };
    assert.equal(stalled(), true, 'below half: a Redisson watchdog would have renewed');
    assert.equal(stalled(0.1), false);
  });

  test('a counter seen as an RSemaphore stays one between its waiters, until a read under its prefix finds it something else', () => {
    const counters = new SemaphoreCounters();
    const read = (records: KeyRecord[], scope: Parameters<SemaphoreCounters['note']>[1]) => {
      const { locks } = recognize(counters.mark(records), none, ALL, NOW);
      counters.note(locks, scope);
      return locks.map((l) => l.kind);
    };
    assert.deepEqual(read([counter('slots', '2', { semaphoreWaiters: 1 }), counter('other', '2')], { prefixes: ALL }), ['single', 'semaphore']);
    assert.deepEqual(read([counter('slots', '3')], { names: [b('slots')] }), ['semaphore'], 'nobody waits now: still one');
    assert.deepEqual(read([counter('other', '2')], { prefixes: [b('oth')] }), ['single'], 'a read elsewhere keeps it');
    assert.deepEqual(read([counter('slots', '3')], { prefixes: ALL }), ['semaphore']);
    assert.deepEqual(read([counter('slots', 'tok')], { names: [b('slots')] }), ['single']);
    assert.deepEqual(read([counter('slots', '3')], { prefixes: ALL }), ['single'], 'forgotten once it was something else');
    assert.deepEqual(read([counter('gone', '1', { semaphoreWaiters: 1 })], { prefixes: ALL }), ['semaphore']);
    read([], { prefixes: ALL });
    assert.deepEqual(read([counter('gone', '1')], { names: [b('gone')] }), ['single'], 'a full read without it forgot it');
  });
});

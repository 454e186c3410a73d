import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { keyId } from '../../src/core/keys';
import {
  CONVENTIONS,
  MAX_TOKEN_BYTES,
  keyTtlId,
  parseDeadlines,
  queueOwnerName,
  recognize,
  shedlockHost,
  waiterTtlId,
  type FairQueue,
  type KeyRecord,
} from '../../src/core/redis/recognize';
import { fairLockChannel, lockChannel, lockQueueKey, lockTimeoutKey, portLockChannel, redissonNameFromPrefixed, rlockChannels, rwLockChannel } from '../../src/core/redis/redissonNames';
import { globPrefix } from '../../src/core/redis/keyspaceReader';
import { parseRedisEndpoint } from '../../src/core/redis/endpoints';
import { redact } from '../../src/core/redact';
import { expiredEventsOn, keyspaceNotificationsOn } from '../../src/core/redis/nodeSubscriptions';

const UUID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
const UUID2 = '6fa459ea-ee8a-3ca4-894e-db77e160355e';
const b = (s: string) => Buffer.from(s);
const NOW = 1_700_000_000_000;
const ALL = [b('')];

function hash(key: string | Buffer, fields: [string, string][], pttl = 30_000): KeyRecord {
  return { key: typeof key === 'string' ? b(key) : key, type: 'hash', pttl, fields: fields.map(([f, v]) => [b(f), b(v)] as const), fieldCount: fields.length };
}
function str(key: string | Buffer, value: string | Buffer, pttl = 10_000): KeyRecord {
  const v = typeof value === 'string' ? b(value) : value;
  return { key: typeof key === 'string' ? b(key) : key, type: 'string', pttl, value: v, valueSize: v.length };
}
const none = new Map<string, FairQueue>();

describe('Redis lock recognition', () => {
  test('Redisson RLock: one <uuid>:<tid> field with its hold count, the hash PTTL as lease', () => {
    const { locks, ttls } = recognize([hash('locks/orders', [[`${UUID}:57`, '2']], 25_000)], none, ALL, NOW);
    assert.equal(locks.length, 1);
    const [lock] = locks;
    assert.equal(lock.id, keyId(b('locks/orders')));
    assert.equal(lock.kind, 'queue');
    assert.equal(lock.holder?.convention, CONVENTIONS.redissonLock);
    assert.equal(lock.holder?.owner, `${UUID}:57`);
    assert.deepEqual(lock.holder?.key, b(`${UUID}:57`));
    assert.equal(lock.holder?.holds, 2);
    assert.equal(lock.holder?.token, null);
    assert.equal(lock.holder?.lease, keyTtlId(b('locks/orders')));
    assert.equal(ttls.get(lock.holder!.lease)?.ms, 25_000);
    assert.deepEqual(lock.waiters, []);
  });

  test('hashes that are not Redisson locks are not locks', () => {
    const cases: KeyRecord[] = [
      hash('h1', [['name', 'alice']]),
      hash('h2', [[`${UUID}:1`, 'x']]), // not a count
      hash('h3', [[`${UUID}:1`, '0']]), // zero holds is not a hold
      hash('h4', [[`${UUID.toUpperCase()}:1`, '1']]), // Redisson writes lowercase
      hash('h5', [[`${UUID}:1`, '1'], ['extra', '1']]),
      hash('h6', [[`${UUID}:1`, '1'], [`${UUID2}:2`, '1']]), // two holders of an exclusive lock
      hash('h7', [['mode', 'sideways'], [`${UUID}:1`, '1']]),
      hash('h8', [['mode', 'read']]), // a mode and nobody
      hash('h9', [['mode', 'read'], [`${UUID}:1:write`, '1']]),
      { key: b('h10'), type: 'hash', pttl: -1, fieldCount: 100_000 }, // too big to have been read
      hash('h11', []),
    ];
    assert.deepEqual(recognize(cases, none, ALL, NOW).locks, []);
  });

  test("a port's RLock (node-redisson's <uuid>:<uuid>, or a thread id its caller chose) is a lock when its hash expires", () => {
    const records = [
      hash('locks/node', [[`${UUID}:${UUID2}`, '2']], 20_000),
      hash('locks/named', [[`${UUID}:worker-7`, '1']], 5_000),
      hash('locks/goroutine', [[`${UUID}:18`, '1']]), // a Go port's goroutine id is a number: Redisson's shape
    ];
    const { locks, ttls } = recognize(records, none, ALL, NOW);
    assert.deepEqual(
      locks.map((l) => [l.name.toString(), l.kind, l.holder?.convention, l.holder?.owner, l.holder?.holds]),
      [
        ['locks/goroutine', 'queue', CONVENTIONS.redissonLock, `${UUID}:18`, 1],
        ['locks/named', 'queue', CONVENTIONS.redissonPortLock, `${UUID}:worker-7`, 1],
        ['locks/node', 'queue', CONVENTIONS.redissonPortLock, `${UUID}:${UUID2}`, 2],
      ],
    );
    const node = locks[2];
    assert.equal(ttls.get(node.holder!.lease)?.ms, 20_000);
    assert.equal(node.holder?.expiresWith, 'ttl');
  });

  test('hashes of counters are not locks, even with uuids in their fields', () => {
    const cases: KeyRecord[] = [
      hash('page:views', [['2024-01:17', '17']], -1), // HINCRBY per month
      hash('page:views2', [['user:42', '3']], 60_000), // per user, expiring
      hash('page:views3', [['2024-01', '17'], ['2024-02', '9']]),
      hash('sessions', [[`${UUID}:${UUID2}`, '4']], -1), // a port's field shape without the expiry every port sets
      hash('sessions2', [[`${UUID}:home`, '4'], [`${UUID2}:home`, '1']]), // two holders: no RLock
      hash('sessions3', [[`${UUID}:a b`, '1']]), // a space is no thread id
      hash('sessions4', [[`${UUID}:${'t'.repeat(129)}`, '1']]),
      hash('sessions5', [[`${UUID}:1:write`, '1']]), // a writer field without a mode is no read/write lock either
      hash('sessions6', [[`${UUID.slice(0, 35)}x:${UUID2}`, '1']]), // not a uuid
      hash('sessions7', [[`${UUID}:${UUID2}`, '-1']]),
    ];
    assert.deepEqual(recognize(cases, none, ALL, NOW).locks, []);
  });

  test('an unlock latch (redisson_unlock_latch:{name}:<request id>) is not a token lock', () => {
    const { locks } = recognize([str(`redisson_unlock_latch:{locks/node}:${UUID}`, '1', 10), str('locks/t', 'tok')], none, ALL, NOW);
    assert.deepEqual(locks.map((l) => l.name.toString()), ['locks/t']);
  });

  test('fair lock: holder, then the queue LIST in order with ZSET deadlines counting down', () => {
    const name = b('locks/fair');
    const queue: FairQueue = {
      name,
      waiters: [b(`${UUID2}:3`), b(`${UUID2}:1`)],
      deadlines: new Map([
        [keyId(b(`${UUID2}:1`)), NOW + 90_000],
        [keyId(b(`${UUID2}:3`)), NOW + 60_000],
      ]),
    };
    const { locks, ttls } = recognize([hash(name, [[`${UUID}:9`, '1']])], new Map([[keyId(name), queue]]), ALL, NOW);
    const [lock] = locks;
    assert.equal(lock.holder?.convention, CONVENTIONS.redissonFairLock);
    assert.deepEqual(lock.waiters.map((w) => w.owner), [`${UUID2}:3`, `${UUID2}:1`]);
    assert.deepEqual(lock.waiters.map((w) => w.deadline), [NOW + 60_000, NOW + 90_000]);
    assert.ok(lock.waiters.every((w) => w.convention === CONVENTIONS.redissonFairLock && w.holds === null));
    assert.equal(lock.waiters[0].lease, waiterTtlId(name, b(`${UUID2}:3`)));
    assert.equal(ttls.get(lock.waiters[0].lease)?.ms, 60_000);
    assert.equal(ttls.get(lock.waiters[1].lease)?.ms, 90_000);
    assert.notEqual(lock.waiters[0].lease, lock.holder?.lease);
  });

  test('a fair queue whose hash is gone shows as a free lock with its waiters, if under a watched prefix', () => {
    const name = b('locks/free');
    const queue: FairQueue = { name, waiters: [b(`${UUID}:1`)], deadlines: new Map() };
    const queues = new Map([[keyId(name), queue]]);
    const [lock] = recognize([], queues, [b('locks/')], NOW).locks;
    assert.equal(lock.holder, null);
    assert.equal(lock.waiters.length, 1);
    assert.equal(lock.waiters[0].lease, '', 'no deadline known: nothing counts down');
    assert.deepEqual(recognize([], queues, [b('other/')], NOW).locks, []);
    // A key at the name that is not a lock hides the queue rather than inventing a free lock.
    assert.deepEqual(recognize([{ key: name, type: 'list', pttl: -1 }], queues, ALL, NOW).locks, []);
  });

  test('read/write lock in read mode: every reader holds, timeouts strings belong to it', () => {
    const name = 'locks/rw';
    const records = [
      hash(name, [['mode', 'read'], [`${UUID2}:4`, '1'], [`${UUID}:7`, '2']]),
      str(`{${name}}:${UUID}:7:rwlock_timeout:1`, '1'),
      str(`{${name}}:${UUID}:7:rwlock_timeout:2`, '1'),
      str(`{${name}}:${UUID2}:4:rwlock_timeout:1`, '1'),
    ];
    const { locks } = recognize(records, none, ALL, NOW);
    assert.equal(locks.length, 1, 'the rwlock_timeout strings are not locks of their own');
    const [lock] = locks;
    assert.equal(lock.kind, 'readwrite');
    assert.equal(lock.holder?.mode, 'read');
    assert.equal(lock.holder?.owner, `${UUID}:7`);
    assert.equal(lock.holder?.holds, 2);
    assert.deepEqual(lock.sharedWith?.map((m) => [m.owner, m.mode, m.holds]), [[`${UUID2}:4`, 'read', 1]]);
    assert.ok([lock.holder!, ...lock.sharedWith!].every((m) => m.convention === CONVENTIONS.redissonRwLock));
  });

  test("read/write lock in write mode: the writer holds, its own thread's read holds beside it", () => {
    const [lock] = recognize([hash('rw2', [['mode', 'write'], [`${UUID}:1:write`, '1'], [`${UUID}:1`, '1']])], none, ALL, NOW).locks;
    assert.equal(lock.holder?.mode, 'write');
    assert.equal(lock.holder?.owner, `${UUID}:1:write`);
    assert.deepEqual(lock.sharedWith?.map((m) => m.mode), ['read']);
  });

  test('ShedLock: the host from ADDED:<time>@<host>:<uuid>, the value previewed', () => {
    const value = `ADDED:2024-05-01T10:00:00.123Z@worker-3.prod:${UUID}`;
    const [lock] = recognize([str('job-lock:default:nightly', value, 600_000)], none, ALL, NOW).locks;
    assert.equal(lock.kind, 'single');
    assert.equal(lock.holder?.convention, CONVENTIONS.shedlock);
    assert.equal(lock.holder?.owner, 'worker-3.prod');
    assert.equal(lock.holder?.valuePreview.toString(), value);
    assert.equal(shedlockHost(b('ADDED:2020-01-01T00:00:00Z@host-a')), 'host-a');
    assert.equal(shedlockHost(b('ADDED:x@')), undefined);
    assert.equal(shedlockHost(b('not shedlock')), undefined);
  });

  test('token locks: redis-py, redlock, Spring, the recipe; no expiry is lease ""', () => {
    const records = [
      str('locks/py', 'a5f1c9e02f3b11efb1a30242ac120002', -1),
      str('locks/redlock', '8f1c0d7e6b5a49382716051423324150', 4000),
      str('registry:spring-key', '5d2c3b14-8a9e-4f5b-9c1d-2e3f4a5b6c7d', 60_000),
    ];
    const { locks, ttls } = recognize(records, none, ALL, NOW);
    assert.deepEqual(locks.map((l) => l.holder?.convention), [CONVENTIONS.token, CONVENTIONS.token, CONVENTIONS.token]);
    const py = locks.find((l) => l.name.equals(b('locks/py')))!;
    assert.equal(py.holder?.owner, 'a5f1c9e02f3b11efb1a30242ac120002');
    assert.equal(py.holder?.lease, '', 'never expires');
    assert.equal(ttls.has(keyTtlId(b('locks/py'))), false);
    const rl = locks.find((l) => l.name.equals(b('locks/redlock')))!;
    assert.equal(ttls.get(rl.holder!.lease)?.ms, 4000);
  });

  test('binary names and values: ids lossless, owners escaped, never merged', () => {
    const k1 = Buffer.from([0x6c, 0xff, 0x01]);
    const k2 = Buffer.from([0x6c, 0xfe, 0x01]);
    const { locks } = recognize([str(k1, Buffer.from([0xc3, 0x28])), str(k2, 'tok')], none, ALL, NOW);
    assert.equal(locks.length, 2);
    assert.notEqual(locks[0].id, locks[1].id);
    assert.deepEqual(locks[1].name, k1, 'sorted by bytes: 0xfe before 0xff');
    assert.equal(locks[1].holder?.owner, '\\xc3(');
  });

  test('other types, empty or oversize strings, and keys that vanished are skipped', () => {
    const records: KeyRecord[] = [
      { key: b('l'), type: 'list', pttl: -1 },
      { key: b('s'), type: 'set', pttl: -1 },
      { key: b('x'), type: 'stream', pttl: -1 },
      { key: b('gone'), type: 'none', pttl: -2 },
      { key: b('changed'), type: 'string', pttl: -1 }, // TYPE said string, GET found something else
      { key: b('big'), type: 'string', pttl: -1, valueSize: MAX_TOKEN_BYTES + 1 },
      { key: b('wasHash'), type: 'hash', pttl: -1, fieldCount: 1 }, // HGETALL answered WRONGTYPE
    ];
    assert.deepEqual(recognize(records, none, ALL, NOW).locks, []);
  });

  test('locks come sorted by name bytes, each once', () => {
    const { locks } = recognize([str('b', '1'), str('a', '2'), str('a', '3')], none, ALL, NOW);
    assert.deepEqual(locks.map((l) => l.name.toString()), ['a', 'b']);
  });
});

describe('Redisson names', () => {
  test("node-redisson's RLock channel: wrapped unless the name starts with a brace; both told where they differ", () => {
    assert.equal(portLockChannel(b('orders')).toString(), 'redisson_lock__channel:{orders}');
    assert.equal(portLockChannel(b('{tag}orders')).toString(), 'redisson_lock__channel:{tag}orders');
    assert.equal(portLockChannel(b('lock:{orders}:42')).toString(), 'redisson_lock__channel:{lock:{orders}:42}');
    assert.deepEqual(rlockChannels(b('orders')).map(String), ['redisson_lock__channel:{orders}']);
    assert.deepEqual(rlockChannels(b('lock:{orders}:42')).map(String), ['redisson_lock__channel:lock:{orders}:42', 'redisson_lock__channel:{lock:{orders}:42}']);
  });

  test('prefixName wraps in a hash tag unless the name has one', () => {
    assert.equal(lockQueueKey(b('orders')).toString(), 'redisson_lock_queue:{orders}');
    assert.equal(lockTimeoutKey(b('orders')).toString(), 'redisson_lock_timeout:{orders}');
    assert.equal(lockChannel(b('orders')).toString(), 'redisson_lock__channel:{orders}');
    assert.equal(rwLockChannel(b('orders')).toString(), 'redisson_rwlock:{orders}');
    assert.equal(lockQueueKey(b('{tag}orders')).toString(), 'redisson_lock_queue:{tag}orders');
    assert.equal(fairLockChannel(b('o'), b(`${UUID}:1`)).toString(), `redisson_lock__channel:{o}:${UUID}:1`);
  });

  test('the inverse recovers the name', () => {
    for (const name of ['orders', '{tag}orders', 'a:b:c', 'x{y}']) {
      assert.equal(queueOwnerName(lockQueueKey(b(name)))?.toString(), name);
      assert.equal(redissonNameFromPrefixed('redisson_lock_timeout', lockTimeoutKey(b(name)))?.toString(), name);
    }
    assert.equal(queueOwnerName(b('something_else:{x}')), undefined);
  });

  test('ZSET pairs parse to deadlines', () => {
    const d = parseDeadlines([b('a'), b('1700000000000'), b('b'), b('nan?')]);
    assert.equal(d.get(keyId(b('a'))), 1_700_000_000_000);
    assert.equal(d.has(keyId(b('b'))), false);
  });
});

describe('Redis endpoints and patterns', () => {
  test('URLs: TLS, db, credentials (never in labels), bare host:port', () => {
    const e = parseRedisEndpoint('rediss://alice:s3cret@cache.internal:6380/2');
    assert.deepEqual([e.host, e.port, e.db, e.tls, e.username, e.password], ['cache.internal', 6380, 2, true, 'alice', 's3cret']);
    assert.ok(!e.label.includes('s3cret'));
    assert.deepEqual([parseRedisEndpoint('redis://127.0.0.1').port, parseRedisEndpoint('127.0.0.1:7000').port], [6379, 7000]);
    assert.equal(parseRedisEndpoint('redis://[::1]:6379').host, '::1');
    for (const bad of ['http://x:1', 'redis://', 'redis://h:99999', 'redis://h/abc', 'a b']) {
      assert.throws(() => parseRedisEndpoint(bad), /INVALID_ARGUMENT|not a Redis endpoint|starts with/, bad);
    }
    assert.throws(() => parseRedisEndpoint('redis://u:pw@h/x'), (e: Error) => !e.message.includes('pw@'));
    assert.equal(redact('redis://u:pw@h:1'), 'redis://u:***@h:1');
  });

  test('SCAN patterns escape glob characters in prefixes', () => {
    assert.equal(globPrefix(b('locks/')).toString(), 'locks/*');
    assert.equal(globPrefix(b('a*b?[c]\\')).toString(), 'a\\*b\\?\\[c\\]\\\\*');
    assert.deepEqual(globPrefix(Buffer.from([0xff])), Buffer.from([0xff, 0x2a]));
    assert.equal(globPrefix(b('')).toString(), '*');
  });

  test('keyspace notification flags', () => {
    assert.equal(keyspaceNotificationsOn(''), false);
    assert.equal(keyspaceNotificationsOn('KEA'), true);
    assert.equal(keyspaceNotificationsOn('AK'), true);
    assert.equal(keyspaceNotificationsOn('EA'), false, 'keyevent only: LockLens listens to keyspace channels');
    assert.equal(keyspaceNotificationsOn('Kg$hzx'), true);
    assert.equal(keyspaceNotificationsOn('Kg$hx'), false, 'without sorted set events a semaphore\'s permits would go unseen');
    assert.equal(keyspaceNotificationsOn('Kg$h'), false, 'without expired events an expired lock would linger');
  });

  test('expired key events: E with x, or with A (which includes x)', () => {
    assert.equal(expiredEventsOn('Ex'), true);
    assert.equal(expiredEventsOn('EA'), true);
    assert.equal(expiredEventsOn('KEA'), true);
    assert.equal(expiredEventsOn('Kx'), false, 'keyspace only: told by keyspace notifications, when those are on');
    assert.equal(expiredEventsOn('E$'), false);
    assert.equal(expiredEventsOn(''), false);
  });
});

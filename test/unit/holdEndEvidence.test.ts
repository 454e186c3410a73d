import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { endOfGone, evidenceOf, fellBelow, goneOwners, type EndEvidence } from '../../src/core/holdEndEvidence';
import { observeLease } from '../../src/core/leaseInfo';
import { LockEvents } from '../../src/core/lockEvents';
import type { LockMember, LockState } from '../../src/core/lockState';

const ETCD = { hasLeases: true, sampledTtls: true };
const REDIS = { hasLeases: false, sampledTtls: true };
const ZOOKEEPER = { hasLeases: false, sampledTtls: false };
const SQL = { hasLeases: false, sampledTtls: true };
const none: EndEvidence = { lease: 'l', secondsLeft: undefined, leaseGone: false, expiryEvents: false, expiryTold: false };

describe('how a hold whose key went ended', () => {
  test('etcd: time left on the lease is a release (a delete, or its session closing), none left an expiry', () => {
    assert.equal(endOfGone({ ...none, secondsLeft: 7 }, ETCD), 'released');
    assert.equal(endOfGone({ ...none, secondsLeft: 7, leaseGone: true }, ETCD), 'released', 'revoked before its time');
    assert.equal(endOfGone({ ...none, secondsLeft: -0.4, leaseGone: true }, ETCD), 'expired');
    assert.equal(endOfGone({ ...none, secondsLeft: 0.2 }, ETCD), 'expired', 'within the slack of its end');
  });

  test('etcd without a sample: a lease gone cannot be told revoked from expired; one not asked is the store\'s to say', () => {
    assert.equal(endOfGone({ ...none, leaseGone: true }, ETCD), 'revokedOrExpired');
    assert.equal(endOfGone(none, ETCD), null);
    assert.equal(endOfGone({ ...none, lease: '' }, ETCD), 'released', 'a key without a lease was deleted');
  });

  test('Redis with expired events: they decide, whatever the countdown said', () => {
    const events = { ...none, expiryEvents: true };
    assert.equal(endOfGone({ ...events, expiryTold: true, secondsLeft: 3 }, REDIS), 'expired');
    assert.equal(endOfGone({ ...events, secondsLeft: -1 }, REDIS), 'released', 'deleted at its last moment');
    assert.equal(endOfGone({ ...events, leaseGone: true }, REDIS), 'released');
  });

  test('Redis without them: the PTTL countdown decides; a key found gone without one is not told', () => {
    assert.equal(endOfGone({ ...none, secondsLeft: 3 }, REDIS), 'released');
    assert.equal(endOfGone({ ...none, secondsLeft: 0.1 }, REDIS), 'expired');
    assert.equal(endOfGone(none, REDIS), 'released', 'never sampled: deleted');
    assert.equal(endOfGone({ ...none, leaseGone: true }, REDIS), null);
  });

  test('a TTL its owner moved earlier (ShedLock\'s unlock) runs out as a release; a store\'s own expiry event still decides', () => {
    assert.equal(endOfGone({ ...none, secondsLeft: -0.3, shortened: true }, SQL), 'released');
    assert.equal(endOfGone({ ...none, secondsLeft: -0.3 }, SQL), 'expired', 'never moved: it ran out');
    assert.equal(endOfGone({ ...none, expiryEvents: true, expiryTold: true, shortened: true }, REDIS), 'expired');
    assert.equal(fellBelow({ ttl: 58, observedAt: 1000 }, 15, 3000), true, 'an unlock leaving lockAtLeastFor');
    assert.equal(fellBelow({ ttl: 58, observedAt: 1000 }, 55.5, 3000), false, 'counting down, within a second');
    assert.equal(fellBelow({ ttl: 58, observedAt: 1000 }, 60, 3000), false, 'a renewal');
  });

  test('a session whose time left cannot be read tells nothing', () => {
    assert.equal(endOfGone({ ...none, secondsLeft: undefined }, ZOOKEEPER), null);
  });

  test('evidence from a lease sample: its countdown counted on to the moment the key went', () => {
    const info = observeLease(undefined, 'l', { ttl: 10, grantedTtl: 10, keys: [], at: 1_000 });
    assert.deepEqual(evidenceOf('l', info, 4_000), { ...none, secondsLeft: 7 });
    const gone = { ...observeLease(info, 'l', { ttl: -1, grantedTtl: 10, keys: [], at: 2_000 }), expiryEvents: true, expiryTold: true };
    assert.equal(endOfGone(evidenceOf('l', gone, 2_000), REDIS), 'expired');
    assert.deepEqual(evidenceOf('l', undefined, 0), none);
  });

  test("a member that ends with its owner's session or connection: whether that lived on decides, and nothing else", () => {
    const owned = { ...none, endsWithOwner: true };
    assert.equal(endOfGone({ ...owned, ownerLives: true }, ZOOKEEPER), 'released');
    assert.equal(endOfGone({ ...owned, ownerLives: false }, ZOOKEEPER), 'ownerLost');
    assert.equal(endOfGone(owned, ZOOKEEPER), null, 'cons refused');
    assert.equal(endOfGone({ ...owned, ownerLives: false }, SQL), 'ownerLost');
    assert.equal(endOfGone(owned, SQL), null, 'a connection the reader may not see is not taken for a release');
  });
});

function member(owner: string, expiresWith: LockMember['expiresWith'] = 'connection'): LockMember {
  return { key: Buffer.from(`pid ${owner}`), convention: 'pg-advisory', owner, expiresWith, lease: owner, token: null, holds: null, valuePreview: Buffer.alloc(0), valueSize: 0 };
}

function lock(holder: LockMember | null, waiters: LockMember[] = []): LockState {
  return { id: 'jobs', name: Buffer.from('jobs'), kind: 'queue', holder, waiters };
}

describe('how the hold of a session or connection ended, as the watch tells whether it lived', () => {
  test('released while its connection lived on, owner lost once it was gone, unknown where the watch cannot say', () => {
    const lives = new Map([['11', true], ['12', false]]);
    const events = new LockEvents('db');
    const options = { ...SQL, hasRevisions: false, lease: () => undefined, ownerLives: (id: string) => lives.get(id) };
    const ends: unknown[] = [];
    let now = 0;
    const step = (l: LockState, resynced = false) =>
      ends.push(...events.observe({ revision: now, changed: [l], removed: [], resynced }, options, (now += 1000)).events.flatMap((e) => (e.type === 'holdEnded' ? [[e.member.owner, e.how]] : [])));
    step(lock(null), true);
    for (const owner of ['11', '12', '13']) {
      step(lock(member(owner)));
      step(lock(null));
    }
    // A lock-table row expires with its TTL, whatever a session of the same id did.
    step(lock(member('12', 'ttl')));
    step(lock(null));
    assert.deepEqual(ends, [['11', 'released'], ['12', 'ownerLost'], ['13', null], ['12', 'released']]);
  });

  test('ZooKeeper: the sessions whose nodes went from the locks read again, each once', () => {
    const node = (path: string, session: string): LockMember => ({ ...member(session, 'session'), key: Buffer.from(path) });
    const before = [lock(node('/l/a', 's1'), [node('/l/b', 's2'), node('/l/c', 's2'), node('/l/d', 's3')])];
    assert.deepEqual(goneOwners(before, [lock(node('/l/d', 's3'))]), ['s1', 's2']);
    assert.deepEqual(goneOwners(before, []), ['s1', 's2', 's3']);
    assert.deepEqual(goneOwners([lock(member('', 'nothing'))], []), [], 'a persistent node has no session');
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { endOfGone, evidenceOf, type EndEvidence } from '../../src/core/holdEndEvidence';
import { observeLease } from '../../src/core/leaseInfo';

const ETCD = { hasLeases: true, sampledTtls: true };
const REDIS = { hasLeases: false, sampledTtls: true };
const ZOOKEEPER = { hasLeases: false, sampledTtls: false };
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
});

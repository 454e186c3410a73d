import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import { memberLiveness } from '../../src/core/liveness';
import type { LockMember } from '../../src/core/lockState';

const member = (expiresWith: LockMember['expiresWith'], lease = 'k'): LockMember => ({
  key: Buffer.from('k'),
  convention: 'redis-py',
  owner: 'token',
  expiresWith,
  lease,
  token: null,
  holds: null,
  valuePreview: Buffer.alloc(0),
  valueSize: 0,
});

const info = (o: Partial<LeaseInfo>): LeaseInfo => ({ id: 'k', state: 'alive', grantedTtl: 8, ttl: 7, observedAt: 10_000, firstSeenAt: 0, refreshes: [], stalled: false, keys: [], ...o });

describe('memberLiveness from TTL samples', () => {
  test('renewed lately: alive; counting down below half with no renewal: paused, saying the store cannot tell paused from gone', () => {
    assert.equal(memberLiveness(member('ttl'), info({ refreshes: [9000] }), 10_000).state, 'alive');
    const stalled = memberLiveness(member('ttl'), info({ ttl: 3, stalled: true }), 10_000);
    assert.equal(stalled.state, 'paused');
    assert.match(stalled.evidence, /paused, gone, or never renews it; the store cannot tell which until it runs out/);
  });

  test('a TTL that ran out ends the hold but is no proof of a dead holder (a ShedLock row is left to run out on purpose)', () => {
    const ran = memberLiveness(member('ttl'), info({ state: 'expired', ttl: 0 }), 10_000);
    assert.equal(ran.state, 'unknown');
    assert.match(ran.evidence, /^its TTL ran out with nobody renewing it: the hold is over, but whether its holder lives the store cannot tell/);
    assert.equal(memberLiveness(member('lease'), info({ state: 'expired', ttl: 0 }), 10_000).state, 'unknown');
  });
});

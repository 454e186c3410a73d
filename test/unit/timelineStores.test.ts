import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { observeLease, type LeaseInfo } from '../../src/core/leaseInfo';
import { LockClock } from '../../src/core/lockHealth';
import { keyId } from '../../src/core/keys';
import type { LockMember, LockState } from '../../src/core/lockState';
import { TimelineReducer, timelineRows, type TimelineSource } from '../../src/core/timeline';
import { isTimelineRow } from '../../src/protocol/timeline';

// The timeline for a store without leases or fencing tokens (Redis): rows carry the owner, no lease to revoke and no
// token, TTL jumps are renewals, and a key gone with time left was released (there is no lease to outlive it).

const T0 = 1_700_000_000_000;

function member(key: string, owner: string, extra: Partial<LockMember> = {}): LockMember {
  return { key: Buffer.from(key), convention: 'redis-token', owner, expiresWith: 'ttl', lease: keyId(Buffer.from(key)), token: null, holds: null, valuePreview: Buffer.from(owner), valueSize: owner.length, ...extra };
}

function lock(name: string, holder: LockMember, waiters: LockMember[] = [], kind: LockState['kind'] = 'single'): LockState {
  return { id: keyId(Buffer.from(name)), name: Buffer.from(name), kind, holder, waiters };
}

class RedisLike {
  readonly clock = new LockClock();
  readonly ttls = new Map<string, LeaseInfo>();
  locks: LockState[] = [];
  now = T0;

  show(...locks: LockState[]): void {
    const gone = this.locks.filter((l) => !locks.some((n) => n.id === l.id)).map((l) => l.id);
    this.locks = locks;
    this.clock.observe({ revision: 0, changed: locks, removed: gone, resynced: false }, this.now);
  }

  sample(id: string, ttl: number): void {
    this.ttls.set(id, observeLease(this.ttls.get(id), id, { ttl, grantedTtl: 30, keys: [], at: this.now }));
  }

  source(): TimelineSource {
    return { connection: 'redis', hasLeases: false, locks: this.locks, lease: (id) => this.ttls.get(id), clock: this.clock };
  }
}

describe('timeline rows for a store without leases (Redis)', () => {
  test('a token lock is one row with its owner, no lease and no token; its TTL and renewals come from PTTL samples', () => {
    const r = new RedisLike();
    const held = member('app:export', 'c0ffee');
    r.show(lock('app:export', held));
    r.sample(held.lease, 30);
    r.now += 10_000;
    r.sample(held.lease, 30); // a renewal: 20 s were expected
    const [row] = timelineRows(r.source(), 300_000, r.now);
    assert.ok(isTimelineRow(row), 'the row passes the protocol guard');
    assert.equal(row.lease, '', 'no lease to copy or revoke');
    assert.equal(row.owner, 'c0ffee');
    assert.equal(row.token, null);
    assert.equal(row.leaseState, 'alive');
    assert.equal(row.refreshes.length, 1, 'the TTL jump is shown as a renewal');
  });

  test('a Redisson holder and a fair waiter keep queue order without tokens', () => {
    const r = new RedisLike();
    const holder = member('uuid-a:1', 'uuid-a:1', { convention: 'redisson-fair-lock', holds: 2, lease: 'app:fair' });
    const waiter = member('uuid-b:7', 'uuid-b:7', { convention: 'redisson-fair-lock', lease: 'app:fair\0wait\0uuid-b:7', deadline: T0 + 300_000 });
    r.show(lock('app:fair', holder, [waiter], 'queue'));
    const rows = new TimelineReducer({ longHoldMs: 300_000, keepEndedMs: 3_600_000 }).update([r.source()], r.now).upserts;
    assert.deepEqual(
      rows.map((x) => [x.key, x.role, x.position]),
      [
        ['uuid-a:1', 'holder', 0],
        ['uuid-b:7', 'waiter', 1],
      ],
    );
  });

  /** Two Redis keys drawn, app:a sampled with 30 s left and app:b with 2 s, then 5 s on. */
  const twoKeysLater = () => {
    const r = new RedisLike();
    const reducer = new TimelineReducer({ longHoldMs: 300_000, keepEndedMs: 3_600_000 });
    const a = member('app:a', 'tok-a');
    const b = member('app:b', 'tok-b');
    r.show(lock('app:a', a), lock('app:b', b));
    r.sample(a.lease, 30);
    r.sample(b.lease, 2);
    reducer.update([r.source()], r.now);
    r.now += 5_000;
    const endsOf = (ended: readonly { id: string; end: unknown }[]) => (key: string) => ended.find((e) => reducer.row(e.id)?.key === key)?.end;
    return { r, reducer, a, b, endsOf };
  };

  test('a key deleted with TTL left ended as released (nothing outlives a Redis key); one whose TTL ran out as expired', () => {
    const { r, reducer, endsOf } = twoKeysLater();
    r.show();
    const endOf = endsOf(reducer.update([r.source()], r.now).ended);
    assert.equal(endOf('app:a'), 'released');
    assert.equal(endOf('app:b'), 'expired');
    assert.deepEqual(reducer.unsettled(), [], 'nothing is left for the host to ask the store about');
  });

  test("a node or a SQL lock that ends with its owner's session: whether that lived on decides; nothing told, unknown", () => {
    const r = new RedisLike();
    const reducer = new TimelineReducer({ longHoldMs: 300_000, keepEndedMs: 3_600_000 });
    const owned = (key: string, session: string) => member(key, session, { expiresWith: 'session', lease: session, convention: 'kazoo-lock' });
    r.show(lock('/a', owned('/a/n1', 's1')), lock('/b', owned('/b/n1', 's2')), lock('/c', owned('/c/n1', 's3')));
    reducer.update([r.source()], r.now);
    assert.ok(reducer.snapshot().every((row) => row.endsWithOwner === true && isTimelineRow(row)));
    r.now += 5_000;
    r.show();
    const lives = new Map([['s1', true], ['s2', false]]);
    const ended = reducer.update([{ ...r.source(), ownerLives: (id) => lives.get(id) }], r.now).ended;
    const endOf = (key: string) => ended.find((e) => reducer.row(e.id)?.key === key)?.end;
    assert.deepEqual([endOf('/a/n1'), endOf('/b/n1'), endOf('/c/n1')], ['released', 'ownerLost', 'unknown']);
  });

  test('a key a PTTL sweep found gone before the read that ends its row: its last alive countdown decides', () => {
    const { r, reducer, a, b, endsOf } = twoKeysLater();
    r.sample(a.lease, -2);
    r.sample(b.lease, -2);
    reducer.update([r.source()], r.now);
    r.show();
    const endOf = endsOf(reducer.update([r.source()], r.now + 50).ended);
    assert.equal(endOf('app:a'), 'released', 'deleted with 25 s left');
    assert.equal(endOf('app:b'), 'expired');
  });
});

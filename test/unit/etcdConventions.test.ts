import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KIND_OF, kindOf, placeKey, type Convention } from '../../src/core/etcd/conventions';
import { leaseDecimal } from '../../src/core/keys';

const LEASE = '694d7a1b2c';
const UUID = '3f2a9c1e-7b4d-4e8a-9c0f-1a2b3c4d5e6f';

function place(key: string | Buffer, lease = '', valueSize = 0) {
  const p = placeKey({ key: typeof key === 'string' ? Buffer.from(key) : key, lease, valueSize });
  return { name: p.name, text: p.name.toString('utf8'), convention: p.convention };
}

describe('placeKey', () => {
  test('Go mutex: <name>/<lease hex> with matching lease and empty value', () => {
    const p = place(`jobs/${LEASE}`, LEASE, 0);
    assert.equal(p.convention, 'go-mutex');
    assert.equal(p.text, 'jobs');
  });

  test('a queue member named with its lease zero-padded to 16 digits (%016x, as etcdctl lease grant prints it) is one of its lock as Go\'s %x is', () => {
    const padded = LEASE.padStart(16, '0');
    assert.deepEqual(place(`/locks/jobs/${padded}`, LEASE), place(`/locks/jobs/${LEASE}`, LEASE));
    assert.equal(place(`/locks/jobs/${padded}`, LEASE).convention, 'go-mutex');
    assert.equal(place(`/locks/jobs/${padded}`, LEASE, 3).convention, 'go-election');
    // Padded to another width, or another lease's digits behind zeros: not this lease, so the key is a lock of its own.
    assert.equal(place(`/locks/jobs/0${LEASE}`, LEASE).convention, 'single-key');
    assert.equal(place(`/locks/jobs/${'1'.padStart(16, '0')}`, LEASE).convention, 'single-key');
  });

  test('Go election: same layout with a non-empty value (the proposal)', () => {
    const p = place(`jobs/${LEASE}`, LEASE, 5);
    assert.equal(p.convention, 'go-election');
    assert.equal(p.text, 'jobs');
  });

  test('Go mutex under an absolute name: /locks/jobs/<hex> is named /locks/jobs', () => {
    const p = place(`/locks/jobs/${LEASE}`, LEASE);
    assert.equal(p.convention, 'go-mutex');
    assert.equal(p.text, '/locks/jobs');
  });

  test('recipe: <name>/<uuid> regardless of lease and value', () => {
    for (const [lease, size] of [['', 0], [LEASE, 0], [LEASE, 12]] as const) {
      const p = place(`orders/${UUID}`, lease, size);
      assert.equal(p.convention, 'recipe-uuid');
      assert.equal(p.text, 'orders');
    }
  });

  test('recipe: an uppercase UUID segment is recognised', () => {
    assert.equal(place(`orders/${UUID.toUpperCase()}`).convention, 'recipe-uuid');
  });

  test('npm etcd3 election: election/leader/<lease decimal>', () => {
    const lease = '694d7a1b2c3d4e5f';
    const p = place(`election/leader/${leaseDecimal(lease)}`, lease, 3);
    assert.equal(p.convention, 'etcd3-election');
    assert.equal(p.text, 'election/leader');
  });

  test('a decimal segment that is not the key\'s lease is a single key', () => {
    const p = place(`election/leader/12345`, LEASE, 3);
    assert.equal(p.convention, 'single-key');
    assert.equal(p.text, 'election/leader/12345');
  });

  test('a hex segment that does not match the key\'s lease is a single key named by the whole key', () => {
    const p = place(`jobs/${LEASE}`, '694d7a1b2d');
    assert.equal(p.convention, 'single-key');
    assert.equal(p.text, `jobs/${LEASE}`);
  });

  test('a hex segment on a key without a lease is a single key', () => {
    const p = place(`jobs/${LEASE}`, '');
    assert.equal(p.convention, 'single-key');
    assert.equal(p.text, `jobs/${LEASE}`);
  });

  test('a hex segment in uppercase does not match the lowercase lease', () => {
    assert.equal(place(`jobs/${LEASE.toUpperCase()}`, LEASE).convention, 'single-key');
  });

  test('python-etcd3 / npm etcd3 Lock key /locks/mylock is a single key named by the whole key', () => {
    const p = place('/locks/mylock', LEASE, 6);
    assert.equal(p.convention, 'single-key');
    assert.equal(p.text, '/locks/mylock');
  });

  test('a key with no slash is a single key', () => {
    const p = place('mylock', LEASE);
    assert.equal(p.convention, 'single-key');
    assert.equal(p.text, 'mylock');
  });

  test('a key with no slash equal to its lease hex is still a single key', () => {
    const p = place(LEASE, LEASE);
    assert.equal(p.convention, 'single-key');
    assert.equal(p.text, LEASE);
  });

  test('nested names: a/<lease> is lock a, a/b/<lease> is lock a/b', () => {
    const other = '694d7a1b2d';
    const a = place(`a/${LEASE}`, LEASE);
    const ab = place(`a/b/${other}`, other);
    assert.equal(a.text, 'a');
    assert.equal(ab.text, 'a/b');
    assert.equal(a.convention, 'go-mutex');
    assert.equal(ab.convention, 'go-mutex');
  });

  test('Go NewMutex(s, "/locks/a/") keys /locks/a//<hex> belong to the lock named /locks/a/', () => {
    const p = place(`/locks/a//${LEASE}`, LEASE);
    assert.equal(p.convention, 'go-mutex');
    assert.equal(p.text, '/locks/a/');
    assert.notEqual(p.text, place(`/locks/a/${LEASE}`, LEASE).text);
  });

  test('a key that ends in a slash is a single key', () => {
    const p = place('/locks/a/', LEASE);
    assert.equal(p.convention, 'single-key');
    assert.equal(p.text, '/locks/a/');
  });

  test('a name that is not UTF-8 is kept as the exact bytes', () => {
    const name = Buffer.from([0x6a, 0xff, 0xfe, 0x2f, 0x78]); // "j\xff\xfe/x"
    const key = Buffer.concat([name, Buffer.from(`/${LEASE}`)]);
    const p = placeKey({ key, lease: LEASE, valueSize: 0 });
    assert.equal(p.convention, 'go-mutex');
    assert.deepEqual(p.name, name);
  });

  test('a non-UTF-8 single key is named by its exact bytes', () => {
    const key = Buffer.from([0x6c, 0x2f, 0xc0, 0xaf]);
    const p = placeKey({ key, lease: '', valueSize: 0 });
    assert.equal(p.convention, 'single-key');
    assert.deepEqual(p.name, key);
  });
});

describe('kindOf', () => {
  test('maps each convention to its kind', () => {
    assert.deepEqual(KIND_OF, {
      'go-mutex': 'queue',
      'recipe-uuid': 'queue',
      'go-election': 'election',
      'etcd3-election': 'election',
      'single-key': 'single',
    });
  });

  test('no members is single', () => {
    assert.equal(kindOf([]), 'single');
  });

  test('only single keys is single', () => {
    assert.equal(kindOf(['single-key', 'single-key']), 'single');
  });

  test('any queue member makes a queue', () => {
    assert.equal(kindOf(['single-key', 'go-mutex']), 'queue');
    assert.equal(kindOf(['recipe-uuid']), 'queue');
  });

  test('any election member makes an election, even after mutex-looking members (a leader with an empty proposal)', () => {
    const members: Convention[] = ['go-mutex', 'go-mutex', 'go-election'];
    assert.equal(kindOf(members), 'election');
    assert.equal(kindOf(['etcd3-election', 'single-key']), 'election');
  });

  test('accepts any iterable', () => {
    assert.equal(kindOf(new Set<Convention>(['go-mutex'])), 'queue');
  });
});

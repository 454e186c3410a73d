import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isLockLensError } from '../../src/core/errors';
import { keyId } from '../../src/core/keys';
import { contenderPrefix, holdersAtHead, kindOf, parseContender, predecessorIndex } from '../../src/core/zookeeper/conventions';
import { lockOfChildren, sessionHex, zxidNumber, type ContenderNode } from '../../src/core/zookeeper/lockOfChildren';
import { parseZooKeeperUrl } from '../../src/core/zookeeper/url';
import { distinctRoots, rootOf } from '../../src/core/zookeeper/znodeTree';
import { checkEndpoints, storeOfUrl } from '../../src/core/stores';

const UUID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
const HEX = '6fa459eaee8a3ca4894edb77e160355e';

function node(name: string, data = '', owner = 0x100000abcn, czxid = 10n): ContenderNode {
  return { name, data: Buffer.from(data), dataLength: Buffer.byteLength(data), ephemeralOwner: owner, czxid, mzxid: czxid };
}

describe('ZooKeeper lock recipes by node name', () => {
  test('Curator mutex, read/write and latch nodes; kazoo lock and read lock; the documented recipe', () => {
    assert.deepEqual(parseContender(`_c_${UUID}-lock-0000000007`), { convention: 'curator-mutex', sequence: 7, read: false });
    assert.deepEqual(parseContender(`_c_${UUID}-__READ__0000000001`), { convention: 'curator-read', sequence: 1, read: true });
    assert.deepEqual(parseContender(`_c_${UUID}-__WRIT__0000000002`), { convention: 'curator-write', sequence: 2, read: false });
    assert.deepEqual(parseContender(`_c_${UUID}-latch-0000000003`), { convention: 'curator-latch', sequence: 3, read: false });
    assert.deepEqual(parseContender(`${HEX}__lock__0000000012`), { convention: 'kazoo-lock', sequence: 12, read: false });
    assert.deepEqual(parseContender(`${HEX}__rlock__0000000013`), { convention: 'kazoo-rlock', sequence: 13, read: true });
    assert.deepEqual(parseContender('guid-lock-0000000004'), { convention: 'zk-recipe', sequence: 4, read: false });
    assert.deepEqual(parseContender('lock-0000000005'), { convention: 'zk-recipe', sequence: 5, read: false });
    assert.deepEqual(parseContender('x-72057594037927936-0000000006'), { convention: 'zk-recipe', sequence: 6, read: false });
    // A wrapped counter is negative: %010d of a signed int.
    assert.equal(parseContender(`${HEX}__lock__-000000001`)?.sequence, -1);
  });

  test('znodes that are no contenders: plain names, short sequences, a persistent parent', () => {
    for (const name of ['locks', 'orders', 'lock-12', `${HEX}__lock__123`, '_c_nope-lock-0000000001x', 'leases', '<b>html</b>']) {
      assert.equal(parseContender(name), undefined, name);
    }
  });

  test('kinds: a latch is an election, readers make a read/write lock, else a queue', () => {
    assert.equal(kindOf(['curator-mutex', 'kazoo-lock']), 'queue');
    assert.equal(kindOf(['kazoo-lock', 'kazoo-rlock']), 'readwrite');
    assert.equal(kindOf(['curator-write']), 'readwrite');
    assert.equal(kindOf(['curator-latch']), 'election');
  });

  test('who holds and whom a new contender watches: readers ahead of any writer share; a writer waits for all ahead', () => {
    const r = { read: true };
    const w = { read: false };
    assert.equal(holdersAtHead([r, r, w, r]), 2);
    assert.equal(holdersAtHead([w, r]), 1);
    assert.equal(holdersAtHead([r, r]), 2);
    assert.equal(holdersAtHead([]), 0);
    assert.equal(predecessorIndex([r, r, w, r], 1), -1, 'a reader with only readers ahead holds');
    assert.equal(predecessorIndex([r, r, w, r], 3), 2, 'a reader waits for the last writer ahead');
    assert.equal(predecessorIndex([r, r, w, r], 2), 1, 'a writer watches the node just ahead');
    assert.equal(predecessorIndex([w], 0), -1);
  });

  test("the names a new contender is created with, in each family's layout", () => {
    assert.equal(contenderPrefix('kazoo', UUID, false), `${UUID.replace(/-/g, '')}__lock__`);
    assert.equal(contenderPrefix('kazoo', UUID, true), `${UUID.replace(/-/g, '')}__rlock__`);
    assert.equal(contenderPrefix('curator', UUID, undefined), `_c_${UUID}-lock-`);
    assert.equal(contenderPrefix('curator', UUID, true), `_c_${UUID}-__READ__`);
    assert.equal(contenderPrefix('curator', UUID, false), `_c_${UUID}-__WRIT__`);
    assert.equal(contenderPrefix('recipe', UUID, false), `${UUID}-lock-`);
    // What ZooKeeper makes of them is recognised as the same family.
    assert.equal(parseContender(contenderPrefix('kazoo', UUID, true) + '0000000001')?.convention, 'kazoo-rlock');
    assert.equal(parseContender(contenderPrefix('curator', UUID, undefined) + '0000000001')?.convention, 'curator-mutex');
    assert.equal(parseContender(contenderPrefix('recipe', UUID, false) + '0000000001')?.convention, 'zk-recipe');
  });
});

describe('ZooKeeper locks from contender nodes', () => {
  test('a kazoo lock: the lowest sequence holds, the rest wait in sequence order, whatever order they are listed in', () => {
    const lock = lockOfChildren('/app/locks/orders', [
      node(`${HEX}__lock__0000000003`, 'c', 0x3n, 30n),
      node('not-a-contender'),
      node(`${HEX}__lock__0000000001`, 'a', 0x1n, 10n),
      node(`${HEX}__lock__0000000002`, 'b', 0x2n, 20n),
    ])!;
    assert.equal(lock.id, keyId(Buffer.from('/app/locks/orders')));
    assert.equal(lock.kind, 'queue');
    assert.equal(lock.holder?.key.toString(), `/app/locks/orders/${HEX}__lock__0000000001`);
    assert.equal(lock.holder?.owner, '1');
    assert.equal(lock.holder?.lease, '1', 'an ephemeral node goes with its session');
    assert.equal(lock.holder?.token, 10);
    assert.equal(lock.holder?.valuePreview.toString(), 'a');
    assert.deepEqual(lock.waiters.map((w) => w.valuePreview.toString()), ['b', 'c']);
    assert.equal(lock.sharedWith, undefined);
  });

  test('a read/write lock: readers before the first writer hold together, with their modes', () => {
    const lock = lockOfChildren('/rw', [
      node(`_c_${UUID}-__READ__0000000001`, 'r1'),
      node(`_c_${UUID}-__READ__0000000002`, 'r2'),
      node(`_c_${UUID}-__WRIT__0000000003`, 'w'),
      node(`_c_${UUID}-__READ__0000000004`, 'r3'),
    ])!;
    assert.equal(lock.kind, 'readwrite');
    assert.equal(lock.holder?.valuePreview.toString(), 'r1');
    assert.deepEqual(lock.sharedWith?.map((m) => [m.valuePreview.toString(), m.mode]), [['r2', 'read']]);
    assert.deepEqual(lock.waiters.map((m) => [m.valuePreview.toString(), m.mode]), [['w', 'write'], ['r3', 'read']]);
  });

  test('a persistent contender has no session: nothing ends it; a parent without contenders is no lock', () => {
    const lock = lockOfChildren('/p', [node('lock-0000000001', '', 0n)])!;
    assert.equal(lock.holder?.owner, '');
    assert.equal(lock.holder?.lease, '');
    assert.equal(lockOfChildren('/p', [node('config')]), undefined);
  });

  test("session ids in hex as ZooKeeper prints them (an ensemble's server id in the top byte); zxids exact or withheld", () => {
    assert.equal(sessionHex(0x100000b2a3c0000n), '100000b2a3c0000');
    assert.equal(sessionHex(-0x7ffffffffffffff0n), '8000000000000010', 'a server id of 128 or more sets the sign bit');
    assert.equal(zxidNumber(0x500000003n), 0x500000003);
    assert.equal(zxidNumber(1n << 53n), null, 'beyond 2^53 (epoch 2^21) a token would round');
  });
});

describe('ZooKeeper URLs and paths', () => {
  test('servers, chroot and session timeout; clear refusals', () => {
    assert.deepEqual(parseZooKeeperUrl('zookeeper://a:2181,b:2182/app/locks?sessionTimeout=4000'), {
      servers: [
        { host: 'a', port: 2181 },
        { host: 'b', port: 2182 },
      ],
      chroot: '/app/locks',
      sessionTimeoutMs: 4000,
    });
    assert.deepEqual(parseZooKeeperUrl('zookeeper://zk/'), { servers: [{ host: 'zk', port: 2181 }], chroot: undefined, sessionTimeoutMs: undefined });
    for (const bad of ['redis://a:1', 'zookeeper://a:99999', 'zookeeper://u:p@a:2181', 'zookeeper://[::1]:2181', 'zookeeper://a//x', 'zookeeper://a?timeout=1']) {
      assert.throws(() => parseZooKeeperUrl(bad), (e: unknown) => isLockLensError(e, 'INVALID_ARGUMENT'), bad);
    }
    assert.equal(storeOfUrl('zookeeper://a:2181'), 'zookeeper');
    assert.doesNotThrow(() => checkEndpoints('zookeeper', ['zookeeper://a:2181/x']));
    assert.throws(() => checkEndpoints('zookeeper', ['a:2181']), /not a ZooKeeper URL/);
  });

  test('prefixes are paths: everything below them; one below another is read with it', () => {
    assert.equal(rootOf(Buffer.from('/app/locks/')), '/app/locks');
    assert.equal(rootOf(Buffer.from('')), '/');
    assert.throws(() => rootOf(Buffer.from('app')), /paths start with \//);
    assert.throws(() => rootOf(Buffer.from([0x2f, 0xff])), /UTF-8/);
    assert.deepEqual(distinctRoots(['/app/locks', '/app', '/apple', '/app']), ['/app', '/apple']);
    assert.deepEqual(distinctRoots(['/x', '/']), ['/']);
  });
});

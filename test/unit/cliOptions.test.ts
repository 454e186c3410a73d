import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { profileFrom } from '../../src/cli/options';
import { LockLensError } from '../../src/core/errors';

/** Every etcdctl variable LockLens reads, set to something a Redis connection must never pick up. */
const ETCDCTL_ENV = {
  ETCDCTL_ENDPOINTS: 'etcd-host:2379',
  ETCDCTL_USER: 'root:etcd-secret',
  ETCDCTL_PASSWORD: 'etcd-password',
  ETCDCTL_CACERT: '/etc/etcd/ca.pem',
  ETCDCTL_CERT: '/etc/etcd/client.pem',
  ETCDCTL_KEY: '/etc/etcd/client-key.pem',
  ETCDCTL_INSECURE_SKIP_TLS_VERIFY: 'true',
};

function rejects(values: Parameters<typeof profileFrom>[0], message: RegExp, env: NodeJS.ProcessEnv = {}): void {
  assert.throws(
    () => profileFrom(values, env),
    (e: unknown) => e instanceof LockLensError && e.code === 'INVALID_ARGUMENT' && message.test(e.message),
  );
}

describe('CLI connection flags (profileFrom)', () => {
  test('--url redis:// selects Redis; none of the ETCDCTL_* variables leak into it', () => {
    const p = profileFrom({ url: 'redis://127.0.0.1:6379/2' }, ETCDCTL_ENV);
    assert.equal(p.store, 'redis');
    assert.deepEqual(p.endpoints, ['redis://127.0.0.1:6379/2']);
    assert.equal(p.username, undefined);
    assert.equal(p.password, undefined);
    assert.equal(p.tls, undefined);
  });

  test('the same variables still configure etcd', () => {
    const p = profileFrom({}, ETCDCTL_ENV);
    assert.equal(p.store, 'etcd');
    assert.deepEqual(p.endpoints, ['etcd-host:2379']);
    assert.equal(p.username, 'root');
    assert.equal(p.password, 'etcd-secret');
    assert.equal(p.tls?.caFile, '/etc/etcd/ca.pem');
    assert.equal(p.tls?.insecureSkipVerify, true);
  });

  test('Redis reads its password from $LOCKLENS_PASSWORD, else $REDISCLI_AUTH (the default user), never $ETCDCTL_PASSWORD', () => {
    assert.equal(profileFrom({ url: 'redis://h:6379' }, { ...ETCDCTL_ENV, REDISCLI_AUTH: 'cli-auth' }).password, 'cli-auth');
    assert.equal(profileFrom({ url: 'redis://h:6379', user: 'alice' }, { REDISCLI_AUTH: 'cli-auth', LOCKLENS_PASSWORD: 'mine' }).password, 'mine');
    const acl = profileFrom({ url: 'rediss://h:6380', user: 'alice:pw' }, ETCDCTL_ENV);
    assert.deepEqual([acl.username, acl.password], ['alice', 'pw']);
  });

  test('--url and --endpoints together are two stores: refused', () => {
    rejects({ url: 'redis://h:6379', endpoints: 'h:2379' }, /--url and --endpoints/);
  });

  test('URLs of two stores in one --url are refused; an unknown scheme is named', () => {
    rejects({ url: 'redis://h:6379,http://h:2379' }, /same store/);
    rejects({ url: 'mongodb://h:27017' }, /unknown scheme 'mongodb:\/\/'/);
  });

  test('a ZooKeeper URL keeps the servers of its ensemble, commas and all; Redis URLs are split', () => {
    const zk = profileFrom({ url: 'zookeeper://a:2181, b:2182,c/app?sessionTimeout=4000' }, {});
    assert.deepEqual([zk.store, zk.endpoints], ['zookeeper', ['zookeeper://a:2181,b:2182,c/app?sessionTimeout=4000']]);
    assert.deepEqual(profileFrom({ url: 'redis://a:1,redis://b:2' }, {}).endpoints, ['redis://a:1', 'redis://b:2']);
    assert.deepEqual(profileFrom({ endpoints: 'a:2379,b:2379' }, {}).endpoints, ['a:2379', 'b:2379']);
  });

  test('--namespace is etcd\'s: refused with a Redis URL rather than silently ignored', () => {
    rejects({ url: 'redis://h:6379', namespace: 'app/' }, /--namespace is etcd's/);
    assert.equal(profileFrom({ endpoints: 'h:2379', namespace: 'app/' }, {}).namespace, 'app/');
  });
});

import type { LockBackend, StoreKind } from './backend';
import { LockLensError } from './errors';
import { parseEndpoints, type ConnectionProfile } from './profile';
import { sqlDialectOf, sqlUrlOf } from './sql/url';
import { parseZooKeeperUrl } from './zookeeper/url';

/**
 * Opens the backend a profile names. Each store's module (and its client library) is required only when a connection
 * of that kind is first opened, so a user of one store never pays for initialising the others. (`require`, not
 * `import()`: the extension and the CLI are CommonJS bundles, and esbuild keeps a required module's body lazy.)
 */
export async function openBackend(profile: ConnectionProfile): Promise<LockBackend> {
  const store: StoreKind = profile.store ?? 'etcd';
  switch (store) {
    case 'etcd': {
      const { EtcdBackend } = require('./etcd/etcdBackend') as typeof import('./etcd/etcdBackend');
      return EtcdBackend.open(profile);
    }
    case 'redis': {
      const { RedisBackend } = require('./redis/redisBackend') as typeof import('./redis/redisBackend');
      return RedisBackend.open(profile);
    }
    case 'zookeeper': {
      const { ZooKeeperBackend } = require('./zookeeper/zookeeperBackend') as typeof import('./zookeeper/zookeeperBackend');
      return ZooKeeperBackend.open(profile);
    }
    case 'postgres': {
      const { PostgresBackend } = require('./postgres/postgresBackend') as typeof import('./postgres/postgresBackend');
      return PostgresBackend.open(profile);
    }
    case 'mysql': {
      const { MysqlBackend } = require('./mysql/mysqlBackend') as typeof import('./mysql/mysqlBackend');
      return MysqlBackend.open(profile);
    }
    default:
      throw new LockLensError('INVALID_ARGUMENT', `unknown store '${String(store)}'`);
  }
}

/**
 * The store a connection URL names (`redis://`, `rediss://`, `zookeeper://`, `postgres://`, `mysql://`), or undefined
 * for etcd's plain endpoints.
 */
export function storeOfUrl(url: string): StoreKind | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url.trim())?.[1]?.toLowerCase();
  if (scheme === 'redis' || scheme === 'rediss') return 'redis';
  if (scheme === 'zookeeper') return 'zookeeper';
  const dialect = sqlDialectOf(url);
  if (dialect) return dialect;
  if (scheme === 'etcd' || scheme === 'http' || scheme === 'https' || scheme === undefined) return scheme === undefined ? undefined : 'etcd';
  throw new LockLensError('INVALID_ARGUMENT', `'${url}': unknown scheme '${scheme}://' (use redis://, rediss://, zookeeper://, postgres://, mysql:// or an etcd endpoint)`);
}

/** Throws a clear INVALID_ARGUMENT unless every endpoint is one the store can connect to. */
export function checkEndpoints(store: StoreKind, endpoints: readonly string[]): void {
  if (store === 'etcd') {
    parseEndpoints(endpoints);
    return;
  }
  if (store === 'zookeeper') {
    if (endpoints.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'no ZooKeeper URL given: write zookeeper://host:port[,host:port][/chroot]');
    // The store's own parser says what is wrong; it is pure, so the host bundle keeps none of the client library.
    for (const text of endpoints) parseZooKeeperUrl(text);
    return;
  }
  if (store === 'postgres' || store === 'mysql') {
    sqlUrlOf(store, endpoints);
    return;
  }
  if (endpoints.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'no Redis URL given');
  for (const text of endpoints) {
    let url: URL | undefined;
    try {
      url = new URL(text.trim());
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || !url.hostname) {
      throw new LockLensError('INVALID_ARGUMENT', `'${text}' is not a Redis URL: write redis://host:port[/db] or rediss://host:port`);
    }
  }
}

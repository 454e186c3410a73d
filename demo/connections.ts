import { REDIS_PREFIX, REDIS_SEMAPHORE_PREFIX } from './redisWorkload';
import { PREFIXES } from './workload';
import { ZOOKEEPER_PREFIX } from './zookeeperWorkload';

/**
 * The demo's connections, as VS Code's `locklens.connections` and serve's config both take them: `demo` (etcd) and,
 * when it runs them, `demo-redis`, `demo-zookeeper` and `demo-postgres`. No password anywhere: the demo's PostgreSQL
 * trusts loopback connections (see postgres.ts), since a password belongs in VS Code's SecretStorage, which the demo
 * cannot write.
 */
export function demoConnections(endpoints: readonly string[], redisUrl?: string, zookeeperUrl?: string, postgresUrl?: string): Record<string, unknown>[] {
  const connections: Record<string, unknown>[] = [{ name: 'demo', endpoints: [...endpoints], prefixes: [...PREFIXES] }];
  if (redisUrl) connections.push({ name: 'demo-redis', store: 'redis', endpoints: [redisUrl], prefixes: [REDIS_PREFIX, REDIS_SEMAPHORE_PREFIX] });
  if (zookeeperUrl) connections.push({ name: 'demo-zookeeper', store: 'zookeeper', endpoints: [zookeeperUrl], prefixes: [ZOOKEEPER_PREFIX] });
  // The empty prefix: every advisory lock and lock-table row of the database.
  if (postgresUrl) connections.push({ name: 'demo-postgres', store: 'postgres', endpoints: [postgresUrl], prefixes: [''] });
  return connections;
}

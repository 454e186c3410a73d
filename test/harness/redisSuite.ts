import { after, afterEach, before } from 'node:test';
import Redis from 'ioredis';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import { startRedis, type RedisServer } from './redis';
import { FakeRedisson } from './redisson';

export interface RedisSuite {
  /** One real redis-server for the whole describe block. */
  readonly server: RedisServer;
  /** LockLens's backend on it. */
  readonly backend: RedisBackend;
  /** A plain client, to read and write keys behind LockLens's back. */
  readonly raw: Redis;
  /** A Redisson peer on the same server, running Redisson's own Lua. */
  readonly redisson: FakeRedisson;
  /** Runs `cleanup` after the current test, even when it fails; the last deferred runs first. */
  defer(cleanup: () => unknown): void;
}

/** Call inside a `describe`: registers the hooks and returns the suite's server, backend, raw client and Redisson peer. */
export function redisSuite(): RedisSuite {
  const cleanups: (() => unknown)[] = [];
  const suite = { defer: (cleanup: () => unknown) => void cleanups.push(cleanup) } as { -readonly [K in keyof RedisSuite]: RedisSuite[K] };
  before(async () => {
    suite.server = await startRedis();
    suite.backend = await RedisBackend.open({ store: 'redis', endpoints: [suite.server.url] });
    suite.raw = new Redis(suite.server.url, { protocol: 2 });
    suite.redisson = FakeRedisson.connect(suite.server.url);
  });
  after(async () => {
    suite.backend?.close();
    suite.raw?.disconnect();
    suite.redisson?.dispose();
    await suite.server?.dispose();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return suite;
}

import assert from 'node:assert/strict';
import { show } from './cli';
import { serverFixture } from './cliFixture';
import { startRedis } from './redis';
import { RedisPyLock } from './redisPy';

/** An entry of `locklens list --json` over Redis, as the tests read it. */
export interface Entry {
  key: string;
  owner: string;
  lease: string | null;
  createRevision: number | null;
  token: number | null;
  holds: number | null;
  ttl: number | null;
  convention: string;
}
export interface LockDoc {
  name: string;
  kind: string;
  holder: Entry | null;
  waiters: Entry[];
}

/** Call inside a `describe`: one redis-server for the block, `locklens --url` on it, and redis-py peers ended after each test. */
export function redisCli() {
  const f = serverFixture(startRedis, (redis) => redis.url);
  const url = () => f.server.url;
  return Object.assign(f, {
    url,
    peer: (name: string, mode: 'hold' | 'try', timeout: number | null = 30) => {
      const p = new RedisPyLock(url(), name, mode, timeout);
      f.defer(() => p.dispose());
      return p;
    },
    list: async (prefix: string) => {
      const r = await f.procs.run(['list', '--url', url(), '--prefix', prefix, '--json']);
      assert.equal(r.code, 0, show(r));
      const doc = JSON.parse(r.stdout) as { revision: null; locks: LockDoc[] };
      assert.equal(doc.revision, null, 'Redis has no revision');
      return doc.locks;
    },
  });
}

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ZkClient } from '../../src/core/zookeeper/client';
import { ensembleOf, openSession } from '../../src/core/zookeeper/connect';
import { show } from './cli';
import { serverFixture, type Lock } from './cliFixture';
import { eventually } from './etcd';
import { KazooLock, KazooSemaphore, type KazooKind } from './kazoo';
import { startZooKeeper } from './zookeeper';

/** Curator's InterProcessMutex contender, as Curator names it: ZooKeeper appends the ten-digit sequence. */
export const curatorPrefix = (lock: string) => `${lock}/_c_${randomUUID()}-lock-`;

/**
 * Call inside a `describe`: one ZooKeeper for the block, `locklens --url zookeeper://` on it, kazoo peers, and sessions
 * of the test's own (Curator's nodes by hand, the Stat of what the CLI lists); all ended after each test.
 */
export function zookeeperCli() {
  const f = serverFixture(startZooKeeper, (server) => server.url);
  const url = () => f.server.url;
  const list = async (prefix: string): Promise<Lock[]> => {
    const r = await f.procs.run(['list', '--url', url(), '--prefix', prefix, '--json']);
    assert.equal(r.code, 0, show(r));
    // This server does not allow `cons`: list says on stderr what to enable to see whose sessions are alive.
    assert.match(r.stderr, /^(note: .*4lw\.commands\.whitelist=srvr,cons.*\n)?$/, show(r));
    const doc = JSON.parse(r.stdout) as { revision: null; locks: Lock[] };
    assert.equal(doc.revision, null, 'ZooKeeper has no revision to give');
    return doc.locks;
  };
  return Object.assign(f, {
    url,
    list,
    kazoo: (path: string, options: { kind?: KazooKind; mode?: 'hold' | 'try'; identifier?: string; log?: string; extraLockPatterns?: readonly string[] } = {}) => {
      const peer = new KazooLock(`127.0.0.1:${f.server.port}`, path, options);
      f.defer(() => peer.dispose());
      return peer;
    },
    /** kazoo's Semaphore on `path` (see KazooSemaphore). */
    kazooSemaphore: (path: string, options: ConstructorParameters<typeof KazooSemaphore>[2] = {}) => {
      const peer = new KazooSemaphore(`127.0.0.1:${f.server.port}`, path, options);
      f.defer(() => peer.dispose());
      return peer;
    },
    session: async (): Promise<ZkClient> => {
      const { url: parsed, spec } = ensembleOf({ endpoints: [f.server.url], dialTimeoutMs: 5000 });
      const s = await openSession({ ...spec, sessionTimeoutMs: 4000 }, parsed.servers);
      f.defer(() => s.close());
      return s;
    },
    czxid: async (s: ZkClient, path: string) => Number((await s.exists(path))!.czxid),
    /** Lists `name` until `ready` says it is as the test arranged it (peers act in their own time). */
    listed: (name: string, ready: (l: Lock) => boolean, what: string): Promise<Lock> =>
      eventually(async () => {
        const lock = (await list(name)).find((l) => l.name === name);
        return lock && ready(lock) ? lock : undefined;
      }, 15_000, what),
  });
}

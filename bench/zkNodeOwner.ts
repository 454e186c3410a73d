import { randomUUID } from 'node:crypto';
import * as zookeeper from 'node-zookeeper-client';
import type { ZkClient } from '../src/core/zookeeper/client';
import { ensembleOf, openSession } from '../src/core/zookeeper/connect';
import { contenderPrefix, joinPath } from '../src/core/zookeeper/conventions';

/**
 * The bench's own ZooKeeper sessions and the nodes they write; run as a program (`fork`ed by zk_list), the owner of
 * zk_list's 100,000 ephemeral nodes. They go with the session that made them, so that session must outlive the
 * listing. The listing keeps its process's event loop busy (a 1 s timer fired up to 1.1 s late); in that process the
 * writer's session was lost mid-listing twice (48 % and 18 % of the nodes; the first time the server, then at 128 MB
 * of heap, was also collecting); in a process of its own, never.
 */

/** A session whose requests may wait long: a writer has thousands of creates queued at a time. */
export function benchSession(url: string): Promise<ZkClient> {
  const { url: parsed, spec } = ensembleOf({ store: 'zookeeper', endpoints: [url], dialTimeoutMs: 60_000 });
  return openSession(spec, parsed.servers);
}

/** A new contender of a kazoo `Lock` under `lock`: its node, ephemeral and sequential, so owned by `session`. */
export function createContender(session: ZkClient, lock: string, data = Buffer.from('bench')): Promise<string> {
  return session.create(joinPath(lock, contenderPrefix('kazoo', randomUUID(), false)), data, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
}

/** Runs `op(0…count-1)` with `window` requests in flight (on a session: ZooKeeper answers them in order, pipelined). */
export async function pipelined(count: number, op: (i: number) => Promise<unknown>, window = 2000): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(window, count) }, async () => {
      while (next < count) await op(next++);
    }),
  );
}

/** `locks` persistent lock parents under `root` (`lock00000`…), `perLock` contenders in each. */
async function createLocks(session: ZkClient, root: string, locks: number, perLock: number): Promise<void> {
  const lockPath = (i: number) => `${root}/lock${String(i).padStart(5, '0')}`;
  await session.mkdirp(root);
  await pipelined(locks, (i) => session.create(lockPath(i), Buffer.alloc(0), zookeeper.CreateMode.PERSISTENT));
  await pipelined(locks * perLock, (k) => createContender(session, lockPath(k % locks)));
}

/** `node zkNodeOwner.js URL ROOT LOCKS PER_LOCK`: creates, says `{ createMs }`, keeps the session until disconnected. */
async function main(): Promise<void> {
  const [url, root, locks, perLock] = process.argv.slice(2);
  const session = await benchSession(url);
  const t0 = performance.now();
  await createLocks(session, root, Number(locks), Number(perLock));
  process.send!({ createMs: performance.now() - t0 });
  // Closing the session deletes the nodes: the next scenarios start from a small tree.
  process.once('disconnect', () => void session.close().then(() => process.exit(0)));
}

if (require.main === module) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}

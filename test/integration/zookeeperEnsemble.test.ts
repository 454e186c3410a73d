import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LockHold } from '../../src/core/backend';
import { ZooKeeperBackend } from '../../src/core/zookeeper/zookeeperBackend';
import { KazooLock } from '../harness/kazoo';
import { eventually } from '../harness/redis';
import { drawn, startZooKeeperEnsemble, type ZooKeeperEnsemble } from '../harness/zookeeper';

const b = (s: string) => Buffer.from(s);

describe('ZooKeeper: a three-server ensemble loses its leader', { timeout: 180_000 }, () => {
  let ensemble: ZooKeeperEnsemble;
  let backend: ZooKeeperBackend;

  before(async () => {
    ensemble = await startZooKeeperEnsemble(3);
    backend = await ZooKeeperBackend.open({ store: 'zookeeper', endpoints: [`${ensemble.url}?sessionTimeout=5000`], dialTimeoutMs: 3000 });
  });
  after(async () => {
    backend?.close();
    await ensemble?.dispose();
  });

  test("the watch converges on the new leader's tree; our hold is still ours or reported lost, never silently both", async () => {
    const watch = backend.watch([b('/e')], { minNotifyIntervalMs: 0 });
    await watch.start();
    const hold: LockHold = await backend.acquire(b('/e/lock'), { ttlSeconds: 5 });
    const hosts = ensemble.servers.map((s) => `127.0.0.1:${s.port}`).join(',');
    const waiter = new KazooLock(hosts, '/e/lock', { identifier: 'py-waiter', sessionSeconds: 5 });
    try {
      await waiter.until(['waiting']);
      await eventually(() => watch.locks()[0]?.waiters.length === 1, 15_000, 'the kazoo waiter seen');
      const leader = await ensemble.leader();
      assert.ok(leader >= 0, 'a leader');
      await ensemble.servers[leader].stop();

      let fresh: string[] = [];
      await eventually(
        async () => {
          try {
            fresh = drawn((await backend.list([b('/e')])).locks);
          } catch {
            return false; // no quorum yet, or reconnecting
          }
          return watch.status.state === 'live' && JSON.stringify(drawn(watch.locks())) === JSON.stringify(fresh);
        },
        60_000,
        'the watch to equal a fresh read after the election',
      );
      const [lock] = (await backend.list([b('/e')])).locks;
      if (hold.lost) {
        // Lost: said so, and the lock is no longer ours (kazoo's waiter took it, or is about to).
        assert.equal(hold.lost.code, 'LOCK_LOST');
        assert.notEqual(lock?.holder?.owner, hold.owner);
      } else {
        assert.equal(lock.holder?.owner, hold.owner, 'not lost: still the holder in the store');
        assert.ok(!waiter.lines.some((l) => l.startsWith('acquired')), 'and kazoo still waits');
        assert.equal(await hold.release(), true);
      }
      await waiter.until(['acquired'], 30_000);
    } finally {
      waiter.dispose();
      await hold.release().catch(() => false);
    }
  });
});

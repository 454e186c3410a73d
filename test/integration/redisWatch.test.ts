import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import type { LiveStatus, LockWatch } from '../../src/core/backend';
import type { ChangeSet } from '../../src/core/lockState';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import { keyId } from '../../src/core/keys';
import type { LockLensError } from '../../src/core/errors';
import { eventually, startRedis, type RedisServer } from '../harness/redis';
import { FakeRedisson, REDISSON_UUID } from '../harness/redisson';
import { REDISSON_UNLOCK, UNLOCK_MESSAGE } from '../../src/core/redis/scripts';
import { lockChannel } from '../../src/core/redis/redissonNames';
import { clientSpecs, openClient } from '../../src/core/redis/connect';
import { RedisLockWatch } from '../../src/core/redis/liveWatch';
import { Subscriber } from '../../src/core/redis/subscriber';
import { Topology, type RedisNode } from '../../src/core/redis/topology';

const b = (s: string) => Buffer.from(s);

interface Recorder {
  readonly sets: ChangeSet[];
  readonly statuses: LiveStatus[];
  readonly leases: LeaseInfo[];
}

function record(watch: LockWatch): Recorder {
  const r: Recorder = { sets: [], statuses: [], leases: [] };
  watch.onDidChangeLocks((s) => r.sets.push(s));
  watch.onDidChangeStatus((s) => r.statuses.push(s));
  watch.onDidChangeLeases((l) => r.leases.push(...l));
  return r;
}

for (const notify of [true, false]) {
  describe(`Redis live watch with keyspace notifications ${notify ? 'on' : 'off (polling)'}`, { timeout: 120_000 }, () => {
    let server: RedisServer;
    let backend: RedisBackend;
    let raw: Redis;
    let redisson: FakeRedisson;

    before(async () => {
      server = await startRedis(notify ? { notify: 'KEA' } : {});
      backend = await RedisBackend.open({ store: 'redis', endpoints: [server.url] });
      raw = new Redis(server.url, { protocol: 2, maxRetriesPerRequest: 1 });
      raw.on('error', () => undefined);
      redisson = FakeRedisson.connect(server.url);
      redisson.client.on('error', () => undefined);
    });
    after(async () => {
      backend?.close();
      raw?.disconnect();
      redisson?.dispose();
      await server?.dispose();
    });

    test('says how it keeps current, and follows locks coming, changing hands and going', async () => {
      await raw.set('w1/existing', 'tok-0', 'PX', 60_000);
      // A long poll interval with notifications on proves they, not polling, deliver the changes.
      const watch = backend.watch([b('w1/')], { pollIntervalMs: notify ? 60_000 : 200, leaseSampleIntervalMs: 200 });
      const rec = record(watch);
      try {
        await watch.start();
        assert.equal(watch.status.state, 'live');
        assert.equal(rec.sets.length, 1, 'the first load is one change set');
        assert.equal(rec.sets[0].resynced, true);
        assert.equal(watch.status.detail, notify ? 'keyspace notifications' : 'polling every 60 s: keyspace notifications are off'.replace('60 s', '200 ms'));
        assert.deepEqual(watch.locks().map((l) => l.holder?.owner), ['tok-0']);
        await raw.set('w1/new', 'tok-1', 'PX', 60_000);
        await eventually(() => watch.lock(keyId(b('w1/new')))?.holder?.owner === 'tok-1', 10_000, 'new lock seen');
        await raw.set('w1/new', 'tok-2', 'PX', 60_000);
        await eventually(() => watch.lock(keyId(b('w1/new')))?.holder?.owner === 'tok-2', 10_000, 'change of hands seen');
        await raw.del('w1/existing');
        await eventually(() => rec.sets.some((s) => s.removed.includes(keyId(b('w1/existing')))), 10_000, 'removal seen');
        assert.ok(rec.sets.slice(1).every((s) => !s.changed.some((l) => l.name.equals(b('w1/existing')) && l.holder?.owner === 'tok-0')), 'unchanged locks are not re-emitted');
        await eventually(() => rec.leases.some((l) => l.id === keyId(b('w1/new')) && l.state === 'alive' && l.grantedTtl > 50), 10_000, 'TTL sampled');
        // Keys outside the prefix are not locks of this watch.
        await raw.set('elsewhere', 'x');
        await watch.sync();
        assert.equal(watch.locks().length, 1);
      } finally {
        watch.dispose();
      }
      assert.equal(watch.status.state, 'closed');
    });

    if (notify) {
      test('notifications gathered for readDelayMs: a handoff inside it is one read, the lock never seen free', async () => {
        await raw.set('w5/gathered', 'tok-1', 'PX', 60_000);
        await raw.set('w5/prompt', 'tok-1', 'PX', 60_000);
        // Coalescing off, so that every read's change shows: only the gathering can fold the release into the take.
        const gathered = backend.watch([b('w5/gathered')], { pollIntervalMs: 60_000, minNotifyIntervalMs: 0, readDelayMs: 1500 });
        const prompt = backend.watch([b('w5/prompt')], { pollIntervalMs: 60_000, minNotifyIntervalMs: 0 });
        const [g, p] = [record(gathered), record(prompt)];
        try {
          await Promise.all([gathered.start(), prompt.start()]);
          for (const key of ['w5/gathered', 'w5/prompt']) await raw.del(key);
          await new Promise((r) => setTimeout(r, 500));
          for (const key of ['w5/gathered', 'w5/prompt']) await raw.set(key, 'tok-2', 'PX', 60_000);
          for (const [watch, key] of [[gathered, 'w5/gathered'], [prompt, 'w5/prompt']] as const) {
            await eventually(() => watch.lock(keyId(b(key)))?.holder?.owner === 'tok-2', 10_000, `${key} taken by tok-2`);
          }
          assert.ok(p.sets.some((s) => s.removed.includes(keyId(b('w5/prompt')))), 'read within 2 ms, the release shows on its own');
          assert.deepEqual(g.sets.slice(1).map((s) => [s.removed.length, s.changed.map((l) => l.holder?.owner)]), [[0, ['tok-2']]], 'one read: tok-1 to tok-2');
        } finally {
          gathered.dispose();
          prompt.dispose();
        }
      });
    }

    test('a Redisson unlock (publish) is seen; sync() catches up at once', async () => {
      const watch = backend.watch([b('w2/')], { pollIntervalMs: 60_000 });
      try {
        await watch.start();
        assert.equal(await redisson.lock('w2/job', 1), null);
        await watch.sync();
        assert.equal(watch.locks()[0]?.holder?.owner, `${REDISSON_UUID}:1`);
        await raw.eval(REDISSON_UNLOCK, 2, 'w2/job', lockChannel(b('w2/job')), UNLOCK_MESSAGE, 30_000, `${REDISSON_UUID}:1`);
        // No poll for a minute: the unlock message (and notifications, when on) must deliver it.
        await eventually(() => watch.locks().length === 0, 10_000, 'Redisson unlock seen');
      } finally {
        watch.dispose();
      }
    });

    test('server killed and restarted: reconnecting with the error, then live again with a full resync', async () => {
      await raw.set('w3/a', 'tok-a');
      const watch = backend.watch([b('w3/')], { pollIntervalMs: 200, leaseSampleIntervalMs: 200 });
      const rec = record(watch);
      try {
        await watch.start();
        assert.equal(watch.locks().length, 1);
        await server.stop();
        await eventually(() => watch.status.state === 'reconnecting', 10_000, 'reconnecting');
        assert.equal(watch.status.error?.code, 'UNREACHABLE');
        // Nothing read, nothing synced: a deadlock check must not take the model it had for a second read.
        await assert.rejects(watch.sync(), (e: LockLensError) => e.code === 'UNREACHABLE' || e.code === 'TIMEOUT');
        assert.equal(watch.locks().length, 1, 'the model stays as last read');
        await server.start();
        // The restarted server is empty (no persistence); a new lock appears there.
        const fresh = new Redis(server.url, { protocol: 2 });
        await fresh.set('w3/b', 'tok-b');
        fresh.disconnect();
        await eventually(() => watch.status.state === 'live', 20_000, 'live again');
        await eventually(() => watch.locks().map((l) => l.name.toString()).join() === 'w3/b', 10_000, 'resynced');
        assert.ok(rec.sets.some((s) => s.resynced && s.removed.includes(keyId(b('w3/a')))), 'the resync removed what is gone');
        assert.ok(rec.statuses.some((s) => s.state === 'reconnecting'));
        // And it keeps following changes after the restart.
        await backend.list([b('w3/')]);
        const again = new Redis(server.url, { protocol: 2 });
        await again.set('w3/c', 'tok-c');
        again.disconnect();
        await eventually(() => watch.locks().length === 2, 10_000, 'follows after restart');
      } finally {
        watch.dispose();
      }
    });

    test(`TTLs between reads are ${notify ? 'counted down (the server tells every change), not asked' : 'asked with PTTL'}; a renewal, a stall and the expiry are seen`, async () => {
      const pttlCalls = async () => Number(/cmdstat_pttl:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0);
      await raw.set('w4/held', 'tok', 'PX', 3000);
      const watch = backend.watch([b('w4/')], { pollIntervalMs: notify ? 60_000 : 200, leaseSampleIntervalMs: 100 });
      const rec = record(watch);
      const id = keyId(b('w4/held'));
      const samples = () => rec.leases.filter((l) => l.id === id).length;
      try {
        await watch.start();
        const asked = await pttlCalls();
        const seen = samples();
        await eventually(() => samples() >= seen + 5, 10_000, 'sweeps');
        if (notify) assert.equal(await pttlCalls(), asked, 'no PTTL while nothing changed');
        else assert.ok((await pttlCalls()) > asked, 'polling asks');
        // Renewed to more than it had left by over a second (what a refresh is, see observeLease).
        await raw.pexpire('w4/held', 6000);
        await eventually(() => (watch.lease(id)?.refreshes.length ?? 0) > 0, 10_000, 'renewal seen');
        await eventually(() => watch.lease(id)?.stalled === true, 10_000, 'nobody renews: stalled');
        await eventually(() => watch.locks().length === 0, 10_000, 'expired');
      } finally {
        watch.dispose();
      }
    });
  });
}

describe('Redis live watch over independent instances', { timeout: 60_000 }, () => {
  test('nodes reconnecting at once open one subscriber per node, and dispose closes every one', async () => {
    const servers = [await startRedis(), await startRedis()];
    const specs = await clientSpecs({ store: 'redis', endpoints: servers.map((s) => s.url) });
    const nodes: RedisNode[] = await Promise.all(specs.map(async (spec) => ({ label: spec.endpoint.label, client: await openClient(spec), spec })));
    const late = nodes[1].label;
    let gate!: () => void;
    const opened = new Promise<void>((resolve) => (gate = resolve));
    const calls: string[] = [];
    const created: Subscriber[] = [];
    let pending = 0;
    const watch = new RedisLockWatch(
      {
        topology: Topology.ofInstances(nodes),
        // The second instance cannot be subscribed to at first; later it can, once the test lets it.
        openSubscriber: async (node) => {
          calls.push(node.label);
          if (node.label === late && calls.filter((l) => l === late).length === 1) throw new Error('not yet');
          pending++;
          try {
            if (node.label === late) await opened;
            const subscriber = new Subscriber(await openClient(node.spec, 'locklens-watch'));
            created.push(subscriber);
            return subscriber;
          } finally {
            pending--;
          }
        },
      },
      [b('multi/')],
      { pollIntervalMs: 60_000 },
    );
    try {
      await watch.start();
      // Both instances say they are back at the same moment: each starts a detection.
      for (const node of nodes) node.client.emit('ready');
      await eventually(() => calls.filter((l) => l === late).length >= 2, 10_000, 'a subscriber asked for again');
      gate();
      await eventually(() => pending === 0 && created.length >= 2, 10_000, 'subscribers opened');
      assert.deepEqual(created.map((s) => s.client.options.port).sort(), nodes.map((n) => n.spec.endpoint.port).sort(), 'one per instance');
    } finally {
      watch.dispose();
      try {
        await eventually(() => created.every((s) => s.client.status === 'end'), 10_000, 'every subscriber closed');
      } finally {
        // A subscriber the watch lost track of would keep this process alive: closed here after the check.
        created.forEach((s) => s.client.disconnect());
        nodes.forEach((n) => n.client.disconnect());
        for (const s of servers) await s.dispose();
      }
    }
  });
});

describe('Redis live watch where CONFIG is refused (managed services, a renamed command)', { timeout: 60_000 }, () => {
  const servers: RedisServer[] = [];
  after(async () => {
    for (const s of servers) await s.dispose();
  });

  for (const notify of [true, false]) {
    test(`polls, says why, and follows keyspace notifications when the server sends them (${notify ? 'it does' : 'it does not'})`, async () => {
      const server = await startRedis({ disabledCommands: ['CONFIG'], ...(notify ? { notify: 'KEA' } : {}) });
      servers.push(server);
      const backend = await RedisBackend.open({ store: 'redis', endpoints: [server.url] });
      const raw = new Redis(server.url, { protocol: 2 });
      // With notifications, a one-minute poll never comes into it; without, polling every 200 ms does the work.
      const watch = backend.watch([b('cfg/')], { pollIntervalMs: notify ? 60_000 : 200, leaseSampleIntervalMs: 200 });
      try {
        await watch.start();
        assert.equal(watch.status.state, 'live');
        assert.equal(
          watch.status.detail,
          `polling every ${notify ? '60 s' : '200 ms'}: CONFIG is refused, so LockLens cannot tell whether keyspace notifications are on: it follows them if they come`,
        );
        await raw.set('cfg/lock', 'tok-1', 'PX', 60_000);
        await eventually(() => watch.lock(keyId(b('cfg/lock')))?.holder?.owner === 'tok-1', 10_000, 'a new lock seen');
        await raw.del('cfg/lock');
        await eventually(() => watch.locks().length === 0, 10_000, 'its release seen');
      } finally {
        watch.dispose();
        raw.disconnect();
        backend.close();
      }
    });
  }
});

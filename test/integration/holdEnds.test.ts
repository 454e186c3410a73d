import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { writeFileSync } from 'node:fs';
import { HistoryStore } from '../../src/core/recording/historyStore';
import type { RecordedHold } from '../../src/core/recording/recordedHold';
import { show, type Procs } from '../harness/cli';
import { fixture } from '../harness/cliFixture';
import { eventually } from '../harness/etcd';
import { serverFixture } from '../harness/cliFixture';
import { startRedis } from '../harness/redis';
import { RedisPyLock } from '../harness/redisPy';
import { scrape, startRecordingServe, valueOf, type ConfigConnection } from '../harness/serve';

/**
 * How each hold ended, as a real `locklens serve` records it from real stores and their own clients' locks: released by
 * its owner, expired (its TTL ran out: a Redis key's PX, a SIGKILLed etcdctl's lease), and force-released by
 * `locklens unlock --force --data DIR`; the history, `locklens history` and serve's counters say the same.
 */

/** The lock's recorded holds once `n` have ended. */
async function ended(data: string, name: string, n: number): Promise<RecordedHold[]> {
  return eventually(async () => {
    const store = await HistoryStore.openReader(data);
    try {
      const holds = await store.holds({ lock: name });
      return holds.filter((h) => h.endedAt !== null).length >= n ? holds : undefined;
    } finally {
      store.close();
    }
  }, 30_000, `${n} ended holds of ${name} recorded`);
}

/** Resolves once serve has recorded a hold of `name` open. */
const held = (data: string, name: string, n: number) =>
  eventually(async () => {
    const store = await HistoryStore.openReader(data);
    try {
      const holds = await store.holds({ lock: name });
      return holds.length >= n && holds[n - 1].endedAt === null;
    } finally {
      store.close();
    }
  }, 30_000, `hold ${n} of ${name} recorded`);

/** What `locklens history --data` says of each hold's end, as JSON and as text, and serve's counters of the lock. */
async function told(procs: Procs, base: string, data: string, connection: string, name: string) {
  const json = await procs.run(['history', name, '--data', data, '--json']);
  assert.equal(json.code, 0, show(json));
  const holds = (JSON.parse(json.stdout) as { holds: { end: string | null; forceReleasedBy: string | null }[] }).holds;
  const text = await procs.run(['history', name, '--data', data]);
  assert.equal(text.code, 0, show(text));
  const metrics = await eventually(async () => {
    const m = await scrape(base);
    return valueOf(m, 'locklens_lock_force_releases_total', { connection, lock: name }) === 1 && m;
  }, 20_000, 'the force release counted');
  return {
    ends: holds.map((h) => [h.end, h.forceReleasedBy]),
    text: text.stdout,
    expiries: valueOf(metrics, 'locklens_lock_expiries_total', { connection, lock: name }),
  };
}

const EXPECTED = [
  ['released', null],
  ['expired', null],
  ['forceReleased', userInfo().username],
];

for (const notify of ['Ex', '']) {
  describe(`how Redis holds ended (redis-py), notify-keyspace-events '${notify}'`, () => {
    const f = serverFixture(() => startRedis(notify ? { notify } : {}), (r) => r.url);
    test('released, expired (its PX ran out), force-released', async () => {
      const name = 'ends:jobs';
      const data = join(f.dir, 'data');
      const connection: ConfigConnection = { name: 'cache', store: 'redis', endpoints: [f.server.url], prefixes: ['ends:'] };
      const { serve, base } = await startRecordingServe(f.procs, { dir: f.dir, data, connection });
      const peer = (timeout: number) => {
        const p = new RedisPyLock(f.server.url, name, 'hold', timeout);
        f.defer(() => p.dispose());
        return p;
      };

      const released = peer(30);
      await released.until(['acquired']);
      await held(data, name, 1);
      released.release();
      await released.until(['released']);
      await ended(data, name, 1);

      // Never released: its key's 3 s PX runs out while it waits for its gate.
      const expiring = peer(3);
      await expiring.until(['acquired']);
      await held(data, name, 2);
      await ended(data, name, 2);

      const forced = peer(30);
      await forced.until(['acquired']);
      await held(data, name, 3);
      const unlock = await f.procs.run(['unlock', name, '--force', '--yes', '--url', f.server.url, '--data', data, '--connection-name', 'cache']);
      assert.equal(unlock.code, 0, show(unlock));
      await ended(data, name, 3);

      const r = await told(f.procs, base, data, 'cache', name);
      assert.deepEqual(r.ends, EXPECTED, r.text);
      assert.deepEqual(r.text.trimEnd().split('\n').slice(1).map((l) => l.split('  ')[5]), ['released', 'expired', `force-released by ${userInfo().username}`], r.text);
      assert.equal(r.expiries, 1);
      assert.equal(serve.stdout.includes('expired events tell expiries from deletes'), notify !== '', 'the watch says what tells an expiry');
      serve.signal('SIGTERM');
      assert.equal((await serve.wait()).code, 0);
    });
  });
}

describe('how etcd holds ended (etcdctl lock)', () => {
  const f = fixture();
  test('released (its command ended), expired (etcdctl SIGKILLed: its lease ran out), force-released', async () => {
    const name = '/ends/jobs';
    const data = join(f.dir, 'data');
    const connection: ConfigConnection = { name: 'prod', store: 'etcd', endpoints: [f.ep], prefixes: ['/ends/'] };
    const { serve, base } = await startRecordingServe(f.procs, { dir: f.dir, data, connection });

    const gate = join(f.dir, 'gate');
    const released = await f.etcdctlLock(name, ['sh', '-c', 'while [ ! -e "$0" ]; do sleep 0.05; done', gate]);
    await held(data, name, 1);
    writeFileSync(gate, '');
    assert.equal((await released.proc.wait()).code, 0);
    await ended(data, name, 1);

    // Killed, so that nobody renews or revokes its 3 s lease: it runs out. serve must have sampled its TTL first.
    const before = new Set(await f.keys(`${name}/`));
    const killed = f.procs.etcdctl(['lock', '--ttl', '3', name]);
    await eventually(async () => (await f.keys(`${name}/`)).some((k) => !before.has(k)), 20_000, 'etcdctl holds');
    await held(data, name, 2);
    await eventually(async () => valueOf(await scrape(base), 'locklens_lock_ttl_seconds', { connection: 'prod', lock: name }) !== undefined, 20_000, 'its TTL sampled');
    killed.signal('SIGKILL');
    await ended(data, name, 2);

    const forced = f.procs.etcdctl(['lock', name]);
    await held(data, name, 3);
    const unlock = await f.procs.run(['unlock', name, '--force', '--yes', '--endpoints', f.ep, '--data', data, '--connection-name', 'prod']);
    assert.equal(unlock.code, 0, show(unlock));
    await ended(data, name, 3);
    forced.signal('SIGKILL');

    const r = await told(f.procs, base, data, 'prod', name);
    assert.deepEqual(r.ends, EXPECTED, r.text);
    assert.equal(r.expiries, 1);
    serve.signal('SIGTERM');
    assert.equal((await serve.wait()).code, 0);
  });
});

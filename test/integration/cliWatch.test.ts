import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import { show } from '../harness/cli';
import { fixture, HEX_KEY, LOCK_KEYS, sorted, type Lock, type LockJson } from '../harness/cliFixture';
import { postgresCli } from '../harness/postgresCli';
import { redisCli, type LockDoc } from '../harness/redisCli';
import { zookeeperCli } from '../harness/zookeeperCli';

/**
 * Black-box tests of `locklens watch` (dist/locklens.js) against each store's real server: it prints the locks there
 * are, then one line per change as etcdctl, redis-py, kazoo or psycopg2 take, queue for, hand over and release a lock.
 * Order and content only: no wall-clock assertions.
 */

describe('locklens over etcd (--endpoints), against etcdctl lock', () => {
  const f = fixture();

  describe('locklens watch', () => {
    test('--json prints one line per change: etcdctl acquires, queues, hands over, releases; SIGINT exits 0', async () => {
      const w = f.procs.locklens(['watch', '--prefix', 'wl', '--json', '--endpoints', f.ep]);
      await w.until((p) => p.stderr.includes('locklens: live'), 'watch is live');
      type Line = { revision: number; lock?: LockJson; removed?: string };
      const parsed = (): Line[] => w.lines.map((l) => JSON.parse(l) as Line);
      const seen = (pred: (l: Line) => boolean, what: string) => w.until(() => parsed().find(pred), what);

      const holder = await f.etcdctlLock('wl');
      const held = await seen((l) => l.lock?.holder?.key === holder.key, 'a line with etcdctl as holder');
      assert.deepEqual(sorted(held), ['lock', 'revision']);
      assert.deepEqual(sorted(held.lock!), LOCK_KEYS);
      assert.equal(held.lock!.name, 'wl');
      assert.equal(held.lock!.kind, 'queue');
      assert.equal(held.lock!.holder!.lease, HEX_KEY('wl').exec(holder.key)![1]);
      assert.equal(held.lock!.holder!.createRevision, await f.createRevision(holder.key));
      assert.ok(Number.isInteger(held.revision) && held.revision >= held.lock!.holder!.createRevision);

      const waiter = await f.etcdctlLock('wl');
      await seen((l) => l.lock?.holder?.key === holder.key && l.lock.waiters.length === 1 && l.lock.waiters[0].key === waiter.key, 'a line with the waiter queued');

      holder.proc.signal('SIGINT'); // etcdctl lock unlocks on SIGINT
      assert.equal((await holder.proc.wait()).code, 0);
      await seen((l) => l.lock?.holder?.key === waiter.key && l.lock.waiters.length === 0, 'a line with the waiter as holder');

      waiter.proc.signal('SIGINT');
      assert.equal((await waiter.proc.wait()).code, 0);
      const removed = await seen((l) => l.removed !== undefined, 'a removed line');
      assert.deepEqual(removed, { revision: removed.revision, removed: 'wl' });
      assert.ok(removed.revision > held.revision);

      // Revisions never go backwards, and every line is about this lock.
      const all = parsed();
      for (let i = 1; i < all.length; i++) assert.ok(all[i].revision >= all[i - 1].revision, `revisions ordered: ${w.stdout}`);
      for (const l of all) assert.ok(l.lock?.name === 'wl' || l.removed === 'wl', JSON.stringify(l));

      w.signal('SIGINT');
      const r = await w.wait();
      assert.equal(r.code, 0, show(r));
    });

    test('human output: prints existing locks first, then changes', async () => {
      const holder = await f.etcdctlLock('wh');
      const w = f.procs.locklens(['watch', '--prefix', 'wh', '--endpoints', f.ep]);
      await w.until((p) => p.lines.find((l) => l.includes(`holder ${holder.key}`)), 'the existing lock is printed');
      holder.proc.signal('SIGINT');
      await w.until((p) => p.lines.find((l) => /\bwh {2}free\b/.test(l)), 'the lock is printed free');
      w.signal('SIGINT');
      const r = await w.wait();
      assert.equal(r.code, 0, show(r));
    });
  });
});

describe('locklens over Redis (--url), against redis-py and Redisson layouts', () => {
  const f = redisCli();
  const { url, peer } = f;

  test('locklens watch --json follows a redis-py lock taken and released (polling: this server has no keyspace notifications)', async () => {
    const w = f.procs.locklens(['watch', '--url', url(), '--prefix', 'wt:', '--json']);
    await w.until((p) => p.stderr.includes('locklens: live'), 'watch is live');
    assert.match(w.stderr, /polling/, 'the status says how it follows the store');
    type Line = { revision: number; lock?: LockDoc; removed?: string };
    const parsed = (): Line[] => w.lines.map((l) => JSON.parse(l) as Line);
    const py = peer('wt:job', 'hold');
    const token = (await py.until(['acquired'])).split(' ')[1];
    const held = await w.until(() => parsed().find((l) => l.lock?.holder?.owner === token), `a line with redis-py's token ${token} as holder (peer said: ${py.lines.join(' | ')})`);
    assert.equal(held.lock!.name, 'wt:job');
    py.release();
    await py.until(['released']);
    const removed = await w.until(() => parsed().find((l) => l.removed !== undefined), 'a removed line');
    assert.equal(removed.removed, 'wt:job');
    w.signal('SIGINT');
    assert.equal((await w.wait()).code, 0);
  });

  test('locklens watch names every permit holder of a redis-semaphore, in text', async () => {
    const client = new Redis(url(), { protocol: 2 });
    f.procs.defer(() => client.disconnect());
    const peers = [0, 1].map(() => new Semaphore(client, 'watched', 2, { acquireTimeout: 10_000 }));
    for (const p of peers) await p.acquire();
    f.procs.defer(() => Promise.all(peers.map((p) => p.release())));
    const w = f.procs.locklens(['watch', '--url', url(), '--prefix', 'semaphore:']);
    const ids = peers.map((p) => p.identifier).sort();
    const line = await w.until((p) => p.lines.find((l) => l.includes('semaphore:watched')), 'the semaphore printed');
    assert.match(line, new RegExp(`^\\d+  semaphore:watched  semaphore  2 permits held \\(limit not recorded\\)  holders ${ids.join(', ')}  waiting 0$`));
    w.signal('SIGINT');
    assert.equal((await w.wait()).code, 0);
  });
});

describe('locklens over ZooKeeper (--url zookeeper://), against kazoo and Curator layouts', { timeout: 180_000 }, () => {
  const f = zookeeperCli();
  const { url, kazoo } = f;

  test('locklens watch --prefix /app --json follows a kazoo lock taken, queued for, handed over and released', async () => {
    const name = '/app/watched/job';
    const w = f.procs.locklens(['watch', '--prefix', '/app', '--json', '--url', url()]);
    await w.until((p) => p.stderr.includes('locklens: live'), 'watch is live');
    type Line = { revision: number; lock?: Lock; removed?: string };
    const parsed = (): Line[] => w.lines.map((l) => JSON.parse(l) as Line).filter((l) => (l.lock?.name ?? l.removed) === name);
    const seen = (what: string, check: (l: Line) => boolean) => w.until(() => parsed().find(check), what);

    const first = kazoo(name, { identifier: 'watched-1' });
    const [, node, firstSession] = (await first.until(['acquired'])).split(' ');
    const held = await seen('the kazoo holder', (l) => l.lock?.holder?.owner === firstSession);
    assert.equal(held.lock!.holder!.key, `${name}/${node}`);
    assert.equal(held.lock!.holder!.data, 'watched-1');
    assert.equal(typeof held.lock!.holder!.token, 'number');
    const second = kazoo(name, { identifier: 'watched-2' });
    const secondSession = (await second.until(['waiting'])).split(' ')[1];
    await seen('its waiter', (l) => l.lock?.holder?.owner === firstSession && l.lock.waiters[0]?.owner === secondSession);
    first.release();
    await seen('the handover', (l) => l.lock?.holder?.owner === secondSession && l.lock.waiters.length === 0);
    second.release();
    await second.until(['released']);
    await seen('the lock gone', (l) => l.removed === name);
    const revisions = parsed().map((l) => l.revision);
    assert.deepEqual(revisions, [...revisions].sort((a, b) => a - b), 'revisions count up');
    w.signal('SIGINT');
    assert.equal((await w.wait()).code, 0);
  });
});

describe('locklens over PostgreSQL (--url postgres://), against psycopg2 sessions and lock tables', { timeout: 300_000 }, () => {
  const f = postgresCli();
  const { fresh, url, start, psycopg } = f;

  test("watch --json follows psycopg2's lock: held, queued for, handed over, released", async () => {
    const key = fresh();
    const w = start(['watch', '--url', url(), '--json', '--prefix', key]);
    await w.until((p) => p.stderr.includes('locklens: live'), 'watch is live');
    type Line = { revision: number; lock?: Lock; removed?: string };
    const parsed = (): Line[] => w.lines.map((l) => JSON.parse(l) as Line).filter((l) => (l.lock?.name ?? l.removed) === key);
    const seen = (what: string, check: (l: Line) => boolean) => w.until(() => parsed().find(check), what);

    const first = psycopg(key, { application: 'watched-1' });
    const firstPid = String(await first.pid());
    await first.until(['acquired']);
    const held = await seen('the psycopg2 holder', (l) => l.lock?.holder?.owner === firstPid);
    assert.equal(held.lock!.holder!.session?.application, 'watched-1');
    const second = psycopg(key, { application: 'watched-2' });
    const secondPid = String(await second.pid());
    await seen('its waiter', (l) => l.lock?.holder?.owner === firstPid && l.lock.waiters[0]?.owner === secondPid);
    first.release();
    await seen('the handover', (l) => l.lock?.holder?.owner === secondPid && l.lock.waiters.length === 0);
    second.release();
    await second.until(['released']);
    await seen('the lock gone', (l) => l.removed === key);
    const revisions = parsed().map((l) => l.revision);
    assert.deepEqual(revisions, [...revisions].sort((a, b) => a - b), 'revisions count up');
    w.signal('SIGINT');
    assert.equal((await w.wait()).code, 0);
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as zookeeper from 'node-zookeeper-client';
import { show, type Proc } from '../harness/cli';
import { fixture, HEX_KEY, MARK_WAIT_MARK, serverFixture, WAIT_THEN_APPEND } from '../harness/cliFixture';
import { postgresCli } from '../harness/postgresCli';
import { startRedis } from '../harness/redis';
import { FakeRedisson } from '../harness/redisson';
import { zookeeperCli } from '../harness/zookeeperCli';

/**
 * `locklens acquire NAME NAME…` against real servers: the names taken in order as one owner (etcd: one lease; ZooKeeper:
 * one session; Redis: one Redisson field), all held while the command runs, released in reverse order on its exit and
 * on SIGINT/SIGTERM, and the first released when the second cannot be taken or the first is lost meanwhile; PostgreSQL
 * refuses them. Orders are read from the store (etcd's revisions, ZooKeeper's ordered watch events), never from timing.
 */

/** The stderr line a several-name acquire writes once it holds a NAME before the last. */
const holding = (p: Proc, name: string) => p.until((q) => new RegExp(`holding ${name}: (\\S+), .*, owner (\\S+)\n`).exec(q.stderr) ?? undefined, `holds ${name}`);

describe('locklens acquire with several NAMEs over etcd', () => {
  const f = fixture();

  /** Where etcd is now: the revision its next write will follow. */
  const revisionNow = async () => (JSON.parse(await f.etcd.etcdctl(['get', 'x', '-w', 'json'])) as { header: { revision: number } }).header.revision;
  /** The first revision after `from` at which `key` no longer exists. */
  async function goneAt(key: string, from: number): Promise<number> {
    const now = await revisionNow();
    for (let rev = from; rev <= now; rev++) {
      const read = JSON.parse(await f.etcd.etcdctl(['get', key, `--rev=${rev}`, '-w', 'json'])) as { kvs?: unknown[] };
      if (!read.kvs?.length) return rev;
    }
    throw new Error(`${key} still exists at revision ${now}`);
  }
  const leaseOf = async (key: string) => (JSON.parse(await f.etcd.etcdctl(['get', key, '-w', 'json'])) as { kvs: { lease: number }[] }).kvs[0].lease;

  test('in the order given, on one lease; the command sees every key; released in reverse order when it exits', async () => {
    const gate = join(f.dir, 'gate');
    const envFile = join(f.dir, 'env');
    const script = 'printf "%s|%s|%s\\n" "$LOCKLENS_LOCK_KEYS" "$LOCKLENS_FENCING_TOKENS" "$ETCD_LOCK_KEY" > "$2.tmp"; mv "$2.tmp" "$2"; while [ ! -e "$1" ]; do sleep 0.05; done';
    const p = f.procs.locklens(['acquire', '/m1/a', '/m1/b', '--endpoints', f.ep, '--', 'sh', '-c', script, 'sh', gate, envFile]);
    await p.until(() => existsSync(envFile), 'the command ran');
    const [a] = await f.keys('/m1/a/');
    const [b] = await f.keys('/m1/b/');
    const lease = HEX_KEY('/m1/a').exec(a)![1];
    assert.equal(b, `/m1/b/${lease}`, 'both keys name the same lease');
    assert.equal(await leaseOf(a), await leaseOf(b), 'both keys are attached to the same lease');
    assert.equal(parseInt(lease, 16), Number(await leaseOf(a)));
    const [ra, rb] = [await f.createRevision(a), await f.createRevision(b)];
    assert.ok(ra < rb, `/m1/a taken first (${ra}), then /m1/b (${rb})`);
    assert.equal(readFileSync(envFile, 'utf8').trim(), `${a}\n${b}|${ra} ${rb}|${b}`);
    assert.ok(p.stderr.includes(`holding /m1/a: ${a}, fencing token ${ra}, owner ${lease}\n`), p.stderr);

    writeFileSync(gate, '');
    const r = await p.wait();
    assert.equal(r.code, 0, show(r));
    const [aGone, bGone] = [await goneAt(a, rb), await goneAt(b, rb)];
    assert.ok(bGone < aGone, `/m1/b released (at ${bGone}) before /m1/a (at ${aGone})`);
    assert.match(await f.etcd.etcdctl(['lease', 'timetolive', lease]), /already expired/, 'the lease is revoked at the end');
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`held without a command: both printed; ${signal} releases them in reverse order`, async () => {
      const p = f.procs.locklens(['acquire', `/m2${signal}/a`, `/m2${signal}/b`, '--endpoints', f.ep]);
      await p.until((q) => q.lines.length === 4, 'both keys and tokens printed');
      const [a, tokenA, b, tokenB] = p.lines;
      assert.equal(tokenA, `fencing token ${await f.createRevision(a)}`);
      assert.equal(tokenB, `fencing token ${await f.createRevision(b)}`);
      const from = await revisionNow();
      p.signal(signal);
      const r = await p.wait();
      assert.equal(r.code, 130, show(r));
      assert.ok((await goneAt(b, from)) < (await goneAt(a, from)), 'b released before a');
    });
  }

  test('the second NAME held by etcdctl, with --try: exit 6, and the first is released', async () => {
    const other = await f.etcdctlLock('/m3/b');
    const r = await f.procs.run(['acquire', '/m3/a', '/m3/b', '--try', '--endpoints', f.ep]);
    assert.equal(r.code, 6, show(r));
    assert.match(r.stderr, /holding \/m3\/a: \/m3\/a\//);
    assert.deepEqual(await f.keys('/m3/a/'), []);
    assert.deepEqual(await f.keys('/m3/b/'), [other.key]);
  });

  test('interrupted while waiting for the second: leaves its queue and releases the first', async () => {
    const other = await f.etcdctlLock('/m4/b');
    const p = f.procs.locklens(['acquire', '/m4/a', '/m4/b', '--endpoints', f.ep, '--', 'true']);
    await holding(p, '/m4/a');
    await f.keyCount('/m4/b/', 2, [p]);
    p.signal('SIGTERM');
    const r = await p.wait();
    assert.equal(r.code, 130, show(r));
    assert.deepEqual(await f.keys('/m4/a/'), []);
    assert.deepEqual(await f.keys('/m4/b/'), [other.key]);
  });

  test('the first force-released while the second is waited for: exit 7, the command never runs, nothing left queued', async () => {
    const other = await f.etcdctlLock('/m6/b');
    const ran = join(f.dir, 'ran');
    const p = f.procs.locklens(['acquire', '/m6/a', '/m6/b', '--endpoints', f.ep, '--', 'sh', '-c', 'echo ran > "$1"', 'sh', ran]);
    const [, a] = await holding(p, '/m6/a');
    await f.keyCount('/m6/b/', 2, [p]);
    const unlocked = await f.procs.run(['unlock', '/m6/a', '--force', '--yes', '--endpoints', f.ep]);
    assert.equal(unlocked.code, 0, show(unlocked));
    const r = await p.wait();
    assert.equal(r.code, 7, show(r));
    assert.match(r.stderr, new RegExp(`${a}`), 'the loss names the key');
    assert.equal(existsSync(ran), false);
    assert.deepEqual(await f.keys('/m6/'), [other.key]);
  });

  test('a NAME given twice is refused before anything is taken', async () => {
    const r = await f.procs.run(['acquire', '/m5/a', '/m5/a', '--endpoints', f.ep]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /\/m5\/a is named twice/);
    assert.deepEqual(await f.keys('/m5/'), []);
  });
});

describe('locklens acquire with several NAMEs over ZooKeeper', () => {
  const f = zookeeperCli();

  test('in the order given, on one session; released in reverse order when the command exits', async () => {
    const gate = join(f.dir, 'gate');
    const p = f.procs.locklens(['acquire', '/zm1/a', '/zm1/b', '--url', f.url(), '--', 'sh', '-c', WAIT_THEN_APPEND, 'sh', gate, join(f.dir, 'out'), 'done']);
    const [, aPath, owner] = await holding(p, '/zm1/a');
    await p.until((q) => q.stderr.includes('holding /zm1/b/'), 'holds both');
    const [a, b] = [await f.listed('/zm1/a', (l) => !!l.holder, 'a held'), await f.listed('/zm1/b', (l) => !!l.holder, 'b held')];
    assert.equal(a.holder!.key, aPath);
    assert.equal(a.holder!.owner, owner);
    assert.equal(b.holder!.owner, owner, 'both nodes are the one session\'s');
    const watcher = await f.session();
    assert.ok(a.holder!.token! < b.holder!.token!, '/zm1/a created first');
    const deletes: string[] = [];
    const deleted = new Promise<void>((done) => {
      const watch = (path: string) => (event: zookeeper.Event) => {
        if (event.getType() === zookeeper.Event.NODE_DELETED) deletes.push(path);
        if (deletes.length === 2) done();
      };
      void watcher.exists(a.holder!.key, watch('a')).then(() => watcher.exists(b.holder!.key, watch('b'))).then(() => writeFileSync(gate, ''));
    });
    const r = await p.wait();
    assert.equal(r.code, 0, show(r));
    await deleted;
    assert.deepEqual(deletes, ['b', 'a'], 'ZooKeeper tells one session its watches in the order of the deletes');
  });

  test('the second held by kazoo: SIGTERM while waiting for it releases the first', async () => {
    const kazoo = f.kazoo('/zm2/b');
    await kazoo.until(['acquired']);
    const p = f.procs.locklens(['acquire', '/zm2/a', '/zm2/b', '--url', f.url()]);
    await holding(p, '/zm2/a');
    await f.listed('/zm2/b', (l) => l.waiters.length === 1, 'locklens queued for /zm2/b');
    p.signal('SIGTERM');
    const r = await p.wait();
    assert.equal(r.code, 130, show(r));
    assert.equal((await f.list('/zm2/a')).length, 0, '/zm2/a released');
    assert.deepEqual((await f.listed('/zm2/b', (l) => l.waiters.length === 0, 'the queue left')).waiters, []);
  });
});

describe('locklens acquire with several NAMEs over Redis', () => {
  const f = serverFixture(startRedis, (redis) => redis.url);

  test('Redisson write locks on free NAMEs: both hold one Redisson field, released when the command exits', async () => {
    const redis = FakeRedisson.connect(f.server.url).client;
    f.defer(() => redis.disconnect());
    const gate = join(f.dir, 'gate');
    const out = join(f.dir, 'out');
    const p = f.procs.locklens(['acquire', 'rw:a', 'rw:b', '--mode', 'write', '--url', f.server.url, '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', out, 'running', gate, 'done']);
    const [, , owner] = await holding(p, 'rw:a');
    await p.until(() => existsSync(out), 'the command runs, holding both');
    const [a, b] = [await redis.hgetall('rw:a'), await redis.hgetall('rw:b')];
    assert.equal(a.mode, 'write');
    assert.deepEqual(a, b, 'the same field, the same count: one owner');
    assert.ok(Object.keys(a).some((field) => field.startsWith(owner)), `${JSON.stringify(a)} has the field of ${owner}`);
    writeFileSync(gate, '');
    const r = await p.wait();
    assert.equal(r.code, 0, show(r));
    assert.equal(await redis.exists('rw:a', 'rw:b'), 0);
  });

  test('free NAMEs taken as token locks (--layout token) have a token each of their own', async () => {
    const redis = FakeRedisson.connect(f.server.url).client;
    f.defer(() => redis.disconnect());
    const p = f.procs.locklens(['acquire', 'tk:a', 'tk:b', '--layout', 'token', '--url', f.server.url]);
    await p.until((q) => q.lines.length === 4, 'both held');
    const [a, b] = [await redis.get('tk:a'), await redis.get('tk:b')];
    assert.ok(a && b && a !== b, `${a} ${b}`);
    p.signal('SIGTERM');
    assert.equal((await p.wait()).code, 130);
    assert.equal(await redis.exists('tk:a', 'tk:b'), 0);
  });
});

describe('locklens acquire with several NAMEs over PostgreSQL', () => {
  const f = postgresCli();

  test('refused before anything is taken, saying why', async () => {
    const r = await f.cli(['acquire', '41', '42', '--url', f.url()]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /several NAMEs: PostgreSQL: refused\. Each lock is held on a connection of its own/);
  });
});

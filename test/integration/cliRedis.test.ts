import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, Procs, show } from '../harness/cli';
import { MARK_WAIT_MARK } from '../harness/cliFixture';
import { eventually, startRedis, type RedisServer } from '../harness/redis';
import { RedisPyLock } from '../harness/redisPy';
import { FakeRedisson } from '../harness/redisson';

// The shipped `locklens` binary over Redis, next to real redis-py processes: the acceptance cases.

interface Entry {
  key: string;
  owner: string;
  lease: string | null;
  createRevision: number | null;
  token: number | null;
  holds: number | null;
  ttl: number | null;
  convention: string;
}
interface LockDoc {
  name: string;
  kind: string;
  holder: Entry | null;
  waiters: Entry[];
}

describe('locklens over Redis (--url), against redis-py and Redisson layouts', () => {
  let redis: RedisServer;
  let procs: Procs;
  let dir: string;
  const peers: RedisPyLock[] = [];
  const url = () => redis.url;
  const peer = (name: string, mode: 'hold' | 'try', timeout: number | null = 30) => {
    const p = new RedisPyLock(url(), name, mode, timeout);
    peers.push(p);
    return p;
  };
  const list = async (prefix: string) => {
    const r = await procs.run(['list', '--url', url(), '--prefix', prefix, '--json']);
    assert.equal(r.code, 0, show(r));
    const doc = JSON.parse(r.stdout) as { revision: null; locks: LockDoc[] };
    assert.equal(doc.revision, null, 'Redis has no revision');
    return doc.locks;
  };

  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis.dispose();
  });
  beforeEach(() => {
    procs = new Procs(url());
    dir = mkdtempSync(join(tmpdir(), 'locklens-cli-redis-'));
  });
  afterEach(async () => {
    for (const p of peers.splice(0)) p.dispose();
    await procs.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('list --json: a Redisson holder with its hold count, a fair lock\'s waiters in queue order, a redis-py token as owner', async () => {
    const redisson = FakeRedisson.connect(url());
    procs.defer(() => redisson.dispose());
    assert.equal(await redisson.lock('app:billing', 1), null);
    assert.equal(await redisson.lock('app:billing', 1), null, 're-entered: hold count 2');
    assert.equal(await redisson.fairLock('app:fair', 1), null, 'the fair lock is held');
    assert.notEqual(await redisson.fairLock('app:fair', 2), null, 'thread 2 queues');
    assert.notEqual(await redisson.fairLock('app:fair', 3), null, 'thread 3 queues behind it');
    const py = peer('app:export', 'hold', null);
    const token = (await py.until(['acquired'])).split(' ')[1];

    const locks = await list('app:');
    const named = (n: string) => {
      const l = locks.find((x) => x.name === n);
      assert.ok(l, `${n} among ${locks.map((x) => x.name).join(', ')}`);
      return l;
    };
    const billing = named('app:billing');
    assert.equal(billing.holder?.holds, 2);
    assert.equal(billing.holder?.convention, 'redisson-lock');
    assert.match(billing.holder!.owner, /^[0-9a-f-]{36}:1$/);
    assert.deepEqual([billing.holder?.lease, billing.holder?.token, billing.holder?.createRevision], [null, null, null], 'nothing etcd-only is made up');
    const fair = named('app:fair');
    assert.deepEqual(
      fair.waiters.map((w) => w.owner.split(':')[1]),
      ['2', '3'],
      'waiters in queue order',
    );
    assert.ok(fair.waiters.every((w) => typeof w.ttl === 'number' && w.ttl > 0), 'each waiter counts down to its give-up time');
    const exported = named('app:export');
    assert.equal(exported.kind, 'single');
    assert.equal(exported.holder?.owner, token, 'the redis-py token is the owner');
    assert.equal(exported.holder?.convention, 'redis-token');
    assert.equal(exported.holder?.ttl, null, 'redis-py without a timeout: no expiry');
  });

  test('locklens acquire -- CMD excludes redis-py both ways and releases when CMD exits', async () => {
    const log = join(dir, 'order');
    // redis-py holds; locklens waits, and its command runs only after redis-py released.
    const py = peer('app:job', 'hold');
    await py.until(['acquired']);
    const ours = procs.locklens(['acquire', 'app:job', '--url', url(), '--ttl', '10', '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', join(dir, 'go'), 'locklens-end']);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(existsSync(log), false, 'locklens did not run its command while redis-py held the lock');
    writeFileSync(log, 'py-released\n');
    py.release();
    await py.until(['released']);
    await eventually(() => readFileSync(log, 'utf8').includes('locklens-start'), 15_000, 'locklens runs its command once redis-py released');

    // locklens holds; redis-py's try fails, its blocking acquire waits until locklens's command exits.
    const tryPeer = peer('app:job', 'try');
    assert.equal(await tryPeer.until(['busy', 'acquired']), 'busy', 'redis-py cannot take it while locklens holds');
    const waiter = peer('app:job', 'hold');
    await waiter.until(['waiting']);
    writeFileSync(join(dir, 'go'), '');
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    await waiter.until(['acquired']);
    assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['py-released', 'locklens-start', 'locklens-end']);
    waiter.release();
    await waiter.until(['released']);
  });

  test('locklens acquire --mode read shares a Redisson read/write lock with its readers, --mode write waits for every reader; without --mode it exits 2', async () => {
    const redisson = FakeRedisson.connect(url());
    procs.defer(() => redisson.dispose());
    const name = 'app:report';
    const fields = () => redisson.client.hgetall(name);
    assert.equal(await redisson.readLock(name, 1, 60_000), null);
    const plain = await procs.run(['acquire', name, '--url', url()]);
    assert.equal(plain.code, 2, show(plain));
    assert.match(plain.stderr, /app:report is a Redisson read\/write lock: choose read or write/, show(plain));

    // Our reader runs at once beside Redisson's; a Redisson writer is refused (its script answers a PTTL).
    const log = join(dir, 'order');
    const reader = procs.locklens(['acquire', name, '--url', url(), '--mode', 'read', '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'read-start', join(dir, 'read-go'), 'read-end']);
    await eventually(() => existsSync(log) && readFileSync(log, 'utf8').includes('read-start'), 15_000, 'the reader`s command runs');
    const readers = Object.keys(await fields()).filter((f) => f !== 'mode');
    assert.equal(readers.length, 2, JSON.stringify(readers));
    assert.notEqual(await redisson.writeLock(name, 2), null, 'a Redisson writer waits for the readers');

    // Our writer waits for both readers: ours ending is not enough, Redisson's last unlock (and its publish) lets it in.
    const writer = procs.locklens(['acquire', name, '--url', url(), '--mode', 'write', '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'write-start', join(dir, 'write-go'), 'write-end']);
    writeFileSync(join(dir, 'read-go'), '');
    const read = await reader.wait();
    assert.equal(read.code, 0, show(read));
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(!readFileSync(log, 'utf8').includes('write-start'), 'the writer waits while Redisson`s reader holds');
    appendFileSync(log, 'redisson-read-unlock\n');
    assert.equal(await redisson.readUnlock(name, 1), 1);
    await eventually(() => readFileSync(log, 'utf8').includes('write-start'), 15_000, 'the writer`s command runs');
    const held = Object.keys(await fields());
    assert.ok(held.includes('mode') && held.length === 2 && held.some((f) => /^[0-9a-f-]{36}:\d+:write$/.test(f)), JSON.stringify(held));
    assert.notEqual(await redisson.readLock(name, 1), null, 'a Redisson reader waits for our writer');
    writeFileSync(join(dir, 'write-go'), '');
    const write = await writer.wait();
    assert.equal(write.code, 0, show(write));
    assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['read-start', 'read-end', 'redisson-read-unlock', 'write-start', 'write-end']);
    assert.equal(await redisson.writeLock(name, 2), null, 'released: the Redisson writer takes it');
    assert.equal(await redisson.writeUnlock(name, 2), 1);
  });

  test('locklens acquire --try on a lock redis-py holds exits 6 naming the holder, and leaves the token alone', async () => {
    const py = peer('app:busy', 'hold');
    const token = (await py.until(['acquired'])).split(' ')[1];
    const r = await procs.run(['acquire', 'app:busy', '--try', '--url', url()]);
    assert.equal(r.code, 6, show(r));
    assert.match(r.stderr, new RegExp(token), show(r));
    assert.equal(await redis.cli(['GET', 'app:busy']), token);
  });

  test('locklens watch --json follows a redis-py lock taken and released (polling: this server has no keyspace notifications)', async () => {
    const w = procs.locklens(['watch', '--url', url(), '--prefix', 'wt:', '--json']);
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

  test('list and watch in text: owners instead of leases, the hold count, and a key with no expiry said to never expire', async () => {
    const redisson = FakeRedisson.connect(url());
    procs.defer(() => redisson.dispose());
    assert.equal(await redisson.lock('txt:billing', 4), null);
    assert.equal(await redisson.lock('txt:billing', 4), null);
    await redis.cli(['SET', 'txt:stuck', 'tok-stuck']);
    await redis.cli(['SET', 'txt:timed', 'tok-timed', 'PX', '60000']);
    const r = await procs.run(['list', '--url', url(), '--prefix', 'txt:']);
    assert.equal(r.code, 0, show(r));
    const lines = r.stdout.split('\n');
    assert.ok(lines.some((l) => /^  holder +[0-9a-f-]{36}:4  owner [0-9a-f-]{36}:4  holds 2  ttl \d+s$/.test(l)), show(r));
    assert.ok(lines.includes('  holder    txt:stuck  owner tok-stuck  ttl none (never expires)'), show(r));
    assert.ok(lines.some((l) => /^  holder +txt:timed  owner tok-timed  ttl \d+s$/.test(l)), show(r));
    assert.ok(!/lease|token \d/.test(r.stdout), `nothing etcd-only: ${r.stdout}`);

    const w = procs.locklens(['watch', '--url', url(), '--prefix', 'txt:s']);
    await w.until((p) => p.lines.some((l) => /txt:stuck/.test(l)), 'the stuck lock printed');
    assert.match(w.lines.find((l) => /txt:stuck/.test(l))!, /^\d+  txt:stuck  single  holder txt:stuck \(owner tok-stuck\)  waiting 0$/);
    w.signal('SIGINT');
    assert.equal((await w.wait()).code, 0);
  });

  test('the database number in the URL is the one read: a lock in db 3 is listed with /3, not with /0', async () => {
    await redis.cli(['-n', '3', 'SET', 'db3:lock', 'token-in-db-3']);
    await redis.cli(['SET', 'db3:other', 'token-in-db-0']);
    const r = await procs.run(['list', '--url', `${url()}/3`, '--prefix', 'db3:', '--json']);
    assert.equal(r.code, 0, show(r));
    const names = (JSON.parse(r.stdout) as { locks: LockDoc[] }).locks.map((l) => `${l.name}=${l.holder?.owner}`);
    assert.deepEqual(names, ['db3:lock=token-in-db-3']);
  });

  test('locklens unlock --force frees a stuck redis-py lock (no expiry) only while it still holds the token read', async () => {
    const py = peer('app:stuck', 'hold', null);
    const token = (await py.until(['acquired'])).split(' ')[1];
    const r = await procs.run(['unlock', 'app:stuck', '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, new RegExp(`released 'app:stuck' from app:stuck \\(owner ${token}\\)`), show(r));
    assert.equal(await redis.cli(['EXISTS', 'app:stuck']), '0');
    py.release();
    assert.equal(await py.until(['released', 'release-failed']), 'release-failed LockNotOwnedError', 'redis-py learns at release that it had lost the lock');
  });

  test('a CLI built without the Redis store says so and exits 1, instead of a module-not-found crash', async () => {
    // The CLI bundle alone, without dist/stores/ beside it.
    copyFileSync(CLI, join(dir, 'locklens.js'));
    const r = await procs.spawn(process.execPath, [join(dir, 'locklens.js'), 'list', '--url', url(), '--prefix', 'app:']).exited;
    assert.equal(r.code, 1, show(r));
    assert.match(r.stderr, /this build of LockLens has no redis store \(.*stores\/redis\.js is missing\)/, show(r));
    assert.doesNotMatch(r.stderr, /MODULE_NOT_FOUND|\n\s+at /, 'a sentence, not a stack trace');
  });
});

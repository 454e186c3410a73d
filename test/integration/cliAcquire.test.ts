import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import * as zookeeper from 'node-zookeeper-client';
import { Semaphore } from 'redis-semaphore';
import type { LockJson } from '../../src/cli/lockJson';
import { show } from '../harness/cli';
import { fixture, HEX_KEY, linesOf, MARK_WAIT_MARK, WAIT_THEN_APPEND } from '../harness/cliFixture';
import { eventually } from '../harness/etcd';
import { mariadbCli } from '../harness/mariadbCli';
import { postgresCli } from '../harness/postgresCli';
import { eventually as eventuallyTrue } from '../harness/redis';
import { redisCli } from '../harness/redisCli';
import { FakeRedisson } from '../harness/redisson';
import { curatorPrefix, zookeeperCli } from '../harness/zookeeperCli';

/**
 * Black-box tests of `locklens acquire` (dist/locklens.js) against each store's real server: it queues fairly with,
 * and excludes both ways, the processes that take the same locks (etcdctl lock, redis-py and Redisson, kazoo and
 * Curator's layout, psycopg2, PyMySQL). What ran when is proven by what the processes wrote, never by timing.
 */

/** PIDs of running processes that have `arg` among their arguments. */
function processesWith(arg: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0');
      const state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${entry}/status`, 'latin1'))?.[1];
      if (argv.includes(arg) && state !== 'Z') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('locklens over etcd (--endpoints), against etcdctl lock', () => {
  const f = fixture();

  describe('locklens acquire: queues fairly with etcdctl lock', () => {
    test('locklens queued behind an etcdctl holder runs only after it', async () => {
      const gate = join(f.dir, 'gate');
      const file = join(f.dir, 'out');
      const holder = await f.etcdctlLock('order-a', ['sh', '-c', WAIT_THEN_APPEND, 'sh', gate, file, 'A']);
      const envFile = join(f.dir, 'env');
      const waiter = f.procs.locklens(['acquire', 'order-a', '--endpoints', f.ep, '--', 'sh', '-c', 'echo B >> "$1"; echo "$ETCD_LOCK_KEY $ETCD_LOCK_REV $LOCKLENS_FENCING_TOKEN" > "$2"', 'sh', file, envFile]);
      const queued = await f.keyCount('order-a/', 2, [waiter]);
      assert.ok(queued.includes(holder.key), `${queued}`);
      const waiterKey = queued.find((k) => k !== holder.key)!;
      const waiterRev = await f.createRevision(waiterKey);
      assert.equal(existsSync(file), false, 'locklens did not run its command while etcdctl held the lock');
      writeFileSync(gate, '');
      const [h, w] = await Promise.all([holder.proc.wait(), waiter.wait()]);
      assert.equal(h.code, 0, show(h));
      assert.equal(w.code, 0, show(w));
      assert.equal(readFileSync(file, 'utf8'), 'A\nB\n');
      // A command that waited gets the key it queued with, its create revision as the fencing token, and as
      // ETCD_LOCK_REV (as etcdctl sets it) the revision the lock was taken at: there, its key was first in the queue.
      const [key, rev, token] = readFileSync(envFile, 'utf8').trim().split(' ');
      assert.equal(key, waiterKey);
      assert.equal(Number(token), waiterRev);
      assert.ok(Number(rev) > waiterRev, `lock taken at ${rev}, after the key was created at ${waiterRev}`);
      const first = await f.etcd.etcdctl(['get', '--prefix', 'order-a/', `--rev=${rev}`, '--sort-by=CREATE', '--order=ASCEND', '--limit=1', '--keys-only']);
      assert.equal(first.trim(), waiterKey, `at revision ${rev} the waiter's key is first in the queue`);
      assert.deepEqual(await f.keys('order-a/'), []);
    });

    test('etcdctl queued behind a locklens holder runs only after it', async () => {
      const gate = join(f.dir, 'gate');
      const file = join(f.dir, 'out');
      const holder = f.procs.locklens(['acquire', 'order-b', '--endpoints', f.ep, '--', 'sh', '-c', WAIT_THEN_APPEND, 'sh', gate, file, 'A']);
      const [holderKey] = await f.keyCount('order-b/', 1, [holder]);
      await holder.until((p) => p.stderr.includes(`holding ${holderKey}`), 'locklens holds');
      const waiter = await f.etcdctlLock('order-b', ['sh', '-c', 'echo B >> "$1"', 'sh', file]);
      assert.deepEqual(await f.keys('order-b/'), [holderKey, waiter.key].sort());
      assert.equal(existsSync(file), false, 'etcdctl did not run its command while locklens held the lock');
      writeFileSync(gate, '');
      const [h, w] = await Promise.all([holder.wait(), waiter.proc.wait()]);
      assert.equal(h.code, 0, show(h));
      assert.equal(w.code, 0, show(w));
      assert.equal(readFileSync(file, 'utf8'), 'A\nB\n');
      assert.deepEqual(await f.keys('order-b/'), []);
    });
  });

  describe('locklens acquire', () => {
    /** `locklens acquire NAME -- <a 30 s sleep>`, once the command runs; its pid is killed in cleanup whatever happens. */
    async function holdWithSleeper(name: string) {
      const pidFile = join(f.dir, `${name}.pid`);
      const p = f.procs.locklens(['acquire', name, '--endpoints', f.ep, '--', 'sh', '-c', 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 30', 'sh', pidFile]);
      await p.until(() => existsSync(pidFile), 'the command started');
      const childPid = Number(readFileSync(pidFile, 'utf8').trim());
      f.procs.defer(() => {
        try {
          process.kill(childPid, 'SIGKILL');
        } catch {
          // already gone, as it should be
        }
      });
      return { p, childPid };
    }

    test("the command sees ETCD_LOCK_KEY, ETCD_LOCK_REV and LOCKLENS_FENCING_TOKEN; its exit code is locklens's", async () => {
      const gate = join(f.dir, 'gate');
      const envFile = join(f.dir, 'env');
      const script = 'printf "%s %s %s\\n" "$ETCD_LOCK_KEY" "$ETCD_LOCK_REV" "$LOCKLENS_FENCING_TOKEN" > "$2.tmp"; mv "$2.tmp" "$2"; while [ ! -e "$1" ]; do sleep 0.05; done; exit 3';
      const p = f.procs.locklens(['acquire', 'envlock', '--endpoints', f.ep, '--', 'sh', '-c', script, 'sh', gate, envFile]);
      await p.until(() => existsSync(envFile), 'the command ran');
      const [key, rev, token] = readFileSync(envFile, 'utf8').trim().split(' ');
      const lease = HEX_KEY('envlock').exec(key)?.[1];
      assert.ok(lease, `ETCD_LOCK_KEY ${key} is envlock/<hex lease>`);
      assert.match(rev, /^\d+$/);
      assert.equal(token, rev, 'taken at once: the lock was taken at the key\'s creation, so ETCD_LOCK_REV is the fencing token');
      // While the command runs, the key is in etcd with that create revision and a lease of etcdctl's default TTL.
      assert.deepEqual(await f.keys('envlock/'), [key]);
      assert.equal(await f.createRevision(key), Number(rev));
      const ttl = await f.etcd.etcdctl(['lease', 'timetolive', lease]);
      // etcdctl prints lease IDs zero-padded to 16 digits (%016x); lock keys use plain %x.
      assert.match(ttl, new RegExp(`lease 0*${lease} granted with TTL\\(10s\\)`));

      writeFileSync(gate, '');
      const r = await p.wait();
      assert.equal(r.code, 3, show(r));
      assert.ok(r.stderr.includes(`holding ${key} (fencing token ${rev})`), show(r));
      assert.deepEqual(await f.keys('envlock/'), [], 'the key is gone after the command exits');
    });

    test('exit code 0 of the command gives 0; a command that cannot start fails and leaves no key', async () => {
      const ok = await f.procs.run(['acquire', 'codes', '--endpoints', f.ep, '--', 'true']);
      assert.equal(ok.code, 0, show(ok));
      const missing = await f.procs.run(['acquire', 'codes', '--endpoints', f.ep, '--', join(f.dir, 'no-such-program')]);
      assert.notEqual(missing.code, 0, show(missing));
      assert.match(missing.stderr, /no-such-program/, show(missing));
      assert.deepEqual(await f.keys('codes/'), []);
    });

    test('--try on a held lock exits 6 and names the holder; --timeout exits 3; neither leaves a key', async () => {
      const holder = await f.etcdctlLock('busy');
      const tried = await f.procs.run(['acquire', 'busy', '--try', '--endpoints', f.ep]);
      assert.equal(tried.code, 6, show(tried));
      assert.ok(tried.stderr.includes(holder.key), show(tried));
      assert.equal(tried.stdout, '', show(tried));
      const timed = await f.procs.run(['acquire', 'busy', '--timeout', '300ms', '--endpoints', f.ep]);
      assert.equal(timed.code, 3, show(timed));
      assert.match(timed.stderr, /not acquired within 300 ms/, show(timed));
      assert.equal(timed.stdout, '', show(timed));
      assert.deepEqual(await f.keys('busy/'), [holder.key], 'only the holder key is left');
      assert.equal(holder.proc.running, true);
    });

    test('bad arguments exit 2: --ttl 0, a bad --timeout, nothing after --, no lock name, --mode (etcd has no read/write locks)', async () => {
      const cases: [string[], RegExp][] = [
        [['acquire', 'argsx', '--mode', 'read'], /etcd has no read\/write locks/],
        [['acquire', 'argsx', '--mode', 'shared'], /--mode shared: read or write/],
        [['acquire', 'argsx', '--ttl', '0'], /--ttl/],
        [['acquire', 'argsx', '--ttl', 'ten'], /--ttl/],
        [['acquire', 'argsx', '--timeout', 'soon'], /--timeout/],
        [['acquire', 'argsx', '--'], /nothing after '--'/],
        [['acquire'], /acquire needs the lock's NAME\nUsage: locklens acquire NAME /],
      ];
      for (const [args, message] of cases) {
        const r = await f.procs.run([args[0], '--endpoints', f.ep, ...args.slice(1)]);
        assert.equal(r.code, 2, `${args.join(' ')}: ${show(r)}`);
        assert.match(r.stderr, message, `${args.join(' ')}: ${show(r)}`);
      }
      assert.deepEqual(await f.keys('argsx/'), []);
    });

    test('without a command it prints the key and fencing token, holds, and releases on SIGINT (exit 130)', async () => {
      const p = f.procs.locklens(['acquire', 'holdme', '--endpoints', f.ep]);
      const [keyLine, tokenLine] = await p.until((q) => (q.lines.length >= 2 ? q.lines : undefined), 'key and token printed');
      assert.match(keyLine, HEX_KEY('holdme'));
      const token = /^fencing token (\d+)$/.exec(tokenLine)?.[1];
      assert.ok(token, tokenLine);
      assert.deepEqual(await f.keys('holdme/'), [keyLine]);
      assert.equal(await f.createRevision(keyLine), Number(token));
      // Another acquirer is blocked while it holds.
      const tried = await f.procs.run(['acquire', 'holdme', '--try', '--endpoints', f.ep]);
      assert.equal(tried.code, 6, show(tried));
      p.signal('SIGINT');
      const r = await p.wait();
      assert.equal(r.code, 130, show(r));
      assert.deepEqual(await f.keys('holdme/'), [], 'released');
    });

    test('SIGINT while waiting in the queue exits 130 and removes its waiting key', async () => {
      const holder = await f.etcdctlLock('queued');
      const p = f.procs.locklens(['acquire', 'queued', '--endpoints', f.ep]);
      const keys = await f.keyCount('queued/', 2, [p]);
      const mine = keys.find((k) => k !== holder.key);
      assert.ok(mine);
      assert.equal(p.stdout, '', 'not holding yet');
      p.signal('SIGINT');
      const r = await p.wait();
      assert.equal(r.code, 130, show(r));
      assert.equal(r.stdout, '', show(r));
      assert.deepEqual(await f.keys('queued/'), [holder.key], 'its waiting key is gone, the holder stays');
      assert.equal(holder.proc.running, true);
    });

    test('a lock lost while the command runs: exit 7, the command is terminated', async () => {
      const { p, childPid } = await holdWithSleeper('lostlock');
      const [key] = await f.keys('lostlock/');
      const lease = HEX_KEY('lostlock').exec(key)?.[1];
      assert.ok(lease, key);
      await f.etcd.etcdctl(['lease', 'revoke', lease]);
      const r = await p.wait();
      assert.equal(r.code, 7, show(r));
      assert.ok(r.stderr.includes(key), show(r));
      assert.throws(() => process.kill(childPid, 0), { code: 'ESRCH' }, 'the command was terminated');
    });
    test('SIGTERM while the command runs: the command is terminated, the lock released, exit 130', async () => {
      const { p, childPid } = await holdWithSleeper('termlock');
      assert.equal((await f.keys('termlock/')).length, 1);
      p.signal('SIGTERM');
      const r = await p.wait();
      assert.equal(r.code, 130, show(r));
      assert.throws(() => process.kill(childPid, 0), { code: 'ESRCH' }, 'the command was terminated');
      assert.deepEqual(await f.keys('termlock/'), []);
    });

    test('a lock lost while holding without a command: exit 7', async () => {
      const p = f.procs.locklens(['acquire', 'lostbare', '--endpoints', f.ep]);
      const key = await p.until((q) => q.lines[0], 'the key is printed');
      await f.etcd.etcdctl(['lease', 'revoke', HEX_KEY('lostbare').exec(key)![1]]);
      const r = await p.wait();
      assert.equal(r.code, 7, show(r));
      assert.ok(r.stderr.includes(key), show(r));
    });

    test('--try on a free lock takes it and runs the command; --ttl sets the lease TTL', async () => {
      const envFile = join(f.dir, 'key');
      const r = await f.procs.run(['acquire', 'trylock', '--try', '--ttl', '7', '--endpoints', f.ep, '--', 'sh', '-c', 'etcdctl --endpoints="$1" lease timetolive "${ETCD_LOCK_KEY#trylock/}" > "$2"', 'sh', f.ep, envFile]);
      assert.equal(r.code, 0, show(r));
      assert.match(readFileSync(envFile, 'utf8'), /granted with TTL\(7s\)/);
      assert.deepEqual(await f.keys('trylock/'), []);
    });

    test('a command that gives up waiting never runs: --timeout (exit 3) and SIGINT in the queue (exit 130)', async () => {
      const holder = await f.etcdctlLock('never');
      const file = join(f.dir, 'ran');
      const marker = `never-${process.pid}-${Date.now()}`;
      const command = ['--', 'sh', '-c', 'echo ran >> "$1"', marker, file];
      const timed = await f.procs.run(['acquire', 'never', '--timeout', '300ms', '--endpoints', f.ep, ...command]);
      assert.equal(timed.code, 3, show(timed));
      const queued = f.procs.locklens(['acquire', 'never', '--endpoints', f.ep, ...command]);
      await f.keyCount('never/', 2, [queued]);
      queued.signal('SIGINT');
      const r = await queued.wait();
      assert.equal(r.code, 130, show(r));
      assert.equal(existsSync(file), false, 'the command did not run');
      assert.deepEqual(processesWith(marker), [], 'no process of the command is left');
      assert.deepEqual(await f.keys('never/'), [holder.key]);
    });

    test('a locklens killed (SIGKILL) while queued: its command never runs', async () => {
      const gate = join(f.dir, 'gate');
      const file = join(f.dir, 'out');
      const marker = `killed-${process.pid}-${Date.now()}`;
      const holder = await f.etcdctlLock('killq', ['sh', '-c', WAIT_THEN_APPEND, 'sh', gate, file, 'A']);
      const queued = f.procs.locklens(['acquire', 'killq', '--endpoints', f.ep, '--', 'sh', '-c', 'echo B >> "$1"', marker, file]);
      await f.keyCount('killq/', 2, [queued]);
      queued.signal('SIGKILL'); // only locklens: whatever it started stays in the process group, on its own
      await queued.wait();
      // With locklens gone, anything it started for the command must end without running it.
      await eventually(() => processesWith(marker).length === 0, 20_000, 'the command\'s processes are gone');
      writeFileSync(gate, '');
      const h = await holder.proc.wait();
      assert.equal(h.code, 0, show(h));
      assert.equal(readFileSync(file, 'utf8'), 'A\n', 'only the holder wrote');
    });

    test('a lock name with a trailing slash queues with etcdctl on the same name', async () => {
      const holder = await f.etcdctlLock('slashy/');
      assert.match(holder.key, /^slashy\/\/[0-9a-f]+$/);
      const tried = await f.procs.run(['acquire', 'slashy/', '--try', '--endpoints', f.ep]);
      assert.equal(tried.code, 6, show(tried));
      assert.ok(tried.stderr.includes(holder.key), show(tried));
    });
  });
});

describe('locklens over Redis (--url), against redis-py and Redisson layouts', () => {
  const f = redisCli();
  const { url, peer } = f;

  test('locklens acquire -- CMD excludes redis-py both ways and releases when CMD exits', async () => {
    const log = join(f.dir, 'order');
    // redis-py holds; locklens waits, and its command runs only after redis-py released.
    const py = peer('app:job', 'hold');
    await py.until(['acquired']);
    const ours = f.procs.locklens(['acquire', 'app:job', '--url', url(), '--ttl', '10', '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', join(f.dir, 'go'), 'locklens-end']);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(existsSync(log), false, 'locklens did not run its command while redis-py held the lock');
    writeFileSync(log, 'py-released\n');
    py.release();
    await py.until(['released']);
    await eventuallyTrue(() => readFileSync(log, 'utf8').includes('locklens-start'), 15_000, 'locklens runs its command once redis-py released');

    // locklens holds; redis-py's try fails, its blocking acquire waits until locklens's command exits.
    const tryPeer = peer('app:job', 'try');
    assert.equal(await tryPeer.until(['busy', 'acquired']), 'busy', 'redis-py cannot take it while locklens holds');
    const waiter = peer('app:job', 'hold');
    await waiter.until(['waiting']);
    writeFileSync(join(f.dir, 'go'), '');
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    await waiter.until(['acquired']);
    assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['py-released', 'locklens-start', 'locklens-end']);
    waiter.release();
    await waiter.until(['released']);
  });

  test('locklens acquire --mode read shares a Redisson read/write lock with its readers, --mode write waits for every reader; without --mode it exits 2', async () => {
    const redisson = FakeRedisson.connect(url());
    f.procs.defer(() => redisson.dispose());
    const name = 'app:report';
    const fields = () => redisson.client.hgetall(name);
    assert.equal(await redisson.readLock(name, 1, 60_000), null);
    const plain = await f.procs.run(['acquire', name, '--url', url()]);
    assert.equal(plain.code, 2, show(plain));
    assert.match(plain.stderr, /app:report is a Redisson read\/write lock: choose read or write/, show(plain));

    // Our reader runs at once beside Redisson's; a Redisson writer is refused (its script answers a PTTL).
    const log = join(f.dir, 'order');
    const reader = f.procs.locklens(['acquire', name, '--url', url(), '--mode', 'read', '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'read-start', join(f.dir, 'read-go'), 'read-end']);
    await eventuallyTrue(() => existsSync(log) && readFileSync(log, 'utf8').includes('read-start'), 15_000, "the reader's command runs");
    const readers = Object.keys(await fields()).filter((f) => f !== 'mode');
    assert.equal(readers.length, 2, JSON.stringify(readers));
    assert.notEqual(await redisson.writeLock(name, 2), null, 'a Redisson writer waits for the readers');

    // Our writer waits for both readers: ours ending is not enough, Redisson's last unlock (and its publish) lets it in.
    const writer = f.procs.locklens(['acquire', name, '--url', url(), '--mode', 'write', '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'write-start', join(f.dir, 'write-go'), 'write-end']);
    writeFileSync(join(f.dir, 'read-go'), '');
    const read = await reader.wait();
    assert.equal(read.code, 0, show(read));
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(!readFileSync(log, 'utf8').includes('write-start'), "the writer waits while Redisson's reader holds");
    appendFileSync(log, 'redisson-read-unlock\n');
    assert.equal(await redisson.readUnlock(name, 1), 1);
    await eventuallyTrue(() => readFileSync(log, 'utf8').includes('write-start'), 15_000, "the writer's command runs");
    const held = Object.keys(await fields());
    assert.ok(held.includes('mode') && held.length === 2 && held.some((f) => /^[0-9a-f-]{36}:\d+:write$/.test(f)), JSON.stringify(held));
    assert.notEqual(await redisson.readLock(name, 1), null, 'a Redisson reader waits for our writer');
    writeFileSync(join(f.dir, 'write-go'), '');
    const write = await writer.wait();
    assert.equal(write.code, 0, show(write));
    assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['read-start', 'read-end', 'redisson-read-unlock', 'write-start', 'write-end']);
    assert.equal(await redisson.writeLock(name, 2), null, 'released: the Redisson writer takes it');
    assert.equal(await redisson.writeUnlock(name, 2), 1);
  });

  test('locklens acquire semaphore:KEY --permits N waits while redis-semaphore holds every permit, and runs once one is given back', async () => {
    const client = new Redis(url(), { protocol: 2 });
    f.procs.defer(() => client.disconnect());
    const peers = [0, 1].map(() => new Semaphore(client, 'cli', 2, { acquireTimeout: 60_000 }));
    for (const p of peers) await p.acquire();
    f.procs.defer(() => Promise.all(peers.map((p) => p.release())));
    const listed = await f.procs.run(['list', '--url', url(), '--prefix', 'semaphore:', '--json']);
    const lock = (JSON.parse(listed.stdout) as { locks: LockJson[] }).locks.find((l) => l.name === 'semaphore:cli');
    assert.equal(lock?.kind, 'semaphore', show(listed));
    assert.deepEqual(lock.permits, { limit: null, free: null, holdersRecorded: true });
    assert.deepEqual(lock.holders?.map((h) => h.owner).sort(), peers.map((p) => p.identifier).sort());
    const busy = await f.procs.run(['acquire', 'semaphore:cli', '--permits', '2', '--try', '--url', url()]);
    assert.equal(busy.code, 6, show(busy));
    assert.match(busy.stderr, /all 2 permits of semaphore:cli are held/, show(busy));

    const log = join(f.dir, 'permit');
    const ours = f.procs.locklens(['acquire', 'semaphore:cli', '--permits', '2', '--url', url(), '--', 'sh', '-c', 'echo command >> "$1"', 'sh', log]);
    writeFileSync(log, 'peer-released\n');
    await peers[0].release();
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['peer-released', 'command']);
    assert.deepEqual(await client.zrange('semaphore:cli', '0', '-1'), [peers[1].identifier], 'our permit given back when the command exited');
  });

  test('locklens acquire --try on a lock redis-py holds exits 6 naming the holder, and leaves the token alone', async () => {
    const py = peer('app:busy', 'hold');
    const token = (await py.until(['acquired'])).split(' ')[1];
    const r = await f.procs.run(['acquire', 'app:busy', '--try', '--url', url()]);
    assert.equal(r.code, 6, show(r));
    assert.match(r.stderr, new RegExp(token), show(r));
    assert.equal(await f.server.cli(['GET', 'app:busy']), token);
  });
});

describe('locklens over ZooKeeper (--url zookeeper://), against kazoo and Curator layouts', { timeout: 180_000 }, () => {
  const f = zookeeperCli();
  const { url, kazoo, session, list, listed } = f;

  test("locklens acquire -- CMD excludes kazoo both ways, in kazoo's layout: the order is the one the processes wrote", async () => {
    const name = '/both/job';
    const log = join(f.dir, 'order');
    const go = join(f.dir, 'go');
    // kazoo holds; locklens queues behind it and its command waits.
    const first = kazoo(name, { identifier: 'kazoo-first', log });
    await first.until(['acquired']);
    const ours = f.procs.locklens(['acquire', name, '--url', url(), '--ttl', '2', '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', go, 'locklens-end']);
    const queued = await listed(name, (l) => l.waiters.length === 1, 'locklens queued behind kazoo');
    assert.match(queued.waiters[0].key, /\/[0-9a-f]{32}__lock__\d{10}$/, "kazoo's layout, so kazoo counts it");
    assert.match(queued.waiters[0].data!, /^LockLens .* pid \d+$/);
    assert.deepEqual(linesOf(log), ['kazoo-first acquired'], 'nothing ran while kazoo held');
    first.release();
    await eventually(() => linesOf(log).includes('locklens-start'), 15_000, 'locklens runs its command once kazoo released');

    // locklens holds: kazoo's try fails, its blocking acquire waits until the command has exited.
    assert.equal(await kazoo(name, { mode: 'try' }).until(['busy', 'acquired']), 'busy');
    const second = kazoo(name, { identifier: 'kazoo-second', log });
    await second.until(['waiting']);
    await listed(name, (l) => l.waiters[0]?.data === 'kazoo-second', 'kazoo queued behind locklens');
    writeFileSync(go, '');
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    assert.match(r.stderr, /^locklens: holding \/both\/job\/[0-9a-f]{32}__lock__\d{10} \(fencing token \d+\)$/m, show(r));
    await second.until(['acquired']);
    assert.deepEqual(linesOf(log), ['kazoo-first acquired', 'kazoo-first releasing', 'locklens-start', 'locklens-end', 'kazoo-second acquired']);
    assert.deepEqual(await second.contenders(), ['kazoo-second'], 'kazoo found the node of locklens gone');
  });

  test("acquire --try exits 6 naming the holder (kazoo's identifier, Curator's IP) and leaves nothing; a Curator lock is joined in Curator's layout", async () => {
    const job = '/try/job';
    const holder = kazoo(job, { identifier: 'busy-worker' });
    const node = (await holder.until(['acquired'])).split(' ')[1];
    const busy = await f.procs.run(['acquire', job, '--try', '--url', url()]);
    assert.equal(busy.code, 6, show(busy));
    assert.match(busy.stderr, new RegExp(`${job} is held by ${node} \\(busy-worker\\)`), show(busy));
    assert.deepEqual((await list(job))[0].waiters, [], 'the try left no node behind');

    const ledger = '/try/ledger';
    const curator = await session();
    await curator.mkdirp(ledger);
    await curator.create(curatorPrefix(ledger), Buffer.from('10.0.0.7'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
    const tried = await f.procs.run(['acquire', ledger, '--try', '--url', url()]);
    assert.equal(tried.code, 6, show(tried));
    assert.match(tried.stderr, /held by _c_[0-9a-f-]{36}-lock-\d{10} \(10\.0\.0\.7\)/, show(tried));

    const env = join(f.dir, 'env');
    const ours = f.procs.locklens(['acquire', ledger, '--url', url(), '--', 'sh', '-c', 'echo "$ETCD_LOCK_KEY $LOCKLENS_FENCING_TOKEN ${ETCD_LOCK_REV-none}" > "$1"', 'sh', env]);
    const queued = (await listed(ledger, (l) => l.waiters.length === 1, "locklens queued behind Curator's holder")).waiters[0];
    assert.match(queued.key, new RegExp(`^${ledger}/_c_[0-9a-f-]{36}-lock-\\d{10}$`));
    assert.equal(queued.convention, 'curator-mutex');
    await curator.close();
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    assert.equal(readFileSync(env, 'utf8').trim(), `${queued.key} ${queued.token} none`, 'the node, its czxid as the fencing token, no revision');
  });

  test('a locklens holder whose node is force-released says it lost the lock (exit 7) and stops its command', async () => {
    const name = '/unlock/ours';
    const log = join(f.dir, 'log');
    const command = 'trap \'echo stopped >> "$1"; exit 143\' TERM; echo started >> "$1"; while :; do sleep 0.05; done';
    const ours = f.procs.locklens(['acquire', name, '--ttl', '2', '--url', url(), '--', 'sh', '-c', command, 'sh', log]);
    await eventually(() => linesOf(log).includes('started'), 15_000, 'the command runs');
    const r = await f.procs.run(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    const lost = await ours.wait();
    assert.equal(lost.code, 7, show(lost));
    assert.match(lost.stderr, /lost \/unlock\/ours: its node was deleted/, show(lost));
    assert.deepEqual(linesOf(log), ['started', 'stopped']);
  });

  test('acquire --mode read shares a kazoo ReadLock, --mode write is refused by it, no --mode exits 2; --ttl applies to a reader', async () => {
    const name = '/rw/catalog';
    const reader = kazoo(name, { kind: 'read', identifier: 'kazoo-reader' });
    await reader.until(['acquired']);
    const plain = await f.procs.run(['acquire', name, '--try', '--url', url()]);
    assert.equal(plain.code, 2, show(plain));
    assert.match(plain.stderr, /\/rw\/catalog is a kazoo read\/write lock: choose read or write/, show(plain));
    const key = join(f.dir, 'key');
    const read = await f.procs.run(['acquire', name, '--mode', 'read', '--ttl', '2', '--try', '--url', url(), '--', 'sh', '-c', 'echo "$ETCD_LOCK_KEY" > "$1"', 'sh', key]);
    assert.equal(read.code, 0, show(read));
    assert.match(readFileSync(key, 'utf8'), /^\/rw\/catalog\/[0-9a-f]{32}__rlock__\d{10}$/m, "kazoo's read node");
    assert.doesNotMatch(read.stderr, /Redisson|does not apply/, "the reader's session timeout is its --ttl");
    const write = await f.procs.run(['acquire', name, '--mode', 'write', '--try', '--url', url()]);
    assert.equal(write.code, 6, show(write));
  });

  test('--ttl is the session timeout: a locklens killed while holding frees the lock when its session expires', async () => {
    const name = '/ttl/job';
    const ours = f.procs.locklens(['acquire', name, '--ttl', '1', '--url', url()]);
    const [key] = await ours.until((p) => (p.lines.length >= 2 ? p.lines : undefined), 'the key and token printed');
    const waiter = kazoo(name, { identifier: 'after-crash' });
    await waiter.until(['waiting']);
    await listed(name, (l) => l.holder?.key === key && l.waiters.length === 1, 'kazoo queued behind locklens');
    await ours.kill();
    await waiter.until(['acquired'], 10_000);
    assert.deepEqual(await waiter.contenders(), ['after-crash']);
  });

  test("locklens acquire -- CMD on a kazoo Semaphore takes one permit, by the limit kazoo stored: kazoo counts it both ways", async () => {
    const name = '/sem/pool';
    const semaphore = (identifier: string, mode: 'hold' | 'try' = 'hold') => f.kazooSemaphore(name, { identifier, maxLeases: 2, mode });
    const first = semaphore('kazoo-first');
    await first.until(['acquired']);
    const go = join(f.dir, 'go');
    const log = join(f.dir, 'order');
    const ours = f.procs.locklens(['acquire', name, '--url', url(), '--ttl', '4', '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', go, 'locklens-end']);
    await eventually(() => linesOf(log).includes('locklens-start'), 15_000, 'locklens runs its command on the second permit');
    const held = await listed(name, (l) => l.kind === 'semaphore' && l.holder !== null && (l.sharedWith?.length ?? 0) === 1, 'two permits held');
    assert.deepEqual([held.holder!, ...held.sharedWith!].map((m) => m.convention), ['kazoo-semaphore', 'kazoo-semaphore']);
    assert.equal(await semaphore('kazoo-try', 'try').until(['busy', 'acquired']), 'busy', 'both permits are taken');
    const waiter = semaphore('kazoo-waiter');
    await waiter.until(['waiting']);
    await listed(name, (l) => l.waiters.length === 1, 'kazoo waits for a permit');
    writeFileSync(go, '');
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    assert.match(r.stderr, /^locklens: holding \/sem\/pool\/[0-9a-f]{32} \(fencing token \d+\)$/m, show(r));
    await waiter.until(['acquired']);
    assert.deepEqual(await waiter.holders(), ['kazoo-first', 'kazoo-waiter'], "kazoo found the permit of locklens given back");
  });
});

describe('locklens over PostgreSQL (--url postgres://), against psycopg2 sessions and lock tables', { timeout: 300_000 }, () => {
  const f = postgresCli();
  const { fresh, url, cli, start, psycopg, lockNamed, listed } = f;

  test('locklens acquire -- CMD excludes psycopg2 both ways: the order is the one the processes wrote', async () => {
    const key = fresh();
    const log = join(f.dir, 'order');
    const go = join(f.dir, 'go');
    // psycopg2 holds; locklens queues behind it in pg_advisory_lock and its command waits.
    const first = psycopg(key, { application: 'psycopg-first' });
    await first.until(['acquired']);
    appendFileSync(log, 'psycopg-first acquired\n');
    const ours = start(['acquire', key, '--url', url(), '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', go, 'locklens-end']);
    const queued = (await listed(key, (l) => l.waiters.length === 1, 'locklens queued behind psycopg2')).waiters[0];
    assert.equal(queued.session?.application, 'LockLens', 'its session says what it is');
    assert.match(queued.session?.query ?? '', /pg_advisory_lock/);
    assert.deepEqual(linesOf(log), ['psycopg-first acquired'], 'nothing ran while psycopg2 held');
    appendFileSync(log, 'psycopg-first releasing\n');
    first.release();
    await first.until(['released']);
    await eventually(() => linesOf(log).includes('locklens-start'), 15_000, 'locklens runs its command once psycopg2 released');

    // locklens holds: psycopg2's try is refused, its blocking lock waits until the command has exited.
    assert.equal(await psycopg(key, { mode: 'try' }).until(['busy', 'acquired']), 'busy');
    const second = psycopg(key, { application: 'psycopg-second' });
    const secondPid = String(await second.pid());
    await listed(key, (l) => l.holder?.owner === queued.owner && l.waiters[0]?.owner === secondPid, 'psycopg2 queued behind locklens');
    writeFileSync(go, '');
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    assert.match(r.stderr, new RegExp(`^locklens: holding pid ${queued.owner} \\(no fencing token \\(this store has none\\)\\)$`, 'm'), show(r));
    await second.until(['acquired']);
    appendFileSync(log, 'psycopg-second acquired\n');
    assert.deepEqual(linesOf(log), ['psycopg-first acquired', 'psycopg-first releasing', 'locklens-start', 'locklens-end', 'psycopg-second acquired']);
  });

  test("acquire --try exits 6 naming psycopg2's session and leaves nothing waiting; an int pair 1:2 is its own lock; bad key text exits 2", async () => {
    const key = fresh();
    const holder = psycopg(key, { application: 'busy-worker' });
    const pid = await holder.pid();
    await holder.until(['acquired']);
    const busy = await cli(['acquire', key, '--try', '--url', url()]);
    assert.equal(busy.code, 6, show(busy));
    assert.match(busy.stderr, new RegExp(`^locklens: ${key} is held by session pid ${pid} \\(application "busy-worker", role postgres, from 127\\.0\\.0\\.1:\\d+, connected at [^,]+, last ran "SELECT pg_advisory_lock\\(${key}\\)"\\)\\n$`), show(busy));
    assert.deepEqual((await lockNamed(key))?.waiters, [], 'the try left nothing waiting');

    // pg_advisory_lock(1, 2) and the bigint with the same bits (1 << 32 | 2) are two locks.
    const pair = psycopg('1:2', { application: 'pair-holder' });
    const pairPid = String(await pair.pid());
    await pair.until(['acquired']);
    const listedPair = await listed('1:2', (l) => l.holder !== null, 'the pair listed');
    assert.equal(listedPair.altName, undefined, 'a pair has no other name');
    assert.equal(listedPair.holder?.owner, pairPid);
    assert.match(listedPair.holder?.session?.query ?? '', /pg_advisory_lock\(1, 2\)/);
    const pairBusy = await cli(['acquire', '1:2', '--try', '--url', url()]);
    assert.equal(pairBusy.code, 6, show(pairBusy));
    assert.match(pairBusy.stderr, new RegExp(`1:2 is held by session pid ${pairPid} \\(application "pair-holder", role postgres`), show(pairBusy));
    const sameBits = await cli(['acquire', String((1n << 32n) | 2n), '--try', '--url', url(), '--', 'true']);
    assert.equal(sameBits.code, 0, show(sameBits));
    pair.release();
    await pair.until(['released']);
    const env = join(f.dir, 'env');
    const ours = start(['acquire', '1:2', '--url', url(), '--', 'sh', '-c', 'echo "$ETCD_LOCK_KEY ${LOCKLENS_FENCING_TOKEN-none}" > "$1"; while [ ! -e "$2" ]; do sleep 0.02; done', 'sh', env, join(f.dir, 'go')]);
    await eventually(() => existsSync(env), 15_000, 'the command runs holding 1:2');
    assert.equal(await psycopg('1:2', { mode: 'try' }).until(['busy', 'acquired']), 'busy', 'psycopg2 cannot take 1:2 while locklens holds it');
    const holding = (await lockNamed('1:2'))!.holder!;
    assert.equal(readFileSync(env, 'utf8').trim(), `${holding.key} none`, 'the holding session, no fencing token');
    writeFileSync(join(f.dir, 'go'), '');
    assert.equal((await ours.wait()).code, 0);

    for (const text of ['orders', '1:2:3', '99999999999999999999', '4294967296:1']) {
      const r = await cli(['acquire', text, '--try', '--url', url()]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, new RegExp(`^locklens: '${text}' is not a PostgreSQL advisory lock key: .* \\(write a bigint such as 42 or -7, or an int pair such as 1:2\\)\\n$`), show(r));
    }
  });
});

describe('locklens over MariaDB (--url mysql://), against PyMySQL connections and lock tables', { timeout: 300_000 }, () => {
  const f = mariadbCli();
  const { fresh, url, start, pymysql, listed } = f;

  test('locklens acquire -- CMD excludes PyMySQL both ways: the order is the one the processes wrote', async () => {
    const name = fresh('job');
    const log = join(f.dir, 'order');
    const go = join(f.dir, 'go');
    // PyMySQL holds; locklens waits in GET_LOCK and its command waits.
    const first = pymysql(name, { identifier: 'pymysql-first', log });
    await first.until(['acquired']);
    const ours = start(['acquire', name, '--url', url(), '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', go, 'locklens-end']);
    const queued = (await listed(name, (l) => l.waiters.length === 1, 'locklens queued behind PyMySQL')).waiters[0];
    assert.match(queued.session?.query ?? '', /GET_LOCK/);
    assert.deepEqual(linesOf(log), ['pymysql-first acquired'], 'nothing ran while PyMySQL held');
    first.release();
    assert.equal(await first.until(['released']), 'released 1');
    await eventually(() => linesOf(log).includes('locklens-start'), 15_000, 'locklens runs its command once PyMySQL released');

    // locklens holds: PyMySQL's try is refused, its blocking GET_LOCK waits until the command has exited.
    assert.equal(await pymysql(name, { mode: 'try' }).until(['busy', 'acquired']), 'busy');
    const second = pymysql(name, { identifier: 'pymysql-second', log });
    const secondId = await second.connectionId();
    await listed(name, (l) => l.holder?.owner === queued.owner && l.waiters[0]?.owner === secondId, 'PyMySQL queued behind locklens');
    writeFileSync(go, '');
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    assert.match(r.stderr, new RegExp(`^locklens: holding connection ${queued.owner} \\(no fencing token \\(this store has none\\)\\)$`, 'm'), show(r));
    await second.until(['acquired']);
    assert.deepEqual(linesOf(log), ['pymysql-first acquired', 'pymysql-first releasing', 'locklens-start', 'locklens-end', 'pymysql-second acquired']);
  });
});

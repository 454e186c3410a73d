import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, HEX_KEY, WAIT_THEN_APPEND, type EntryJson, type ListJson, type LockJson } from '../harness/cliFixture';
import { eventually } from '../harness/etcd';
import { freePort } from '../harness/ports';
import { show, type Result } from '../harness/cli';
import { EtcdConnection } from '../../src/core/etcd/connect';

/**
 * Black-box tests of the `locklens` command line (dist/locklens.js) against real etcd servers, side by side with
 * real `etcdctl lock` / `etcdctl elect` processes. Order and content only: no wall-clock assertions.
 */

const ENTRY_KEYS = ['convention', 'createRevision', 'holds', 'key', 'lease', 'owner', 'token', 'ttl'];
const LOCK_KEYS = ['holder', 'kind', 'name', 'waiters'];
const sorted = (o: object) => Object.keys(o).sort();

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

function assertEntryShape(e: EntryJson, what: string): void {
  assert.deepEqual(sorted(e), ENTRY_KEYS, `${what}: keys of an entry`);
  assert.equal(typeof e.key, 'string');
  assert.equal(typeof e.lease, 'string');
  assert.ok(Number.isInteger(e.createRevision) && e.createRevision > 0, `${what}: createRevision ${e.createRevision}`);
  // The fields every store shares: in etcd the owner is the lease and the fencing token the create revision.
  assert.equal(e.owner, e.lease, `${what}: owner is the lease`);
  assert.equal(e.token, e.createRevision, `${what}: token is the create revision`);
  assert.equal(e.holds, null, `${what}: etcd locks are not re-entrant counts`);
}

describe('locklens list: the acceptance case (three etcdctl lock processes on one name)', () => {
  const f = fixture();

  test('list --json shows etcdctl\'s holder and its two waiters in start order, with leases, revisions and TTLs', async () => {
    const first = await f.etcdctlLock('jobs');
    // The holder prints its key once it holds: the same key as the one that appeared in etcd.
    const printed = await first.proc.until((p) => p.lines[0], 'etcdctl prints the key it holds');
    assert.equal(printed, first.key);
    const second = await f.etcdctlLock('jobs');
    const third = await f.etcdctlLock('jobs');
    assert.equal(second.proc.lines.length, 0, 'the second etcdctl waits');
    assert.equal(third.proc.lines.length, 0, 'the third etcdctl waits');

    const r = await f.procs.run(['list', '--endpoints', f.ep, '--prefix', 'jobs', '--json']);
    assert.equal(r.code, 0, show(r));
    const doc = JSON.parse(r.stdout) as ListJson;
    assert.deepEqual(sorted(doc), ['locks', 'revision']);
    assert.equal(doc.locks.length, 1, r.stdout);
    const [lock] = doc.locks;
    assert.deepEqual(sorted(lock), LOCK_KEYS);
    assert.equal(lock.name, 'jobs');
    assert.equal(lock.kind, 'queue');
    assert.ok(lock.holder, 'a holder');
    assert.equal(lock.holder.key, first.key);
    assert.deepEqual(lock.waiters.map((w) => w.key), [second.key, third.key]);

    const entries = [lock.holder, ...lock.waiters];
    for (const [i, e] of entries.entries()) {
      assertEntryShape(e, `entry ${i}`);
      assert.equal(e.convention, 'go-mutex', `entry ${i}: etcdctl lock writes the Go Mutex layout`);
      assert.equal(e.lease, HEX_KEY('jobs').exec(e.key)?.[1], `entry ${i}: lease is the key's hex suffix`);
      assert.equal(e.createRevision, await f.createRevision(e.key), `entry ${i}: createRevision is etcd's`);
      assert.equal(typeof e.ttl, 'number');
      assert.ok(e.ttl! >= 0 && e.ttl! <= 10, `entry ${i}: ttl ${e.ttl} within etcdctl lock's default 10 s`);
    }
    assert.ok(entries[0].createRevision < entries[1].createRevision && entries[1].createRevision < entries[2].createRevision, 'createRevision ascending');
    assert.ok(Number.isInteger(doc.revision) && doc.revision >= entries[2].createRevision, `revision ${doc.revision}`);
  });
});

describe('locklens list', () => {
  const f = fixture();

  test('human output names the holder and the waiters in queue order', async () => {
    const holder = await f.etcdctlLock('human');
    const w1 = await f.etcdctlLock('human');
    const w2 = await f.etcdctlLock('human');
    const r = await f.procs.run(['list', '--endpoints', f.ep, '--prefix', 'human']);
    assert.equal(r.code, 0, show(r));
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0], /^human {2}\(queue, 2 waiting\)$/, r.stdout);
    const lease = (k: string) => HEX_KEY('human').exec(k)![1];
    assert.match(lines[1], new RegExp(`^\\s+holder\\s+${holder.key}\\s+lease ${lease(holder.key)}\\s+token \\d+\\s+ttl \\d+s$`), r.stdout);
    assert.match(lines[2], new RegExp(`^\\s+waiter\\s+${w1.key}\\s+lease ${lease(w1.key)}`), r.stdout);
    assert.match(lines[3], new RegExp(`^\\s+waiter\\s+${w2.key}\\s+lease ${lease(w2.key)}`), r.stdout);
    assert.equal(lines.length, 4, r.stdout);
  });

  test("--prefix '' lists every lock in the keyspace", async () => {
    const a = await f.etcdctlLock('every-a');
    await f.etcd.etcdctl(['put', 'every-b/single', 'x']);
    const doc = await f.list('');
    const byName = new Map(doc.locks.map((l) => [l.name, l]));
    assert.equal(byName.get('every-a')?.holder?.key, a.key, JSON.stringify(doc));
    assert.equal(byName.get('every-a')?.kind, 'queue');
    assert.equal(byName.get('every-b/single')?.kind, 'single', JSON.stringify(doc));
    // An empty result under a prefix says so in plain words.
    const r = await f.procs.run(['list', '--endpoints', f.ep, '--prefix', 'nothing-here']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /no locks under/);
  });

  test('a single-key lock with a lease (/locks/mylock) is kind single', async () => {
    const grant = await f.etcd.etcdctl(['lease', 'grant', '30']);
    const id = /lease ([0-9a-f]+) granted/.exec(grant)?.[1];
    assert.ok(id, grant);
    await f.etcd.etcdctl(['put', `--lease=${id}`, '/locks/mylock', 'locked']);
    const doc = await f.list('/locks/');
    assert.equal(doc.locks.length, 1, JSON.stringify(doc));
    const [lock] = doc.locks;
    assert.deepEqual(sorted(lock), LOCK_KEYS);
    assert.equal(lock.name, '/locks/mylock');
    assert.equal(lock.kind, 'single');
    assert.deepEqual(lock.waiters, []);
    assert.ok(lock.holder);
    assertEntryShape(lock.holder, 'holder');
    assert.equal(lock.holder.key, '/locks/mylock');
    // etcdctl lease grant prints the ID zero-padded to 16 digits (%016x); lock keys and locklens use plain %x.
    assert.match(lock.holder.lease, /^[1-9a-f][0-9a-f]*$/);
    assert.equal(BigInt('0x' + lock.holder.lease), BigInt('0x' + id));
    assert.equal(lock.holder.createRevision, await f.createRevision('/locks/mylock'));
    assert.ok(typeof lock.holder.ttl === 'number' && lock.holder.ttl >= 0 && lock.holder.ttl <= 30, `ttl ${lock.holder.ttl}`);
  });

  test('an etcdctl elect process is kind election with the leader as holder', async () => {
    const leader = f.procs.etcdctl(['elect', 'elec', 'cand1']);
    const leaderKey = await leader.until((p) => (p.lines.length >= 2 ? p.lines[0] : undefined), 'etcdctl elect prints key and proposal');
    assert.match(leaderKey, HEX_KEY('elec'));
    assert.equal(leader.lines[1], 'cand1');
    f.procs.etcdctl(['elect', 'elec', 'cand2']);
    const candidateKey = (await f.keyCount('elec/', 2)).find((k) => k !== leaderKey)!;
    const doc = await f.list('elec');
    assert.equal(doc.locks.length, 1, JSON.stringify(doc));
    const [lock] = doc.locks;
    assert.equal(lock.name, 'elec');
    assert.equal(lock.kind, 'election');
    assert.equal(lock.holder?.key, leaderKey);
    assert.equal(lock.holder?.lease, HEX_KEY('elec').exec(leaderKey)![1]);
    assert.deepEqual(lock.waiters.map((w) => w.key), [candidateKey]);
    const human = await f.procs.run(['list', '--endpoints', f.ep, '--prefix', 'elec']);
    assert.equal(human.code, 0, show(human));
    assert.match(human.stdout, new RegExp(`leader\\s+${leaderKey}`));
    assert.match(human.stdout, new RegExp(`candidate\\s+${candidateKey}`));
  });

  test('a key containing HTML comes back unchanged as text', async () => {
    const key = 'html/<img src=x onerror=alert(1)>';
    await f.etcd.etcdctl(['put', key, 'v']);
    const r = await f.procs.run(['list', '--endpoints', f.ep, '--prefix', 'html/', '--json']);
    assert.equal(r.code, 0, show(r));
    assert.ok(r.stdout.includes(key), `the raw output carries the key literally: ${r.stdout}`);
    const doc = JSON.parse(r.stdout) as ListJson;
    assert.equal(doc.locks.length, 1);
    assert.equal(doc.locks[0].name, key);
    assert.equal(doc.locks[0].holder?.key, key);
    assert.equal(doc.locks[0].holder?.keyBase64, undefined, 'no keyBase64 for a UTF-8 key');
  });

  test('a non-UTF-8 key comes back escaped, with keyBase64 holding the exact bytes', async () => {
    // "bin/" é 0xff "z" 0xfe: a valid two-byte sequence next to invalid bytes.
    const bytes = Buffer.concat([Buffer.from('bin/'), Buffer.from([0xc3, 0xa9, 0xff]), Buffer.from('z'), Buffer.from([0xfe])]);
    const conn = await EtcdConnection.open({ endpoints: [f.ep] });
    try {
      await conn.client.put(bytes).value('v');
    } finally {
      conn.close();
    }
    const doc = await f.list('bin/');
    assert.equal(doc.locks.length, 1, JSON.stringify(doc));
    const [lock] = doc.locks;
    assert.equal(lock.kind, 'single');
    assert.equal(lock.name, 'bin/é\\xffz\\xfe');
    const holder = lock.holder!;
    assert.deepEqual(sorted(holder), [...ENTRY_KEYS, 'keyBase64'].sort());
    assert.equal(holder.key, 'bin/é\\xffz\\xfe');
    assert.equal(holder.keyBase64, bytes.toString('base64'));
    assert.ok(Buffer.from(holder.keyBase64!, 'base64').equals(bytes), 'keyBase64 decodes to the exact bytes');
    assert.equal(holder.lease, '');
    assert.equal(holder.ttl, null);
  });
});

describe('locklens acquire: queues fairly with etcdctl lock', () => {
  const f = fixture();

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
  const f = fixture();

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
      [['acquire'], /wrong number of arguments/],
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

describe('locklens revoke', () => {
  const f = fixture();

  test("revoking a holder's lease deletes its key and the next etcdctl waiter gets the lock", async () => {
    const holder = await f.etcdctlLock('rv');
    await holder.proc.until((p) => p.lines[0], 'holder holds');
    const waiter = await f.etcdctlLock('rv');
    assert.equal(waiter.proc.stdout, '');
    const lease = HEX_KEY('rv').exec(holder.key)![1];
    const r = await f.procs.run(['revoke', lease, '--yes', '--endpoints', f.ep]);
    assert.equal(r.code, 0, show(r));
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0], new RegExp(`^revoked lease ${lease} at revision \\d+; deleted 1 key\\(s\\)$`), r.stdout);
    assert.deepEqual(lines.slice(1).map((l) => l.trim()), [holder.key]);
    const got = await waiter.proc.until((p) => p.lines[0], 'the waiter acquires');
    assert.equal(got, waiter.key);
    assert.deepEqual(await f.keys('rv/'), [waiter.key]);
  });

  test('0x-prefixed and upper-case lease IDs are accepted', async () => {
    const holder = await f.etcdctlLock('rv-hex');
    const lease = HEX_KEY('rv-hex').exec(holder.key)![1];
    const r = await f.procs.run(['revoke', `0x${lease.toUpperCase()}`, '--yes', '--endpoints', f.ep]);
    assert.equal(r.code, 0, show(r));
    assert.ok(r.stdout.includes(holder.key), show(r));
    assert.deepEqual(await f.keys('rv-hex/'), []);
  });

  test('a lease that does not exist exits 8', async () => {
    const grant = await f.etcd.etcdctl(['lease', 'grant', '30']);
    const id = /lease ([0-9a-f]+) granted/.exec(grant)![1];
    await f.etcd.etcdctl(['lease', 'revoke', id]);
    for (const args of [['--yes'], []]) {
      const r = await f.procs.run(['revoke', id, ...args, '--endpoints', f.ep]);
      assert.equal(r.code, 8, `${args.join(' ')}: ${show(r)}`);
      assert.match(r.stderr, /does not exist/, show(r));
    }
  });

  test('a lease holding several keys: all of them are deleted and printed', async () => {
    const grant = await f.etcd.etcdctl(['lease', 'grant', '30']);
    const id = /lease ([0-9a-f]+) granted/.exec(grant)![1];
    await f.etcd.etcdctl(['put', `--lease=${id}`, 'rv-multi/one', 'x']);
    await f.etcd.etcdctl(['put', `--lease=${id}`, 'rv-multi/two', 'x']);
    await f.etcd.etcdctl(['put', 'rv-multi/other', 'x']);
    const r = await f.procs.run(['revoke', id, '--yes', '--endpoints', f.ep]);
    assert.equal(r.code, 0, show(r));
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0], /deleted 2 key\(s\)$/, r.stdout);
    assert.deepEqual(lines.slice(1).map((l) => l.trim()).sort(), ['rv-multi/one', 'rv-multi/two']);
    assert.deepEqual(await f.keys('rv-multi/'), ['rv-multi/other']);
  });

  test('an invalid lease text exits 2', async () => {
    for (const text of ['xyz', '0', '-1', '8000000000000000']) {
      const r = await f.procs.run(['revoke', text, '--yes', '--endpoints', f.ep]);
      assert.equal(r.code, 2, `${text}: ${show(r)}`);
      assert.match(r.stderr, /is not a lease ID|Unknown option/, `${text}: ${show(r)}`);
    }
  });

  test('without --yes and no terminal it refuses (exit 2), says to pass --yes, and revokes nothing', async () => {
    const holder = await f.etcdctlLock('rv-noyes');
    const lease = HEX_KEY('rv-noyes').exec(holder.key)![1];
    const r = await f.procs.run(['revoke', lease, '--endpoints', f.ep], { input: 'y\n' });
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /pass --yes/, show(r));
    assert.deepEqual(await f.keys('rv-noyes/'), [holder.key]);
    assert.equal(holder.proc.running, true);
  });
});

describe('locklens unlock --force (etcd): deletes the stuck holder\'s key, only if it is still the one read', () => {
  const f = fixture();

  test('frees an etcdctl holder: its key goes, its lease lives on, and the next etcdctl waiter holds', async () => {
    const holder = await f.etcdctlLock('ul-jobs');
    const waiter = await f.etcdctlLock('ul-jobs');
    const lease = HEX_KEY('ul-jobs').exec(holder.key)![1];
    const r = await f.procs.run(['unlock', 'ul-jobs', '--force', '--yes', '--endpoints', f.ep]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, new RegExp(`^released 'ul-jobs' from ${holder.key} \\(owner ${lease}\\): deleted the key`), show(r));
    await waiter.proc.until((p) => p.lines[0], 'the waiting etcdctl holds and prints its key');
    assert.deepEqual(await f.keys('ul-jobs/'), [waiter.key]);
    assert.match(await f.etcd.etcdctl(['lease', 'timetolive', lease]), /remaining\(\d+s\)/, 'the holder\'s lease is not revoked');
  });

  test('a single key without a lease (held forever) is deleted too', async () => {
    await f.etcd.etcdctl(['put', 'ul-single', 'stuck']);
    const r = await f.procs.run(['unlock', 'ul-single', '--force', '--yes', '--endpoints', f.ep]);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(await f.keys('ul-single'), []);
  });

  test('without --force it refuses (exit 2); a free or unknown name exits 2; no terminal without --yes refuses', async () => {
    const holder = await f.etcdctlLock('ul-guard');
    for (const [args, message] of [
      [['unlock', 'ul-guard', '--yes'], /pass --force/],
      [['unlock', 'ul-nothing', '--force', '--yes'], /no lock named 'ul-nothing'/],
      [['unlock', 'ul-guard', '--force'], /pass --yes/],
    ] as const) {
      const r = await f.procs.run([...args, '--endpoints', f.ep], { input: 'y\n' });
      assert.equal(r.code, 2, `${args.join(' ')}: ${show(r)}`);
      assert.match(r.stderr, message, show(r));
    }
    assert.deepEqual(await f.keys('ul-guard/'), [holder.key], 'nothing was deleted');
  });
});

describe('locklens watch', () => {
  const f = fixture();

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

describe('locklens: errors and usage', () => {
  const f = fixture();

  async function cli(args: string[]): Promise<Result> {
    return f.procs.run(args);
  }

  test('an unreachable endpoint exits 3 and says the connection was refused', async () => {
    const port = await freePort();
    const r = await cli(['list', '--endpoints', `127.0.0.1:${port}`, '--dial-timeout', '3s']);
    assert.equal(r.code, 3, show(r));
    assert.match(r.stderr, /refused/, show(r));
    assert.equal(r.stdout, '', show(r));
  });

  test('an invalid endpoint exits 2', async () => {
    const r = await cli(['list', '--endpoints', 'nonsense:99999']);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /nonsense:99999/, show(r));
  });

  test('an unknown command exits 2 and names it', async () => {
    const r = await cli(['frobnicate', '--endpoints', f.ep]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /unknown command 'frobnicate'/, show(r));
    assert.match(r.stderr, /Usage: locklens/, show(r));
  });

  test('no arguments exits 2 with the usage on stdout; --help exits 0', async () => {
    const r = await cli([]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stdout, /^Usage: locklens <command>/, show(r));
    for (const name of ['list', 'acquire', 'revoke', 'watch']) assert.match(r.stdout, new RegExp(`^  ${name} `, 'm'));
    const help = await cli(['--help']);
    assert.equal(help.code, 0, show(help));
    assert.equal(help.stdout, r.stdout);
  });

  test('<command> --help exits 0 with that command\'s usage', async () => {
    for (const name of ['list', 'acquire', 'revoke', 'watch']) {
      const r = await cli([name, '--help']);
      assert.equal(r.code, 0, `${name}: ${show(r)}`);
      assert.match(r.stdout, new RegExp(`^Usage: locklens ${name} `), `${name}: ${show(r)}`);
      assert.match(r.stdout, /--endpoints/, `${name}: ${show(r)}`);
    }
  });

  test('an unknown flag or a stray argument exits 2', async () => {
    const r = await cli(['list', '--bogus', '--endpoints', f.ep]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /--bogus/, show(r));
    const stray = await cli(['list', 'stray', '--endpoints', f.ep]);
    assert.equal(stray.code, 2, show(stray));
    assert.match(stray.stderr, /unexpected argument 'stray'/, show(stray));
  });

  test('ETCDCTL_ENDPOINTS is read when --endpoints is not given', async () => {
    await f.etcd.etcdctl(['put', 'envep/key', 'x']);
    const r = await f.procs.run(['list', '--prefix', 'envep/', '--json'], { env: { ETCDCTL_ENDPOINTS: f.ep } });
    assert.equal(r.code, 0, show(r));
    assert.equal((JSON.parse(r.stdout) as ListJson).locks[0]?.name, 'envep/key', show(r));
  });
});

describe('locklens: password auth', () => {
  const f = fixture();

  before(async () => {
    await f.etcd.etcdctl(['user', 'add', 'root:pw']);
    await f.etcd.etcdctl(['auth', 'enable']);
  });

  test('a wrong password exits 4; the right one exits 0', async () => {
    const bad = await f.procs.run(['list', '--endpoints', f.ep, '--user', 'root:bad']);
    assert.equal(bad.code, 4, show(bad));
    assert.match(bad.stderr, /credentials|authentication/i, show(bad));
    assert.equal(bad.stdout, '', show(bad));
    const good = await f.procs.run(['list', '--endpoints', f.ep, '--user', 'root:pw', '--json']);
    assert.equal(good.code, 0, show(good));
    assert.deepEqual(sorted(JSON.parse(good.stdout) as object), ['locks', 'revision']);
  });

  test('the password can come from LOCKLENS_PASSWORD; no user at all exits 4', async () => {
    const env = await f.procs.run(['list', '--endpoints', f.ep, '--user', 'root'], { env: { LOCKLENS_PASSWORD: 'pw' } });
    assert.equal(env.code, 0, show(env));
    const none = await f.procs.run(['list', '--endpoints', f.ep]);
    assert.equal(none.code, 4, show(none));
  });
});

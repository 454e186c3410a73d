import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LockBackend } from '../../src/core/backend';
import { LockOrder } from '../../src/core/diagnosis/inversions';
import { WaitForGraph } from '../../src/core/diagnosis/waitFor';
import { openBackend } from '../../src/core/stores';
import { AcquirePair } from '../harness/acquirePair';
import { CLI, Procs, show } from '../harness/cli';
import { eventually, startEtcd, type EtcdServer } from '../harness/etcd';
import { buildGoPeers, GoPeer } from '../harness/goPeers';
import { scrape, servingUrl, valueOf } from '../harness/serve';

/**
 * `locklens diagnose` and serve's deadlock gauge against a real etcd, with real Go programs (test/peers/go/lockpair:
 * go.etcd.io/etcd/clientv3/concurrency's Mutex on one Session) deadlocked, queued, and taking locks in both orders
 * over time; and LockLens's own acquire: nested across processes (a lease per hold, which the store cannot tie
 * together), and several NAMEs on one lease in opposite orders (a deadlock like the Go programs').
 */

interface DiagnoseJson {
  deadlocks: { members: { owner: string; holds: { lock: string; key: string }; waitsIn: { lock: string } }[]; breaking: { owner: string; lock: string; text: string; command: string }[] }[];
  inversions: unknown[];
  ttlFits: unknown[];
}

describe('diagnose against etcd and Go programs', () => {
  let etcd: EtcdServer;
  let lockpairBinary: string;
  let procs = new Procs('');
  let peers: GoPeer[] = [];
  let backend: LockBackend | undefined;

  before(async () => {
    const [built, server] = await Promise.all([buildGoPeers(['lockpair']), startEtcd()]);
    lockpairBinary = built.lockpair;
    etcd = server;
  });
  beforeEach(() => {
  });
  afterEach(async () => {
    peers.forEach((p) => p.dispose());
    peers = [];
    backend?.close();
    await procs.dispose();
  });
  after(() => etcd?.dispose());

  const lockpair = (first: string, second: string) => {
    const peer = new GoPeer(lockpairBinary, [etcd.url, '5', first, second]);
    peers.push(peer);
    return peer;
  };
  const diagnose = (...args: string[]) => procs.run(['diagnose', '--endpoints', etcd.endpoint, ...args]);
  const leaseOf = (line: string) => line.split(' ')[2];

  /** Two programs, each holding `a` or `b` and then queued for the other; resolves to their leases. */
  async function deadlock(a: string, b: string): Promise<{ p: GoPeer; q: GoPeer; pLease: string; qLease: string }> {
    const [p, q] = [lockpair(a, b), lockpair(b, a)];
    const [pLease, qLease] = (await Promise.all([p.until(`holding ${a}`), q.until(`holding ${b}`)])).map(leaseOf);
    p.next();
    q.next();
    await Promise.all([p.until(`waiting ${b}`), q.until(`waiting ${a}`)]);
    return { p, q, pLease, qLease };
  }

  test("two Go programs each holding one Mutex and waiting for the other's: exit 10, both named; the unlock line printed breaks it", async () => {
    const { p, pLease, qLease } = await deadlock('/locks/a', '/locks/b');
    const found = await eventually(async () => {
      const r = await diagnose('--prefix', '/locks/');
      return r.code === 10 && r;
    }, 20_000, 'the deadlock found');
    assert.match(found.stdout, /^deadlock: 2 owners each wait for a lock another holds \(seen in both reads\)$/m, show(found));
    assert.ok(found.stdout.includes(`  lease ${pLease} holds /locks/a (/locks/a/${pLease}) and waits in /locks/b\n`), show(found));
    assert.ok(found.stdout.includes(`  lease ${qLease} holds /locks/b (/locks/b/${qLease}) and waits in /locks/a\n`), show(found));
    assert.ok(found.stdout.includes(`    force-releasing lease ${qLease}'s hold on /locks/b lets lease ${pLease} take /locks/b\n      locklens unlock /locks/b --force --endpoints ${etcd.endpoint}\n`), show(found));

    const json = await diagnose('--prefix', '/locks/', '--json');
    assert.equal(json.code, 10, show(json));
    const [cycle] = (JSON.parse(json.stdout) as DiagnoseJson).deadlocks;
    assert.deepEqual(cycle.members.map((m) => [m.owner, m.holds.lock, m.waitsIn.lock]).sort(), [[pLease, '/locks/a', '/locks/b'], [qLease, '/locks/b', '/locks/a']].sort());
    const breakB = cycle.breaking.find((c) => c.lock === '/locks/b')!;
    assert.equal(breakB.owner, qLease);
    const [program, ...args] = breakB.command.split(' ');
    assert.equal(program, 'locklens');
    const unlocked = await procs.run([...args, '--yes']);
    assert.equal(unlocked.code, 0, show(unlocked));
    await p.until('holding /locks/b');
    const after = await diagnose('--prefix', '/locks/');
    assert.equal(after.code, 0, show(after));
    assert.match(after.stdout, /^no deadlock among 2 locks \(read twice, 1 s apart\)$/m);
  });

  test('Go programs queued for one lock, and a chain of waits, are no deadlock: exit 0', async () => {
    const holder = lockpair('/queue/q', '/queue/r');
    await holder.until('holding /queue/q');
    const chained = lockpair('/queue/r', '/queue/q');
    await chained.until('holding /queue/r');
    chained.next();
    await chained.until('waiting /queue/q');
    lockpair('/queue/q', '/queue/s');
    await eventually(async () => (await etcd.etcdctl(['get', '--prefix', '/queue/q/', '--keys-only'])).split('\n').filter(Boolean).length === 3, 20_000, 'three in /queue/q');
    const r = await diagnose('--prefix', '/queue/', '--json');
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(JSON.parse(r.stdout), { deadlocks: [], inversions: [], ttlFits: [], truncated: false });
  });

  test('an inversion over time without a deadlock: one program held /inv/a waiting for /inv/b, later another /inv/b waiting for /inv/a', async () => {
    backend = await openBackend({ store: 'etcd', endpoints: [etcd.endpoint] });
    const graph = new WaitForGraph();
    const order = new LockOrder();
    const found: ReturnType<LockOrder['observe']> = [];
    const look = async () => {
      found.push(...order.observe(graph.replace((await backend!.list([Buffer.from('/inv/')])).locks), Date.now()));
      assert.deepEqual(graph.cycles(), [], 'never a deadlock');
    };
    /** A program holding `held` that queues for `wanted` (held by another): resolves to its lease once queued. */
    const holdThenQueue = async (held: string, wanted: string) => {
      const peer = lockpair(held, wanted);
      const lease = leaseOf(await peer.until(`holding ${held}`));
      peer.next();
      await peer.until(`waiting ${wanted}`);
      await eventually(async () => (await backend!.list([Buffer.from(wanted)])).locks[0]?.waiters.length === 1, 10_000, `${wanted} queued`);
      return { peer, lease };
    };
    const other = lockpair('/inv/b', '/inv/z');
    await other.until('holding /inv/b');
    const x = await holdThenQueue('/inv/a', '/inv/b');
    await look();
    other.finish();
    await x.peer.until('holding /inv/b');
    await look();
    x.peer.finish();
    await lockpair('/inv/a', '/inv/z').until('holding /inv/a');
    const y = await holdThenQueue('/inv/b', '/inv/a');
    await look();
    assert.equal(found.length, 1, JSON.stringify(found));
    const [inversion] = found;
    assert.deepEqual([inversion.first.owner, inversion.first.held.name, inversion.first.waitedFor.name], [x.lease, '/inv/a', '/inv/b']);
    assert.deepEqual([inversion.second.owner, inversion.second.held.name, inversion.second.waitedFor.name], [y.lease, '/inv/b', '/inv/a']);
    assert.ok(inversion.first.at < inversion.second.at);
  });

  test("LockLens's own acquire, nested across two processes in opposite orders: each hold has a lease of its own, so nothing ties them and nothing is guessed", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'locklens-diagnose-'));
    procs.defer(() => rmSync(dir, { recursive: true, force: true }));
    const go = join(dir, 'go');
    // The outer acquire holds one lock and runs an inner acquire of the other once both outers hold.
    const nested = (outer: string, inner: string) =>
      procs.locklens(['acquire', outer, '--endpoints', etcd.endpoint, '--', 'sh', '-c', `while [ ! -e ${go} ]; do sleep 0.05; done; exec "${process.execPath}" "${CLI}" acquire ${inner} --endpoints ${etcd.endpoint} -- sleep 60`]);
    const [one, two] = [nested('/own/a', '/own/b'), nested('/own/b', '/own/a')];
    await Promise.all([one.until((p) => p.stderr.includes('holding /own/a'), 'one holds /own/a'), two.until((p) => p.stderr.includes('holding /own/b'), 'two holds /own/b')]);
    writeFileSync(go, '');
    await eventually(async () => (await etcd.etcdctl(['get', '--prefix', '/own/', '--keys-only'])).split('\n').filter(Boolean).length === 4, 20_000, 'both inner acquires queued');
    const r = await diagnose('--prefix', '/own/', '--json');
    assert.equal(r.code, 0, show(r));
    assert.deepEqual((JSON.parse(r.stdout) as DiagnoseJson).deadlocks, []);
  });

  test("two locklens acquire processes, each taking /mine/a and /mine/b on one lease in opposite orders: exit 10, both named; SIGTERM to one lets the other run", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'locklens-diagnose-'));
    procs.defer(() => rmSync(dir, { recursive: true, force: true }));
    const ran = join(dir, 'ran');
    // Each gate is a lock held by a key of the test's own, ahead in its queue.
    await Promise.all(['/gate/one/closed', '/gate/two/closed'].map((key) => etcd.etcdctl(['put', key, ''])));
    const connection = ['--endpoints', etcd.endpoint];
    const [one, two] = [new AcquirePair(procs, connection, '/mine/a', '/gate/one', '/mine/b', ran, 'one'), new AcquirePair(procs, connection, '/mine/b', '/gate/two', '/mine/a', ran, 'two')];
    const [oneLease, twoLease] = await Promise.all([one.holdsFirst(), two.holdsFirst()]);
    await Promise.all(['/gate/one/closed', '/gate/two/closed'].map((key) => etcd.etcdctl(['del', key])));
    await Promise.all([one.waitsForSecond(), two.waitsForSecond()]);

    const found = await eventually(async () => {
      const r = await diagnose('--prefix', '/mine/');
      return r.code === 10 && r;
    }, 20_000, 'the deadlock found');
    assert.ok(found.stdout.includes(`  lease ${oneLease} holds /mine/a (/mine/a/${oneLease}) and waits in /mine/b\n`), show(found));
    assert.ok(found.stdout.includes(`  lease ${twoLease} holds /mine/b (/mine/b/${twoLease}) and waits in /mine/a\n`), show(found));

    two.proc.signal('SIGTERM');
    const [stopped, done] = await Promise.all([two.proc.wait(), one.proc.wait()]);
    assert.equal(stopped.code, 130, show(stopped));
    assert.equal(done.code, 0, show(done));
    assert.equal(readFileSync(ran, 'utf8'), 'one\n', 'the other took both and ran its command; the interrupted one never ran');
    const after = await diagnose('--prefix', '/mine/');
    assert.equal(after.code, 0, show(after));
    assert.equal((await etcd.etcdctl(['get', '--prefix', '/', '--keys-only'])).match(/\/(mine|gate)\//g), null, 'every key released');
  });

  test('serve: locklens_deadlock_cycles is 1 during the Go deadlock (its own inversion not counted twice), and 0 once it is broken', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'locklens-diagnose-serve-'));
    procs.defer(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'serve.yml'), `listen: 127.0.0.1:0\nconnections:\n  - name: go\n    endpoints: [${etcd.url}]\n    prefixes: [/srv/]\n`);
    const serve = procs.locklens(['serve', '--config', join(dir, 'serve.yml')]);
    const base = await servingUrl(serve);
    const gauge = async (name: string) => valueOf(await scrape(base), name, { connection: 'go', store: 'etcd' });
    await eventually(async () => (await gauge('locklens_deadlock_cycles')) === 0, 20_000, 'serve watching, no deadlock');
    const { qLease } = await deadlock('/srv/a', '/srv/b');
    await eventually(async () => (await gauge('locklens_deadlock_cycles')) === 1, 30_000, 'the deadlock counted');
    // The two owners' opposite orders are this deadlock's own: counted as the deadlock, not again as an inversion.
    assert.equal(await gauge('locklens_lock_order_inversions'), 0);
    const unlocked = await procs.run(['unlock', '/srv/b', '--force', '--yes', '--endpoints', etcd.endpoint]);
    assert.ok(unlocked.stdout.includes(qLease), show(unlocked));
    await eventually(async () => (await gauge('locklens_deadlock_cycles')) === 0, 30_000, 'the deadlock gone');
  });
});

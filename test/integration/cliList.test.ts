import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as zookeeper from 'node-zookeeper-client';
import type { EntryJson } from '../../src/cli/lockJson';
import { EtcdConnection } from '../../src/core/etcd/connect';
import { show } from '../harness/cli';
import { fixture, HEX_KEY, LOCK_KEYS, sorted, type EntryJson as EtcdEntryJson, type ListJson } from '../harness/cliFixture';
import { eventually } from '../harness/etcd';
import { ADMIN } from '../harness/mariadb';
import { mariadbCli } from '../harness/mariadbCli';
import { SUPERUSER } from '../harness/postgres';
import { postgresCli } from '../harness/postgresCli';
import { redisCli } from '../harness/redisCli';
import { FakeRedisson } from '../harness/redisson';
import { curatorPrefix, zookeeperCli } from '../harness/zookeeperCli';

/**
 * Black-box tests of `locklens list` (dist/locklens.js) against each store's real server, side by side with the
 * processes and libraries that take its locks: etcdctl lock and elect, redis-py and Redisson, kazoo and Curator's
 * layout, psycopg2, PyMySQL, and lock tables made with their libraries' own statements. Order and content only: no
 * wall-clock assertions.
 */

const ENTRY_KEYS = ['convention', 'createRevision', 'holds', 'key', 'lease', 'liveness', 'owner', 'token', 'ttl'];

/** A SQL member's liveness evidence: its connection is open, which says nothing of a paused client. */
function sqlAlive(client: string | undefined): string {
  return `its database connection is open${client ? ` from ${client}` : ''}; the server cannot tell a paused client from a working one while its connection stays open`;
}

function assertEntryShape(e: EtcdEntryJson, what: string): void {
  assert.deepEqual(sorted(e), ENTRY_KEYS, `${what}: keys of an entry`);
  assert.equal(typeof e.key, 'string');
  assert.equal(typeof e.lease, 'string');
  assert.ok(Number.isInteger(e.createRevision) && e.createRevision > 0, `${what}: createRevision ${e.createRevision}`);
  // The fields every store shares: in etcd the owner is the lease and the fencing token the create revision.
  assert.equal(e.owner, e.lease, `${what}: owner is the lease`);
  assert.equal(e.token, e.createRevision, `${what}: token is the create revision`);
  assert.equal(e.holds, null, `${what}: etcd locks are not re-entrant counts`);
}

describe('locklens over etcd (--endpoints), against etcdctl lock and elect', () => {
  const f = fixture();

  describe('locklens list: the acceptance case (three etcdctl lock processes on one name)', () => {
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
    test('human output names the holder and the waiters in queue order', async () => {
      const holder = await f.etcdctlLock('human');
      const w1 = await f.etcdctlLock('human');
      const w2 = await f.etcdctlLock('human');
      const r = await f.procs.run(['list', '--endpoints', f.ep, '--prefix', 'human']);
      assert.equal(r.code, 0, show(r));
      const lines = r.stdout.trimEnd().split('\n');
      assert.match(lines[0], /^human {2}\(queue, 2 waiting\)$/, r.stdout);
      const lease = (k: string) => HEX_KEY('human').exec(k)![1];
      assert.match(lines[1], new RegExp(`^\\s+holder\\s+${holder.key}\\s+lease ${lease(holder.key)}\\s+token \\d+\\s+ttl \\d+s  alive \\(renewed or granted [\\d.]+ s ago \\([\\d.]+ s of \\d+ s left\\)\\)$`), r.stdout);
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
});

describe('locklens over Redis (--url), against redis-py and Redisson layouts', () => {
  const f = redisCli();
  const { url, peer, list } = f;

  test('list --json: a Redisson holder with its hold count, a fair lock\'s waiters in queue order, a redis-py token as owner', async () => {
    const redisson = FakeRedisson.connect(url());
    f.procs.defer(() => redisson.dispose());
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

  test('list and watch in text: owners instead of leases, the hold count, and a key with no expiry said to never expire', async () => {
    const redisson = FakeRedisson.connect(url());
    f.procs.defer(() => redisson.dispose());
    assert.equal(await redisson.lock('txt:billing', 4), null);
    assert.equal(await redisson.lock('txt:billing', 4), null);
    await f.server.cli(['SET', 'txt:stuck', 'tok-stuck']);
    await f.server.cli(['SET', 'txt:timed', 'tok-timed', 'PX', '60000']);
    const r = await f.procs.run(['list', '--url', url(), '--prefix', 'txt:']);
    assert.equal(r.code, 0, show(r));
    const lines = r.stdout.split('\n');
    assert.ok(lines.some((l) => /^  holder +[0-9a-f-]{36}:4  owner [0-9a-f-]{36}:4  holds 2  ttl \d+s  unknown \(its TTL is counting down \([\d.]+ s left\) and no renewal has been seen yet\)$/.test(l)), show(r));
    assert.ok(lines.includes('  holder    txt:stuck  owner tok-stuck  ttl none (never expires)  unknown (nothing renews or ends it: it stays until deleted, whatever became of its holder)'), show(r));
    assert.ok(lines.some((l) => /^  holder +txt:timed  owner tok-timed  ttl \d+s  unknown \(its TTL is counting down \([\d.]+ s left\) and no renewal has been seen yet\)$/.test(l)), show(r));
    assert.ok(!/lease|token \d/.test(r.stdout), `nothing etcd-only: ${r.stdout}`);

    const w = f.procs.locklens(['watch', '--url', url(), '--prefix', 'txt:s']);
    await w.until((p) => p.lines.some((l) => /txt:stuck/.test(l)), 'the stuck lock printed');
    assert.match(w.lines.find((l) => /txt:stuck/.test(l))!, /^\d+  txt:stuck  single  holder txt:stuck \(owner tok-stuck\)  waiting 0$/);
    w.signal('SIGINT');
    assert.equal((await w.wait()).code, 0);
  });
});

describe('locklens over ZooKeeper (--url zookeeper://), against kazoo and Curator layouts', { timeout: 180_000 }, () => {
  const f = zookeeperCli();
  const { url, defer, kazoo, session, czxid, list, listed } = f;

  test("list --prefix /app --json: a kazoo holder and its waiter in sequence order, sessions as owners, czxids as tokens; a Curator lock's holder and waiter", async () => {
    const orders = '/app/locks/orders';
    const holder = kazoo(orders, { identifier: 'worker-1' });
    const [, holderNode, holderSession] = (await holder.until(['acquired'])).split(' ');
    const waiter = kazoo(orders, { identifier: 'worker-2' });
    const waiterSession = (await waiter.until(['waiting'])).split(' ')[1];
    // Curator's nodes: ephemeral sequential, `_c_<uuid>-lock-<seq>`, the client's IP as data; two sessions.
    const ledger = '/app/locks/ledger';
    const [first, second] = [await session(), await session()];
    await first.mkdirp(ledger);
    const curatorHolder = await first.create(curatorPrefix(ledger), Buffer.from('10.0.0.7'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
    const curatorWaiter = await second.create(curatorPrefix(ledger), Buffer.from('10.0.0.8'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);

    await listed(orders, (l) => l.waiters.length === 1, 'the kazoo waiter listed');
    const locks = await list('/app');
    assert.deepEqual(locks.map((l) => [l.name, l.kind]), [[ledger, 'queue'], [orders, 'queue']], 'parents with contenders are locks; /app and /app/locks are not');
    const [curator, kazooLock] = locks;
    const entry = async (key: string, owner: string, data: string, convention: string): Promise<EntryJson> => ({
      key,
      lease: null,
      createRevision: null,
      ttl: null,
      owner,
      holds: null,
      token: await czxid(first, key),
      convention,
      data,
      liveness: { state: 'unknown', evidence: 'the store did not say whether its session has a client connected' },
    });
    assert.deepEqual(kazooLock.holder, await entry(`${orders}/${holderNode}`, holderSession, 'worker-1', 'kazoo-lock'));
    assert.match(kazooLock.waiters[0].key, new RegExp(`^${orders}/[0-9a-f]{32}__lock__\\d{10}$`));
    assert.deepEqual(kazooLock.waiters, [await entry(kazooLock.waiters[0].key, waiterSession, 'worker-2', 'kazoo-lock')]);
    assert.ok(kazooLock.waiters[0].token! > kazooLock.holder!.token!, 'a later contender has a larger token');
    assert.deepEqual(curator.holder, await entry(curatorHolder, first.sessionId, '10.0.0.7', 'curator-mutex'));
    assert.deepEqual(curator.waiters, [await entry(curatorWaiter, second.sessionId, '10.0.0.8', 'curator-mutex')]);
    // kazoo's own view of its queue, asked as it releases, is the order listed.
    holder.release();
    assert.deepEqual(await holder.contenders(true), ['worker-1', 'worker-2']);
    await waiter.until(['acquired']);
  });

  test('list and watch in text: owners named as sessions, no TTL made up, the data shown; a persistent node never expires', async () => {
    const job = '/txt/job';
    const holder = kazoo(job, { identifier: 'text worker' });
    const [, node, sessionHex] = (await holder.until(['acquired'])).split(' ');
    const raw = await session();
    await raw.mkdirp('/txt/leftover');
    const persistent = await raw.create(curatorPrefix('/txt/leftover'), Buffer.from('10.0.0.9'), zookeeper.CreateMode.PERSISTENT_SEQUENTIAL);
    defer(() => raw.remove(persistent));
    const r = await f.procs.run(['list', '--url', url(), '--prefix', '/txt']);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(r.stdout.trim().split('\n'), [
      '/txt/job  (queue, 0 waiting)',
      `  holder    ${job}/${node}  session ${sessionHex}  token ${await czxid(raw, `${job}/${node}`)}  data "text worker"  unknown (the store did not say whether its session has a client connected)`,
      '',
      '/txt/leftover  (queue, 0 waiting)',
      `  holder    ${persistent}  session (none: a persistent node, never expires)  token ${await czxid(raw, persistent)}  data "10.0.0.9"  unknown (nothing renews or ends it: it stays until deleted, whatever became of its holder)`,
    ]);

    const w = f.procs.locklens(['watch', '--url', url(), '--prefix', job]);
    const line = await w.until((p) => p.lines.find((l) => l.includes(job)), 'the lock printed');
    assert.match(line, new RegExp(`^\\d+  ${job}  queue  holder ${job}/${node} \\(session ${sessionHex}, token \\d+\\)  waiting 0$`));
    w.signal('SIGINT');
    assert.equal((await w.wait()).code, 0);
  });
});

describe('locklens over PostgreSQL (--url postgres://), against psycopg2 sessions and lock tables', { timeout: 300_000 }, () => {
  const f = postgresCli();
  const { fresh, url, cli, defer, psycopg, list, listed, owners } = f;

  test('list --json: a psycopg2 holder and two waiters in wait order, pids as owners with their sessions; unlock --force --yes terminates the holder and the first waiter takes over', async () => {
    const key = fresh();
    const holder = psycopg(key, { application: 'billing-worker' });
    const holderPid = String(await holder.pid());
    await holder.until(['acquired']);
    const first = psycopg(key, { application: 'report-export' });
    const firstPid = String(await first.pid());
    await listed(key, (l) => l.waiters.length === 1, 'the first waiter listed');
    const second = psycopg(key, { application: 'ledger-sync' });
    const secondPid = String(await second.pid());
    const lock = await listed(key, (l) => l.waiters.length === 2, 'both waiters listed');

    assert.equal(lock.kind, 'queue');
    assert.equal(lock.altName, `(0, ${key})`, "the bigint's halves as pg_locks shows them");
    assert.deepEqual(owners(lock), { holder: holderPid, waiters: [firstPid, secondPid] }, 'the holder, then the waiters in the order they began waiting');
    const member = (e: EntryJson, pid: string, application: string) => {
      assert.equal(e.key, `pid ${pid}`);
      assert.deepEqual([e.lease, e.createRevision, e.ttl, e.token, e.holds], [null, null, null, null, null], 'nothing a session lock does not have is made up');
      assert.equal(e.convention, 'pg-advisory');
      assert.equal(e.session?.application, application);
      assert.equal(e.session?.user, SUPERUSER);
      assert.match(e.session?.client ?? '', /^127\.0\.0\.1:\d+$/);
      assert.match(e.session?.query ?? '', new RegExp(`pg_advisory_lock\\(${key}\\)`));
      assert.ok(!Number.isNaN(Date.parse(e.session?.connectedAt ?? '')), 'connectedAt is a time');
    };
    member(lock.holder!, holderPid, 'billing-worker');
    member(lock.waiters[0], firstPid, 'report-export');
    member(lock.waiters[1], secondPid, 'ledger-sync');
    assert.equal(lock.holder!.session?.state, 'idle', 'the holder sits idle, holding');
    assert.equal(lock.holder!.session?.waitingSince, undefined);
    assert.ok(lock.waiters.every((w) => w.session?.state === 'active' && w.session.waitingSince), 'waiters run their lock statement, waiting since a time');
    assert.ok(Date.parse(lock.waiters[0].session!.waitingSince!) <= Date.parse(lock.waiters[1].session!.waitingSince!));

    const r = await cli(['unlock', key, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, new RegExp(`^released '${key}' from pid ${holderPid} \\(connection ${holderPid} \\(billing-worker, postgres@127\\.0\\.0\\.1:\\d+\\)\\): terminated session pid ${holderPid}, which freed every lock it held\\n  pid ${holderPid}\\n$`), show(r));
    assert.equal(await first.until(['acquired']), 'acquired', 'the first waiter gets the lock');
    // psycopg2 finds its connection gone at its next statement: the unlock it tries fails.
    holder.release();
    assert.equal(await holder.until(['released', 'release-failed']), 'release-failed OperationalError');
    const after = await listed(key, (l) => l.holder?.owner === firstPid, 'the first waiter listed as holder');
    assert.deepEqual(owners(after), { holder: firstPid, waiters: [secondPid] }, 'the second still waits');
    assert.ok(!second.lines.includes('acquired'));
  });

  test("list in text: the bigint's halves in the heading, owners as `connection N (app, user@client)`, no TTL for a session lock, the statement", async () => {
    const key = fresh();
    const holder = psycopg(key, { application: 'text-holder' });
    const pid = await holder.pid();
    await holder.until(['acquired']);
    const waiter = psycopg(key, { application: 'text-waiter' });
    const waiterPid = await waiter.pid();
    const clients = (await listed(key, (l) => l.waiters.length === 1, 'the waiter listed'));
    const [holderClient, waiterClient] = [clients.holder!, clients.waiters[0]].map((e) => e.session!.client);
    const r = await cli(['list', '--url', url(), '--prefix', key]);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(r.stdout.trim().split('\n'), [
      `${key} = (0, ${key})  (queue, 1 waiting)`,
      `  holder    pid ${pid}  connection ${pid} (text-holder, postgres@${holderClient})  query "SELECT pg_advisory_lock(${key})"  alive (${sqlAlive(holderClient)})`,
      `  waiter    pid ${waiterPid}  connection ${waiterPid} (text-waiter, postgres@${waiterClient})  query "SELECT pg_advisory_lock(${key})"  alive (${sqlAlive(waiterClient)})`,
    ]);
  });

  test("--lock-table reads a user's table (name, holder, expiry columns); without it the table is not a lock table; a malformed spec exits 2, one that does not fit is noted", async () => {
    await f.server.superuserQuery(
      'CREATE TABLE job_locks (job VARCHAR(2000) PRIMARY KEY, owner_id VARCHAR(100), expires_at TIMESTAMPTZ);' +
        "INSERT INTO job_locks VALUES ('nightly', 'worker-3', now() + interval '600 seconds'), ('forever', 'worker-4', NULL)",
    );
    defer(() => f.server.superuserQuery('DROP TABLE job_locks'));
    assert.deepEqual((await list(['--prefix', 'job_locks/'])), [], 'no table is guessed to be a lock table');
    const spec = ['--lock-table', 'job_locks:job,owner_id,expires_at', '--prefix', 'job_locks/'];
    const locks = await list(spec);
    assert.deepEqual(locks.map((l) => [l.name, l.kind, l.holder?.key, l.holder?.owner, l.holder?.convention]), [
      ['job_locks/forever', 'single', 'forever', 'worker-4', 'custom-table'],
      ['job_locks/nightly', 'single', 'nightly', 'worker-3', 'custom-table'],
    ]);
    assert.equal(locks[0].holder!.ttl, null, 'no expiry: held until the row is cleared');
    assert.ok(locks[1].holder!.ttl! > 0 && locks[1].holder!.ttl! <= 600, `ttl ${locks[1].holder!.ttl}`);
    const text = await cli(['list', '--url', url(), ...spec]);
    assert.match(text.stdout, /^job_locks\/forever {2}\(single, 0 waiting\)\n {2}holder {4}forever {2}locked by worker-4 {2}ttl none \(never expires\) {2}unknown \(nothing renews or ends it: it stays until deleted, whatever became of its holder\)\n/, show(text));

    const bad = await cli(['list', '--url', url(), '--lock-table', 'job_locks:job']);
    assert.equal(bad.code, 2, show(bad));
    assert.match(bad.stderr, /--lock-table 'job_locks:job': write TABLE:NAME_COLUMN,HOLDER_COLUMN\[,EXPIRY_COLUMN\]/, show(bad));
    // A spec that does not fit its table is said, and the database's other locks are still listed.
    const missing = await cli(['list', '--url', url(), '--lock-table', 'job_locks:job,holder']);
    assert.equal(missing.code, 0, show(missing));
    assert.equal(
      missing.stderr,
      "note: lock table 'job_locks' (locklens.lockTables, or the CLI's --lock-table): holderColumn 'holder' is not a column of it (its columns: job, owner_id, expires_at), so its rows are not read\n",
    );
  });
});

describe('locklens over MariaDB (--url mysql://), against PyMySQL connections and lock tables', { timeout: 300_000 }, () => {
  const f = mariadbCli();
  const { fresh, url, cli, pymysql, lockNamed, listed, owners } = f;

  test('list --json: a PyMySQL holder and two waiters in wait order, connection ids as owners; unlock --force --yes KILLs the holder and a waiter takes over', async () => {
    const name = fresh('billing');
    const holder = pymysql(name, { identifier: 'holder' });
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const first = pymysql(name, { identifier: 'first' });
    const firstId = await first.connectionId();
    await listed(name, (l) => l.waiters.length === 1, 'the first waiter listed');
    const second = pymysql(name, { identifier: 'second' });
    const secondId = await second.connectionId();
    const lock = await listed(name, (l) => l.waiters.length === 2, 'both waiters listed');

    assert.equal(lock.kind, 'queue');
    assert.deepEqual(owners(lock), { holder: holderId, waiters: [firstId, secondId] }, 'the holder, then the waiters in the order they began waiting');
    const member = (e: EntryJson, id: string) => {
      assert.equal(e.key, `connection ${id}`);
      assert.deepEqual([e.lease, e.createRevision, e.ttl, e.token, e.holds], [null, null, null, null, null], 'nothing GET_LOCK does not have is made up');
      assert.equal(e.convention, 'mysql-get-lock');
      assert.equal(e.session?.user, ADMIN.user);
      assert.match(e.session?.client ?? '', /^127\.0\.0\.1:\d+$/);
    };
    member(lock.holder!, holderId);
    lock.waiters.forEach((w, i) => member(w, [firstId, secondId][i]));
    assert.ok(lock.waiters.every((w) => w.session?.query === `SELECT GET_LOCK('${name}', 60)` && w.session.waitingSince), 'waiters run GET_LOCK, waiting since a time');

    const r = await cli(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.match(
      r.stdout,
      new RegExp(`^released '${name}' from connection ${holderId} \\(connection ${holderId} \\(locklens@127\\.0\\.0\\.1:\\d+\\)\\): killed connection ${holderId} \\(KILL CONNECTION\\), freeing every lock it held\\n  connection ${holderId}\\n$`),
      show(r),
    );
    // A waiter's GET_LOCK returns 1; the server's queue is not readable, so either may be the one.
    const next = await eventually(() => [first, second].find((p) => p.lines.some((l) => l.startsWith('acquired'))), 15_000, 'a waiter acquired');
    const [nextId, otherId] = next === first ? [firstId, secondId] : [secondId, firstId];
    // PyMySQL finds its connection gone at its next statement: the release it tries fails.
    holder.release();
    assert.equal(await holder.until(['released', 'release-failed']), 'release-failed OperationalError');
    const after = await listed(name, (l) => l.holder?.owner === nextId, 'the waiter listed as holder');
    assert.deepEqual(owners(after), { holder: nextId, waiters: [otherId] }, 'the other still waits');
  });

  test('a name with HTML is listed intact in JSON and text, taken, refused with --try (exit 6) naming the holder, and force-released by name', async () => {
    const name = fresh('<b>x</b>');
    const holder = pymysql(name, { identifier: 'html' });
    const holderId = (await holder.until(['acquired'])).split(' ')[1];
    const lock = await listed(name, (l) => l.holder !== null, 'the HTML name listed');
    assert.equal(lock.name, name);
    assert.equal(lock.holder?.owner, holderId);
    const client = lock.holder!.session!.client!;
    const text = await cli(['list', '--url', url(), '--prefix', name]);
    assert.equal(text.stdout, `${name}  (queue, 0 waiting)\n  holder    connection ${holderId}  connection ${holderId} (locklens@${client})  alive (${sqlAlive(client)})\n`, show(text));

    const busy = await cli(['acquire', name, '--try', '--url', url()]);
    assert.equal(busy.code, 6, show(busy));
    assert.equal(busy.stderr, `locklens: ${name} is held by connection ${holderId} (user locklens, from ${client}, state Sleep)\n`);
    assert.deepEqual((await lockNamed(name))?.waiters, [], 'the try left nothing waiting');

    const r = await cli(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    const ours = await cli(['acquire', name, '--try', '--url', url(), '--', 'sh', '-c', 'echo "$ETCD_LOCK_KEY" > "$1"', 'sh', join(f.dir, 'key')]);
    assert.equal(ours.code, 0, show(ours));
    assert.match(readFileSync(join(f.dir, 'key'), 'utf8'), /^connection \d+\n$/);
  });
});

import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zookeeper from 'node-zookeeper-client';
import type { EntryJson, LockJson } from '../../src/cli/lockJson';
import type { ZkClient } from '../../src/core/zookeeper/client';
import { ensembleOf, openSession } from '../../src/core/zookeeper/connect';
import { Procs, show } from '../harness/cli';
import { MARK_WAIT_MARK } from '../harness/cliFixture';
import { eventually } from '../harness/etcd';
import { KazooLock, type KazooKind } from '../harness/kazoo';
import { startZooKeeper, type ZooKeeperServer } from '../harness/zookeeper';

// The shipped `locklens` binary over ZooKeeper, next to real kazoo processes (Debian's python3-kazoo) and Curator's
// node layout made by hand: the issue's acceptance cases. The nodes the tests make themselves, and the czxids they
// compare with, go through a session of the test's own, not through the CLI.

/** `locklens list --json` and `watch --json` as read here: what the CLI documents, with ZooKeeper's `data`. */
type Lock = LockJson & { sharedWith?: EntryJson[] };

/** Curator's InterProcessMutex contender, as Curator names it: ZooKeeper appends the ten-digit sequence. */
const curatorPrefix = (lock: string) => `${lock}/_c_${randomUUID()}-lock-`;

/** The lines of a file the test's processes append to ([] before the first). */
const linesOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

describe('locklens over ZooKeeper (--url zookeeper://), against kazoo and Curator layouts', { timeout: 180_000 }, () => {
  let server: ZooKeeperServer;
  let procs: Procs;
  let dir: string;
  const cleanups: (() => unknown)[] = [];
  const defer = (c: () => unknown) => void cleanups.push(c);
  const url = () => server.url;

  const kazoo = (path: string, options: { kind?: KazooKind; mode?: 'hold' | 'try'; identifier?: string; log?: string } = {}) => {
    const peer = new KazooLock(`127.0.0.1:${server.port}`, path, options);
    defer(() => peer.dispose());
    return peer;
  };
  /** A session of the test's own: Curator's nodes by hand, and the Stat of what the CLI lists. */
  const session = async (): Promise<ZkClient> => {
    const { url: parsed, spec } = ensembleOf({ endpoints: [server.url], dialTimeoutMs: 5000 });
    const s = await openSession({ ...spec, sessionTimeoutMs: 4000 }, parsed.servers);
    defer(() => s.close());
    return s;
  };
  const czxid = async (s: ZkClient, path: string) => Number((await s.exists(path))!.czxid);
  const list = async (prefix: string): Promise<Lock[]> => {
    const r = await procs.run(['list', '--url', url(), '--prefix', prefix, '--json']);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stderr, '', show(r));
    const doc = JSON.parse(r.stdout) as { revision: null; locks: Lock[] };
    assert.equal(doc.revision, null, 'ZooKeeper has no revision to give');
    return doc.locks;
  };
  /** Lists `name` until `ready` says it is as the test arranged it (peers act in their own time). */
  const listed = (name: string, ready: (l: Lock) => boolean, what: string): Promise<Lock> =>
    eventually(async () => {
      const lock = (await list(name)).find((l) => l.name === name);
      return lock && ready(lock) ? lock : undefined;
    }, 15_000, what);

  before(async () => {
    server = await startZooKeeper();
  });
  after(async () => {
    await server?.dispose();
  });
  beforeEach(() => {
    procs = new Procs(url());
    dir = mkdtempSync(join(tmpdir(), 'locklens-cli-zk-'));
  });
  afterEach(async () => {
    await procs.dispose();
    for (const c of cleanups.splice(0).reverse()) await c();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the help of list, acquire, unlock and watch says what each does over ZooKeeper', async () => {
    const says: Record<string, string[]> = {
      list: [
        'ZooKeeper (--url zookeeper://…): a prefix is a znode path',
        'kazoo (<hex>__lock__<seq>, __rlock__)',
        'Curator (_c_<uuid>-lock-<seq>',
        "A member's owner is the session its ephemeral node goes with, its token the node's creation zxid (czxid)",
        'There is no TTL: a node lasts as long as its session',
      ],
      acquire: [
        'Joins it in the layout the lock already has',
        "kazoo's for a NAME nobody uses yet",
        'watches only the node just ahead of it',
        'Each acquire has a ZooKeeper session of its own whose timeout is --ttl',
        "ZooKeeper: the node's creation zxid, czxid",
        'ZooKeeper: its node deleted, its session expired, or nothing heard for a session timeout',
        '--ttl S lease TTL in seconds (default 10, as etcdctl lock); ZooKeeper: the session timeout asked for',
        "Curator's InterProcessReadWriteLock or kazoo's ReadLock/WriteLock",
      ],
      unlock: [
        "ZooKeeper: deletes the holder's node if it is still the one created at the zxid shown",
        'the contender watching it (the next in sequence) wakes and takes the lock',
        "The holder's process is not told: it may still believe it holds the lock",
      ],
      watch: ['ZooKeeper is followed by watches on the znodes under each path', 'Redis and ZooKeeper have none to give'],
    };
    for (const [command, sentences] of Object.entries(says)) {
      const r = await procs.run([command, '--help']);
      assert.equal(r.code, 0, show(r));
      // Lines are wrapped for the terminal: the sentences are looked for in the text as one line.
      const help = r.stdout.replace(/\s+/g, ' ');
      for (const said of sentences) assert.ok(help.includes(said), `${command} --help: ${said}`);
    }
  });

  test('list --prefix /app --json: a kazoo holder and its waiter in sequence order, sessions as owners, czxids as tokens; a Curator lock`s holder and waiter', async () => {
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
    const r = await procs.run(['list', '--url', url(), '--prefix', '/txt']);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(r.stdout.trim().split('\n'), [
      '/txt/job  (queue, 0 waiting)',
      `  holder    ${job}/${node}  session ${sessionHex}  token ${await czxid(raw, `${job}/${node}`)}  data "text worker"`,
      '',
      '/txt/leftover  (queue, 0 waiting)',
      `  holder    ${persistent}  session (none: a persistent node, never expires)  token ${await czxid(raw, persistent)}  data "10.0.0.9"`,
    ]);

    const w = procs.locklens(['watch', '--url', url(), '--prefix', job]);
    const line = await w.until((p) => p.lines.find((l) => l.includes(job)), 'the lock printed');
    assert.match(line, new RegExp(`^\\d+  ${job}  queue  holder ${job}/${node} \\(session ${sessionHex}, token \\d+\\)  waiting 0$`));
    w.signal('SIGINT');
    assert.equal((await w.wait()).code, 0);
  });

  test('locklens acquire -- CMD excludes kazoo both ways, in kazoo`s layout: the order is the one the processes wrote', async () => {
    const name = '/both/job';
    const log = join(dir, 'order');
    const go = join(dir, 'go');
    // kazoo holds; locklens queues behind it and its command waits.
    const first = kazoo(name, { identifier: 'kazoo-first', log });
    await first.until(['acquired']);
    const ours = procs.locklens(['acquire', name, '--url', url(), '--ttl', '2', '--', 'sh', '-c', MARK_WAIT_MARK, 'sh', log, 'locklens-start', go, 'locklens-end']);
    const queued = await listed(name, (l) => l.waiters.length === 1, 'locklens queued behind kazoo');
    assert.match(queued.waiters[0].key, /\/[0-9a-f]{32}__lock__\d{10}$/, 'kazoo`s layout, so kazoo counts it');
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

  test('acquire --try exits 6 naming the holder (kazoo`s identifier, Curator`s IP) and leaves nothing; a Curator lock is joined in Curator`s layout', async () => {
    const job = '/try/job';
    const holder = kazoo(job, { identifier: 'busy-worker' });
    const node = (await holder.until(['acquired'])).split(' ')[1];
    const busy = await procs.run(['acquire', job, '--try', '--url', url()]);
    assert.equal(busy.code, 6, show(busy));
    assert.match(busy.stderr, new RegExp(`${job} is held by ${node} \\(busy-worker\\)`), show(busy));
    assert.deepEqual((await list(job))[0].waiters, [], 'the try left no node behind');

    const ledger = '/try/ledger';
    const curator = await session();
    await curator.mkdirp(ledger);
    await curator.create(curatorPrefix(ledger), Buffer.from('10.0.0.7'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
    const tried = await procs.run(['acquire', ledger, '--try', '--url', url()]);
    assert.equal(tried.code, 6, show(tried));
    assert.match(tried.stderr, /held by _c_[0-9a-f-]{36}-lock-\d{10} \(10\.0\.0\.7\)/, show(tried));

    const env = join(dir, 'env');
    const ours = procs.locklens(['acquire', ledger, '--url', url(), '--', 'sh', '-c', 'echo "$ETCD_LOCK_KEY $LOCKLENS_FENCING_TOKEN ${ETCD_LOCK_REV-none}" > "$1"', 'sh', env]);
    const queued = (await listed(ledger, (l) => l.waiters.length === 1, 'locklens queued behind Curator`s holder')).waiters[0];
    assert.match(queued.key, new RegExp(`^${ledger}/_c_[0-9a-f-]{36}-lock-\\d{10}$`));
    assert.equal(queued.convention, 'curator-mutex');
    await curator.close();
    const r = await ours.wait();
    assert.equal(r.code, 0, show(r));
    assert.equal(readFileSync(env, 'utf8').trim(), `${queued.key} ${queued.token} none`, 'the node, its czxid as the fencing token, no revision');
  });

  test('locklens unlock --force --yes deletes the holder`s node: the kazoo waiter takes over, the holder is not told', async () => {
    const name = '/unlock/job';
    const holder = kazoo(name, { identifier: 'stuck-worker' });
    const holderSession = (await holder.until(['acquired'])).split(' ')[2];
    await holder.contenders();
    const waiter = kazoo(name, { identifier: 'next-worker' });
    await waiter.until(['waiting']);
    const shown = (await listed(name, (l) => l.waiters.length === 1, 'the waiter listed')).holder!;
    const said = holder.lines;

    const r = await procs.run(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stdout, `released '${name}' from ${shown.key} (session ${holderSession}): deleted the node created at zxid ${shown.token}\n  ${shown.key}\n`);
    await waiter.until(['acquired']);
    assert.deepEqual(await waiter.contenders(), ['next-worker'], 'the holder`s node is gone');
    assert.equal((await list(name))[0].holder?.data, 'next-worker');
    assert.deepEqual(holder.lines, said, 'the holder heard nothing: it still believes it holds the lock');
  });

  test('a locklens holder whose node is force-released says it lost the lock (exit 7) and stops its command', async () => {
    const name = '/unlock/ours';
    const log = join(dir, 'log');
    const command = 'trap \'echo stopped >> "$1"; exit 143\' TERM; echo started >> "$1"; while :; do sleep 0.05; done';
    const ours = procs.locklens(['acquire', name, '--ttl', '2', '--url', url(), '--', 'sh', '-c', command, 'sh', log]);
    await eventually(() => linesOf(log).includes('started'), 15_000, 'the command runs');
    const r = await procs.run(['unlock', name, '--force', '--yes', '--url', url()]);
    assert.equal(r.code, 0, show(r));
    const lost = await ours.wait();
    assert.equal(lost.code, 7, show(lost));
    assert.match(lost.stderr, /lost \/unlock\/ours: its node was deleted/, show(lost));
    assert.deepEqual(linesOf(log), ['started', 'stopped']);
  });

  test('locklens watch --prefix /app --json follows a kazoo lock taken, queued for, handed over and released', async () => {
    const name = '/app/watched/job';
    const w = procs.locklens(['watch', '--prefix', '/app', '--json', '--url', url()]);
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

  test('acquire --mode read shares a kazoo ReadLock, --mode write is refused by it, no --mode exits 2; --ttl applies to a reader', async () => {
    const name = '/rw/catalog';
    const reader = kazoo(name, { kind: 'read', identifier: 'kazoo-reader' });
    await reader.until(['acquired']);
    const plain = await procs.run(['acquire', name, '--try', '--url', url()]);
    assert.equal(plain.code, 2, show(plain));
    assert.match(plain.stderr, /\/rw\/catalog is a kazoo read\/write lock: choose read or write/, show(plain));
    const key = join(dir, 'key');
    const read = await procs.run(['acquire', name, '--mode', 'read', '--ttl', '2', '--try', '--url', url(), '--', 'sh', '-c', 'echo "$ETCD_LOCK_KEY" > "$1"', 'sh', key]);
    assert.equal(read.code, 0, show(read));
    assert.match(readFileSync(key, 'utf8'), /^\/rw\/catalog\/[0-9a-f]{32}__rlock__\d{10}$/m, 'kazoo`s read node');
    assert.doesNotMatch(read.stderr, /Redisson|does not apply/, 'the reader`s session timeout is its --ttl');
    const write = await procs.run(['acquire', name, '--mode', 'write', '--try', '--url', url()]);
    assert.equal(write.code, 6, show(write));
  });

  test('--ttl is the session timeout: a locklens killed while holding frees the lock when its session expires', async () => {
    const name = '/ttl/job';
    const ours = procs.locklens(['acquire', name, '--ttl', '1', '--url', url()]);
    const [key] = await ours.until((p) => (p.lines.length >= 2 ? p.lines : undefined), 'the key and token printed');
    const waiter = kazoo(name, { identifier: 'after-crash' });
    await waiter.until(['waiting']);
    await listed(name, (l) => l.holder?.key === key && l.waiters.length === 1, 'kazoo queued behind locklens');
    await ours.kill();
    await waiter.until(['acquired'], 10_000);
    assert.deepEqual(await waiter.contenders(), ['after-crash']);
  });
});

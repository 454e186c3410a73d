import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3, EtcdLockFailedError, type Campaign, type Lock } from 'etcd3';
import { openBackend } from '../../src/core/stores';
import type { LockBackend, LockHold } from '../../src/core/backend';
import type { LockState } from '../../src/core/lockState';
import { leaseHex } from '../../src/core/keys';
import { eventually } from '../harness/etcd';
import { buildGoPeers, GoPeer } from '../harness/goPeers';
import { PythonEtcd3Lock } from '../harness/pythonEtcd3';
import { etcdSuite } from '../harness/suite';

/**
 * The real clients that take etcd locks their own way, beside LockLens: npm `etcd3`'s `Lock` (one key with a lease)
 * and `Election` (`election/<name>/<lease decimal>`), python-etcd3's `Lock` (`/locks/<name>`), and Go's
 * `concurrency.Election` (`<name>/<lease hex>` with the proposal as value). LockLens lists them, waits for their
 * holders and is waited for, and its force release (deleting the key, or revoking the lease) hands the lock on.
 */
describe('etcd peers: npm etcd3, python-etcd3 and Go elections against a real etcd', { timeout: 180_000 }, () => {
  const t = etcdSuite();
  let goElection = '';
  let n = 0;
  before(async () => {
    goElection = (await buildGoPeers(['election'])).election;
  });

  const open = async (): Promise<LockBackend> => {
    const backend = await openBackend({ endpoints: [t.etcd.endpoint] });
    t.scope.defer(() => backend.close());
    return backend;
  };
  const etcd3 = (): Etcd3 => {
    const client = new Etcd3({ hosts: `http://${t.etcd.endpoint}` });
    t.scope.defer(() => client.close());
    return client;
  };
  const lockNamed = async (backend: LockBackend, prefix: string, name: string): Promise<LockState> =>
    eventually(async () => (await backend.list([Buffer.from(prefix)])).locks.find((l) => l.name.toString() === name), 10_000, `${name} listed`);
  const keyOf = async (name: string) => (await t.conn.client.kv.range({ key: Buffer.from(name) })).kvs[0];

  /**
   * npm etcd3's Lock does not wait: its acquire fails while the key exists. A service that waits watches the key and
   * tries again at its delete; the watch starts before the try, so no delete between the two is missed.
   */
  const etcd3Waiting = async (client: Etcd3, name: string): Promise<Lock> => {
    const watcher = await client.watch().key(name).create();
    try {
      for (;;) {
        const gone = new Promise<void>((resolve) => watcher.once('delete', () => resolve()));
        try {
          return await client.lock(name).ttl(30).acquire();
        } catch (e) {
          if (!(e instanceof EtcdLockFailedError)) throw e;
        }
        await gone;
      }
    } finally {
      await watcher.cancel();
    }
  };

  describe('npm etcd3 Lock', () => {
    test('listed as a single key held by its lease; LockLens waits for it, then holds the key its way', async () => {
      const backend = await open();
      const client = etcd3();
      const name = `e3lock/${++n}`;
      const theirs = await client.lock(name).ttl(30).acquire();
      const theirLease = leaseHex((await theirs.leaseId())!);
      const lock = await lockNamed(backend, 'e3lock/', name);
      assert.equal(lock.kind, 'single');
      assert.equal(lock.holder?.owner, theirLease);
      assert.ok(backend.acquirable(lock), 'a single key is waited for and taken');

      const positions: number[] = [];
      const ours = backend.acquire(Buffer.from(name), { ttlSeconds: 30, onQueue: (p) => positions.push(p.ahead) });
      await eventually(() => positions.includes(1), 10_000, 'LockLens told it waits behind one holder');
      assert.equal((await keyOf(`${name}/`))?.key, undefined, 'no queue key beside the single key');
      await theirs.release();
      const hold = await ours;
      t.scope.defer(() => hold.release().catch(() => undefined));
      const key = await keyOf(name);
      assert.equal(leaseHex(key.lease), hold.owner, 'the single key, now on our lease');
      assert.equal(hold.fencingToken, Number(key.create_revision));
      assert.equal(positions.at(-1), 0, 'told when held');

      // The other way: while LockLens holds, etcd3's acquire fails, and a waiting etcd3 service gets the key at release.
      await assert.rejects(client.lock(name).acquire(), EtcdLockFailedError);
      let theirsAgain: Lock | undefined;
      const waiting = etcd3Waiting(client, name).then((l) => (theirsAgain = l));
      assert.equal(leaseHex((await keyOf(name)).lease), hold.owner, 'still ours while etcd3 waits');
      assert.equal(theirsAgain, undefined);
      assert.equal(await hold.release(), true);
      await waiting;
      assert.equal(leaseHex((await keyOf(name)).lease), leaseHex((await theirsAgain!.leaseId())!));
      await theirsAgain!.release();
    });

    test('tryOnly on an etcd3 Lock holder: LOCKED, naming its lease, and nothing written', async () => {
      const backend = await open();
      const client = etcd3();
      const name = `e3lock/${++n}`;
      const theirs = await client.lock(name).ttl(30).acquire();
      const theirLease = leaseHex((await theirs.leaseId())!);
      await assert.rejects(backend.acquire(Buffer.from(name), { ttlSeconds: 30, tryOnly: true }), (e: Error) => e.message.includes(theirLease));
      assert.equal(leaseHex((await keyOf(name)).lease), theirLease);
      await theirs.release();
    });

    test('a LockLens waiter that gives up leaves nothing; a LockLens hold of the key is told when the key is deleted under it', async () => {
      const backend = await open();
      const client = etcd3();
      const name = `e3lock/${++n}`;
      const theirs = await client.lock(name).ttl(30).acquire();
      const stop = new AbortController();
      let waiting = false;
      const given = backend.acquire(Buffer.from(name), { ttlSeconds: 30, signal: stop.signal, onQueue: () => (waiting = true) });
      await eventually(() => waiting, 10_000, 'LockLens waiting');
      stop.abort();
      await assert.rejects(given, (e: Error & { code?: string }) => e.code === 'CANCELLED');
      assert.equal((await t.conn.client.kv.range({ key: Buffer.from(name), range_end: Buffer.from(`${name}0`) })).kvs.length, 1, 'only their key');
      await theirs.release();

      const hold = await backend.acquire(Buffer.from(name), { ttlSeconds: 30 });
      const lost = new Promise<Error>((resolve) => hold.onDidLose(resolve));
      const [lock] = (await backend.list([Buffer.from(name)])).locks;
      await backend.forceRelease(lock, lock.holder!);
      assert.match((await lost).message, /deleted/);
      assert.equal(await hold.release(), false, 'released after it was lost: nothing of ours was left');
    });

    test("force release by revoking the holder's lease hands the key to a waiting etcd3 service", async () => {
      const backend = await open();
      const client = etcd3();
      const name = `e3lock/${++n}`;
      const stuck = await client.lock(name).ttl(30).acquire();
      const stuckLease = leaseHex((await stuck.leaseId())!);
      const waiting = etcd3Waiting(client, name);
      const lock = await lockNamed(backend, 'e3lock/', name);
      const revoked = await backend.leases!.revoke(lock.holder!.owner);
      assert.deepEqual(revoked.keys.map(String), [name]);
      const next = await waiting;
      const nextLease = leaseHex((await next.leaseId())!);
      assert.notEqual(nextLease, stuckLease);
      assert.equal((await lockNamed(backend, 'e3lock/', name)).holder?.owner, nextLease);
      await next.release();
    });
  });

  describe('npm etcd3 Election', () => {
    test('listed with its leader and candidates in order; revoking the leader makes the next candidate leader', async () => {
      const backend = await open();
      const name = `e3elect${++n}`;
      const campaigns: Campaign[] = [];
      const elected: string[] = [];
      for (const value of ['alpha', 'beta', 'gamma']) {
        const campaign = etcd3().election(name, 30).campaign(value);
        campaign.on('elected', () => elected.push(value));
        campaign.on('error', () => undefined);
        campaigns.push(campaign);
        // Each candidate's key exists before the next campaigns, so the order is known.
        await eventually(async () => (await backend.list([Buffer.from(`election/${name}`)])).locks[0]?.waiters.length === campaigns.length - 1, 10_000, `${value} campaigning`);
      }
      await eventually(() => elected.includes('alpha'), 10_000, 'alpha elected');
      const leases = await Promise.all(campaigns.map(async (c) => leaseHex(BigInt((await c.getCampaignKey()).split('/').pop()!))));
      const lock = await lockNamed(backend, 'election/', `election/${name}`);
      assert.equal(lock.kind, 'election');
      assert.equal(lock.holder?.owner, leases[0]);
      assert.deepEqual(lock.waiters.map((w) => w.owner), leases.slice(1), 'candidates in campaign order');
      assert.equal(backend.acquirable(lock), false, "an election is its candidates' to win");

      await backend.leases!.revoke(lock.holder!.owner);
      await eventually(() => elected.includes('beta'), 10_000, 'beta elected');
      assert.deepEqual(elected, ['alpha', 'beta']);
      const after = await lockNamed(backend, 'election/', `election/${name}`);
      assert.equal(after.holder?.owner, leases[1]);
      for (const c of campaigns.slice(1)) await c.resign();
    });
  });

  describe('python-etcd3 Lock', () => {
    const peers: PythonEtcd3Lock[] = [];
    const peer = (name: string) => {
      const p = new PythonEtcd3Lock(t.etcd.endpoint, name);
      peers.push(p);
      return p;
    };
    after(() => peers.forEach((p) => p.dispose()));
    const leaseOf = async (p: PythonEtcd3Lock) => (await p.until(['acquired'])).split(' ')[1];

    test('/locks/<name> listed as a single key; LockLens waits for it, and a python waiter waits for LockLens', async () => {
      const backend = await open();
      const name = `py${++n}`;
      const key = `/locks/${name}`;
      const first = peer(name);
      const firstLease = await leaseOf(first);
      const lock = await lockNamed(backend, '/locks/', key);
      assert.equal(lock.kind, 'single');
      assert.equal(lock.holder?.owner, firstLease);

      let hold: LockHold | undefined;
      let waited = false;
      const ours = backend.acquire(Buffer.from(key), { ttlSeconds: 30, onQueue: (p) => (waited ||= p.ahead === 1) }).then((h) => (hold = h));
      await eventually(() => waited, 10_000, 'LockLens waiting behind python');
      assert.equal(hold, undefined, 'LockLens waits while python holds');
      first.release();
      assert.equal(await first.until(['released']), 'released true');
      await ours;
      t.scope.defer(() => hold!.release().catch(() => undefined));
      assert.equal(leaseHex((await keyOf(key)).lease), hold!.owner);

      const second = peer(name);
      await second.until(['waiting']);
      // python-etcd3 waits on a watch of the key: it cannot get the key while LockLens holds it.
      assert.equal(leaseHex((await keyOf(key)).lease), hold!.owner);
      assert.equal(await hold!.release(), true);
      const secondLease = await leaseOf(second);
      assert.equal(leaseHex((await keyOf(key)).lease), secondLease);
      second.release();
      await second.until(['released']);
    });

    test('force release deletes the key the user saw, and the waiting python client takes it', async () => {
      const backend = await open();
      const name = `py${++n}`;
      const key = `/locks/${name}`;
      const stuck = peer(name);
      const stuckLease = await leaseOf(stuck);
      const waiter = peer(name);
      await waiter.until(['waiting']);
      const lock = await lockNamed(backend, '/locks/', key);
      assert.equal(lock.holder?.owner, stuckLease);
      const result = await backend.forceRelease(lock, lock.holder!);
      assert.deepEqual(result.keys.map(String), [key]);
      const waiterLease = await leaseOf(waiter);
      assert.notEqual(waiterLease, stuckLease);
      stuck.release();
      assert.equal(await stuck.until(['released']), 'released false', "the old holder's owner-only release finds the key is not its own");
      waiter.release();
      assert.equal(await waiter.until(['released']), 'released true');
    });
  });

  describe('Go concurrency.Election', () => {
    const peers: GoPeer[] = [];
    after(() => peers.forEach((p) => p.dispose()));

    test('listed with its leader and candidates; revoking the leader\'s lease makes the next candidate leader', async () => {
      const backend = await open();
      const name = `goelect/${++n}`;
      const candidates: { peer: GoPeer; lease: string }[] = [];
      for (const value of ['node-a', 'node-b', 'node-c']) {
        const peer = new GoPeer(goElection, [t.etcd.endpoint, '9', name, value]);
        peers.push(peer);
        const lease = (await peer.until('campaigning')).split(' ')[1];
        candidates.push({ peer, lease });
        await eventually(async () => (await backend.list([Buffer.from(`${name}/`)])).locks[0]?.waiters.length === candidates.length - 1, 10_000, `${value} campaigning`);
      }
      await candidates[0].peer.until('leader');
      const lock = await lockNamed(backend, 'goelect/', name);
      assert.equal(lock.kind, 'election');
      assert.equal(lock.holder?.owner, candidates[0].lease);
      assert.deepEqual(lock.waiters.map((w) => w.owner), candidates.slice(1).map((c) => c.lease), 'candidates in campaign order');
      assert.equal((await keyOf(`${name}/${candidates[0].lease}`)).value.toString(), 'node-a', 'the proposal is the value');

      await backend.leases!.revoke(lock.holder!.owner);
      await candidates[1].peer.until('leader');
      // Go's session hears of its revoked lease at its next keepalive (a third of the TTL).
      await candidates[0].peer.until('lost');
      assert.equal(candidates[2].peer.lines.some((l) => l.startsWith('leader')), false);
      assert.equal((await lockNamed(backend, 'goelect/', name)).holder?.owner, candidates[1].lease);

      // A resign is the leader's own hand-over: the last candidate leads.
      candidates[1].peer.next();
      await candidates[1].peer.until('resigned');
      await candidates[2].peer.until('leader');
    });
  });
});

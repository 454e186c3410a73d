import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import createMutex, { strToKey } from 'advisory-lock';
import type { LockHold } from '../../src/core/backend';
import type { LockState } from '../../src/core/lockState';
import { PostgresBackend } from '../../src/core/postgres/postgresBackend';
import { advisoryLockPeer } from '../harness/advisoryLockPeer';
import type { GoPeer } from '../harness/goPeers';
import { SUPERUSER, SUPERUSER_PASSWORD, startPostgres, type PostgresServer } from '../harness/postgres';
import { eventually } from '../harness/redis';

/**
 * npm advisory-lock beside LockLens: it locks `pg_advisory_lock(k1, k2)`, the first two little-endian int32s of the
 * name's sha256, so LockLens shows its lock as the int pair `k1:k2` (a hash cannot be turned back into the name, and
 * neither pg_locks nor the client's statement carries it) and takes it by that pair. LockLens waits for its holder and
 * is waited for, and a force release (terminating the holder's session) hands the lock to a waiting advisory-lock.
 */
describe('postgres peers: npm advisory-lock against a real PostgreSQL', { timeout: 120_000 }, () => {
  let server: PostgresServer;
  let backend: PostgresBackend;
  let conString = '';
  const peers: GoPeer[] = [];
  let n = 0;

  before(async () => {
    server = await startPostgres();
    backend = await PostgresBackend.open({ store: 'postgres', endpoints: [server.url()], password: SUPERUSER_PASSWORD, dialTimeoutMs: 3000 });
    conString = `postgres://${SUPERUSER}:${encodeURIComponent(SUPERUSER_PASSWORD)}@127.0.0.1:${server.port}/postgres`;
  });
  after(async () => {
    backend?.close();
    await server?.dispose();
  });
  afterEach(() => peers.splice(0).forEach((p) => p.dispose()));

  const peer = (name: string): GoPeer => {
    const p = advisoryLockPeer(conString, name);
    peers.push(p);
    return p;
  };
  /** The name LockLens shows an advisory-lock name's lock by. */
  const pairOf = (name: string) => strToKey(name).join(':');
  const lockOf = async (pair: string): Promise<LockState | undefined> => (await backend.list([])).locks.find((l) => l.name.toString() === pair);
  const holderOf = async (pair: string) => (await lockOf(pair))?.holder?.owner;
  const waitersOf = async (pair: string) => (await lockOf(pair))?.waiters.length ?? 0;

  test("its lock is listed as the pair of its name's hash, held by the peer's session", async () => {
    const name = `nightly-billing-${++n}`;
    const holder = peer(name);
    await holder.until('acquired');
    const pair = pairOf(name);
    const lock = await lockOf(pair);
    assert.ok(lock, `listed as ${pair}`);
    assert.equal(lock.kind, 'queue', 'PostgreSQL queues its waiters');
    assert.match(lock.holder!.owner, /^\d+$/, 'owned by a backend pid');
    assert.ok(backend.acquirable(lock));
    holder.next();
    await holder.until('released');
  });

  test('LockLens waits for an advisory-lock holder; while LockLens holds, tryLock fails and lock() waits until release', async () => {
    const name = `report-${++n}`;
    const pair = pairOf(name);
    const first = peer(name);
    await first.until('acquired');
    const firstPid = await holderOf(pair);
    let hold: LockHold | undefined;
    let waited = false;
    const ours = backend.acquire(Buffer.from(pair), { ttlSeconds: 30, onQueue: (p) => (waited ||= p.ahead === 1) }).then((h) => (hold = h));
    await eventually(async () => waited && (await waitersOf(pair)) === 1, 10_000, 'LockLens waiting in pg_locks');
    assert.equal(hold, undefined);
    first.next();
    await first.until('released');
    await ours;
    const ourPid = await holderOf(pair);
    assert.notEqual(ourPid, firstPid);

    assert.equal(await createMutex(conString)(name).tryLock(), undefined, 'tryLock refused while LockLens holds');
    const second = peer(name);
    await second.until('waiting');
    await eventually(async () => (await waitersOf(pair)) === 1, 10_000, 'advisory-lock waiting in pg_locks');
    assert.equal(second.lines.includes('acquired'), false);
    assert.equal(await hold!.release(), true);
    await second.until('acquired');
    assert.notEqual(await holderOf(pair), ourPid);
    second.next();
    await second.until('released');
  });

  test("force release terminates the holder's session: the waiting advisory-lock gets the lock, the old holder hears it lost", async () => {
    const name = `migrations-${++n}`;
    const pair = pairOf(name);
    const stuck = peer(name);
    await stuck.until('acquired');
    const waiter = peer(name);
    await waiter.until('waiting');
    await eventually(async () => (await waitersOf(pair)) === 1, 10_000, 'the waiter in pg_locks');
    const lock = (await lockOf(pair))!;
    const result = await backend.forceRelease(lock, lock.holder!);
    assert.match(result.action, new RegExp(`pid ${lock.holder!.owner}`));
    await waiter.until('acquired');
    assert.match(await stuck.until('lost'), /terminat/);
    assert.equal(await holderOf(pair), lock.waiters[0].owner, 'the waiter shown next is the holder now');
    waiter.next();
    await waiter.until('released');
  });
});

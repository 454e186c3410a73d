import assert from 'node:assert/strict';
import { after, before, describe, it } from 'mocha';
import type * as vscode from 'vscode';
import { chooseFreeLayout, askMode } from '../../../src/extension/commands/acquirePrompts';
import type { LockLensApi } from '../../../src/extension/extension';
import { startRedis, type RedisServer } from '../../harness/redis';
import { storeSuite } from './fixture';

/**
 * Acquire Lock…'s question for a name that holds nothing, in a real extension host against a real redis-server: the
 * layouts named by their clients, the one inferred first with why, the pick taken; and no question for a held name.
 */
describe('Acquire Lock… on a free name asks its layout', function () {
  const CONNECTION = 'e2e-free-layout';
  const suite = storeSuite(CONNECTION);
  let redis: RedisServer;
  let api: LockLensApi;

  before(async () => {
    redis = await startRedis({ notify: 'KEA' });
    api = await suite.connect({ store: 'redis', endpoints: [redis.url], prefixes: ['fl:'] });
  });

  after(async () => {
    await redis?.dispose();
  });

  /** The layout question for `name`, answered with the item whose label starts with `answer`; what it offered. */
  async function ask(name: string, answer: string) {
    const connection = api.registry.get(CONNECTION)!;
    const backend = await connection.open();
    let offered: readonly vscode.QuickPickItem[] = [];
    suite.stubs.picks((items) => {
      offered = items;
      return items.find((i) => i.label.startsWith(answer));
    });
    const layout = await chooseFreeLayout(connection, backend, Buffer.from(name), []);
    return { layout, offered, mode: () => askMode(connection, backend, Buffer.from(name), undefined, layout) };
  }

  it("offers every layout by its clients, the siblings' first with why, and takes the one picked", async () => {
    await redis.cli(['SET', 'fl:a', 'x', 'PX', '60000']);
    await redis.cli(['SET', 'fl:b', 'y', 'PX', '60000']);
    await suite.sync();
    const { layout, offered } = await ask('fl:new', 'Redisson RLock');
    assert.deepEqual(
      offered.map((i) => [i.label, i.description]),
      [
        ['token: redis-py, redlock, Spring, SET NX PX', 'the 2 other locks under fl: are in this layout'],
        ['Redisson RLock: Redisson, node-redisson', undefined],
        ['Redisson RFairLock: Redisson getFairLock', undefined],
        ['Redisson RReadWriteLock: Redisson getReadWriteLock (taken for reading or writing)', undefined],
      ],
    );
    assert.equal(layout?.id, 'redisson');
    const held = await api.heldLocks.acquire({ connection: api.registry.get(CONNECTION)!, name: Buffer.from('fl:new'), ttl: 30, layout: layout!.id });
    assert.equal(await redis.cli(['TYPE', 'fl:new']), 'hash', 'taken as the Redisson lock picked');
    await api.heldLocks.release(held);
  });

  it('a read/write layout picked asks read or write next; a name that holds a lock is not asked', async () => {
    const picked = await ask('solo', 'Redisson RReadWriteLock');
    assert.equal(picked.layout?.id, 'redisson-rw');
    assert.equal(picked.offered[0].description?.startsWith('the default: token clients'), true, 'no siblings at the top: the default, with why');
    suite.stubs.picks((items) => items.find((i) => i.label === 'Write'));
    assert.equal(await picked.mode(), 'write');

    await suite.sync();
    const held = await ask('fl:a', 'token');
    assert.equal(held.layout, undefined);
    assert.deepEqual(held.offered, [], 'nothing asked');
  });
});

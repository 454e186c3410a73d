import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { REFUSED_PAUSE_MS, SessionEnds } from '../../src/core/zookeeper/sessionEnds';

/**
 * How often the ZooKeeper watch asks `cons` how a node's session ended, against a loopback socket that answers as a
 * ZooKeeper 3.5+ server does by default (`cons` not in the whitelist): a refusal is not asked for again at every node.
 */
describe('ZooKeeper session ends: asking cons', () => {
  let server: Server;
  let port = 0;
  let asked = 0;
  const sockets = new Set<Socket>();

  before(async () => {
    server = createServer((socket) => {
      asked++;
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.end('cons is not executed because it is not in the whitelist.\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });

  test('a refusal pauses the asking; nothing is told meanwhile, and it is asked again after the pause', async () => {
    let now = 1_000_000;
    const ends = new SessionEnds([{ host: '127.0.0.1', port }], () => now);
    await ends.ask([]);
    assert.equal(asked, 0, 'no node went: nothing asked');
    await ends.ask(['s1']);
    assert.equal(asked, 1);
    assert.equal(ends.lived('s1'), undefined, 'a refusal tells nothing');
    now += REFUSED_PAUSE_MS - 1;
    await ends.ask(['s2']);
    assert.equal(asked, 1, 'not asked again during the pause');
    assert.equal(ends.lived('s2'), undefined);
    now += 1;
    await ends.ask(['s3']);
    assert.equal(asked, 2, 'asked again once the pause is over');
  });
});

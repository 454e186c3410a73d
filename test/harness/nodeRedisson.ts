import { NodePeer } from './pythonPeer';

/**
 * npm `node-redisson`'s own RLock (a port of Redisson's: the same hash, counts, Lua and unlock message, its field
 * `<client uuid>:<lock uuid>`) as an interop peer in its own process: see PythonPeer. It prints `waiting`, then
 * `acquired <field>` once it holds (re-entered `holds` times), and after its gate unlocks as many times and prints
 * `released` (or `release-failed` if its field was gone). Its own process, because node-redisson's waiter keeps a timer
 * as long as the holder's TTL that nothing cancels, which would keep a test's process alive.
 */
const PEER = String.raw`
const [gate, modulePath, url, name, lease, holds] = process.argv.slice(1);
const fs = require('node:fs');
const { Redisson } = require(modulePath);
const u = new URL(url);
const redisson = new Redisson({ redis: { options: { host: u.hostname, port: Number(u.port) } } });
const lock = redisson.getLock(name);
const say = (...words) => console.log(words.join(' '));
(async () => {
  say('waiting');
  for (let i = 0; i < Number(holds); i++) await (lease === 'watchdog' ? lock.lock() : lock.lock(Number(lease)));
  say('acquired', lock.getClientName(lock.clientId));
  while (!fs.existsSync(gate)) await new Promise((r) => setTimeout(r, 20));
  try {
    for (let i = 0; i < Number(holds); i++) await lock.unlock();
    say('released');
  } catch (e) {
    say('release-failed', e.constructor.name);
  }
  await redisson.quit();
  process.exit(0);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
`;

export class NodeRedissonLock extends NodePeer {
  /** `leaseMs`: lock(leaseMs), which never renews; 'watchdog': lock(), renewed every 10 s to 30 s. */
  constructor(url: string, name: string, leaseMs: number | 'watchdog', holds = 1) {
    super('node-redisson', PEER, [require.resolve('node-redisson'), url, name, String(leaseMs), String(holds)]);
  }
}

import { GoPeer } from './goPeers';

/**
 * npm `node-redisson`'s own RLock (a port of Redisson's: the same hash, counts, Lua and unlock message, its field
 * `<client uuid>:<lock uuid>`) in a service's own process, since its waiter keeps a timer as long as the holder's TTL
 * that nothing cancels, which would keep a test's process alive. It prints `waiting`, `listening` once a try was
 * refused and it waits for an unlock message (on the channel, or on the stream with the 'streams' event adapter,
 * where no subscription shows it from outside), then `acquired <field>` once it holds (re-entered `holds` times); a
 * line on stdin unlocks as many times (`unlock ok`, or `unlock failed <error>` if its field was gone).
 */
const PEER = String.raw`
const [modulePath, url, name, lease, holds, eventAdapter] = process.argv.slice(1);
const { Redisson } = require(modulePath);
const u = new URL(url);
const redisson = new Redisson({ redis: { options: { host: u.hostname, port: Number(u.port) } }, eventAdapter });
const lock = redisson.getLock(name);
const say = (...words) => console.log(words.join(' '));
// Its executor's own emitter has a listener on the lock's channel only while lock() waits for a message.
const events = redisson.commandExecutor.eventEmitter;
const listening = setInterval(() => {
  if (events.listenerCount(lock.getChannelName()) === 0) return;
  say('listening');
  clearInterval(listening);
}, 10);
(async () => {
  say('waiting');
  for (let i = 0; i < Number(holds); i++) await (lease === 'watchdog' ? lock.lock() : lock.lock(Number(lease)));
  clearInterval(listening);
  say('acquired', lock.getClientName(lock.clientId));
  await new Promise((resolve) => process.stdin.once('data', resolve));
  try {
    for (let i = 0; i < Number(holds); i++) await lock.unlock();
    say('unlock', 'ok');
  } catch (e) {
    say('unlock', 'failed', e.constructor.name);
  }
  await redisson.quit();
  process.exit(0);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
`;

/**
 * Driven as a GoPeer is (lines on stdout, `next()` to unlock). `leaseMs`: lock(leaseMs), which never renews;
 * 'watchdog': lock(), renewed every 10 s to 30 s. `events`: how its unlocks are told, pub/sub (its default) or XADD to
 * the stream `redisson:events`.
 */
export function nodeRedissonLock(url: string, name: string, leaseMs: number | 'watchdog', holds = 1, events: 'pubsub' | 'streams' = 'pubsub'): GoPeer {
  return new GoPeer(process.execPath, ['-e', PEER, require.resolve('node-redisson'), url, name, String(leaseMs), String(holds), events]);
}

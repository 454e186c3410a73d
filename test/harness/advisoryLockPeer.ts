import { GoPeer } from './goPeers';

/**
 * npm advisory-lock (PostgreSQL session advisory locks on the two int4 halves of a sha256 of the name) in a service's
 * own process, since its lock connection has no error listener: when a force release terminates that connection, the
 * process hears of it as an uncaught error. It prints `waiting`, then `acquired` once `lock()` resolves; a line on
 * stdin unlocks (`released`, or `release-failed <message>`); a lost connection prints `lost <message>` and exits.
 */
const PEER = String.raw`
const [modulePath, conString, name] = process.argv.slice(1);
const mutex = require(modulePath).default(conString)(name);
process.on('uncaughtException', (e) => {
  console.log('lost', e.message);
  process.exit(3);
});
console.log('waiting');
mutex.lock().then((unlock) => {
  console.log('acquired');
  process.stdin.once('data', () =>
    unlock().then(() => console.log('released'), (e) => console.log('release-failed', e.message)).finally(() => process.exit(0)),
  );
});
`;

/** Driven as a GoPeer is (lines on stdout, `next()` to unlock): only the program differs. */
export function advisoryLockPeer(conString: string, name: string): GoPeer {
  return new GoPeer(process.execPath, ['-e', PEER, require.resolve('advisory-lock'), conString, name]);
}

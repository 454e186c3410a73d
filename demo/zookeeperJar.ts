import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';

/**
 * Debian's ZooKeeper (the `zookeeper` package, installed by scripts/setup.sh) run straight from its jar, without the
 * system service, on a loopback port with a data dir of the caller's. /usr/share/java/zookeeper.jar names its
 * dependencies in its manifest's Class-Path, so the jar alone is the classpath (what /usr/share/zookeeper/bin/zkEnv.sh
 * adds besides is the config dir, for log4j, which slf4j does not bind here anyway: the server logs nothing, so
 * whether it serves is asked with a client handshake).
 *
 * Shared by the demo (bundled into dist/demo.js) and the test harness (test/harness/zookeeper.ts, compiled by tsc into
 * out/), which is why it lives here and not under test/.
 */

export const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';
export const STANDALONE_MAIN = 'org.apache.zookeeper.server.ZooKeeperServerMain';
export const QUORUM_MAIN = 'org.apache.zookeeper.server.quorum.QuorumPeerMain';

/** Whether Debian's zookeeper jar and a `java` to run it are there. */
export function zooKeeperInstalled(): boolean {
  return existsSync(ZOOKEEPER_JAR) && spawnSync('sh', ['-c', 'command -v java'], { stdio: 'ignore' }).status === 0;
}

/** The command line of a server (`main`: STANDALONE_MAIN or QUORUM_MAIN) reading `configFile`. */
export function zooKeeperCommand(main: string, configFile: string): { command: string; args: string[] } {
  // A small heap and the client compiler only: a demo's or a test's server is nearly idle, and the JVM starts faster so.
  const jvm = ['-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Dzookeeper.admin.enableServer=false'];
  return { command: 'java', args: [...jvm, '-cp', ZOOKEEPER_JAR, main, configFile] };
}

/**
 * The zoo.cfg lines of one server: clients on 127.0.0.1:`port` only. A server grants sessions of 2 to 20 ticks, so
 * `tickMs` bounds the session timeouts clients can have.
 */
export function zooKeeperConfig(options: { readonly tickMs: number; readonly dataDir: string; readonly port: number }): string[] {
  return [
    `tickTime=${options.tickMs}`,
    `dataDir=${options.dataDir}`,
    `clientPort=${options.port}`,
    'clientPortAddress=127.0.0.1',
    // The AdminServer (Jetty on 8080) would collide between servers; nothing here uses it.
    'admin.enableServer=false',
    // Few snapshots are taken; the purge keeps the dir small anyway.
    'autopurge.snapRetainCount=3',
  ];
}

/**
 * Whether a ZooKeeper server on 127.0.0.1:`port` answers a client's handshake with a session (and so serves), asking
 * for a session of `sessionTimeoutMs`, which ends by itself shortly after the socket closes.
 */
export function answersHandshake(port: number, sessionTimeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once('connect', () => {
      // ConnectRequest: protocol 0, zxid 0, timeout, session 0, a 16-byte empty password, read-only false.
      const body = Buffer.alloc(45);
      body.writeInt32BE(sessionTimeoutMs, 12);
      body.writeInt32BE(16, 24);
      const frame = Buffer.alloc(4);
      frame.writeInt32BE(body.length);
      socket.write(Buffer.concat([frame, body]));
    });
    socket.once('data', (d: Buffer) => done(d.length >= 8 && d.readInt32BE(4) === 0));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}

import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports';
import { sleep } from '../src/core/sleep';
import { Group } from './processes';
import { answersHandshake, STANDALONE_MAIN, zooKeeperCommand, zooKeeperConfig } from './zookeeperJar';

/**
 * The demo's own ZooKeeper: Debian's, one standalone server on a free loopback port (see zookeeperJar.ts), its data
 * dir under the demo's temp dir. ZooKeeper's own tick (2 s), so clients get the session timeouts they would in
 * production (4 to 40 s).
 */
export interface DemoZooKeeper {
  /** zookeeper://127.0.0.1:PORT */
  readonly url: string;
  readonly dataDir: string;
  readonly group: Group;
}

const TICK_MS = 2000;

export async function startZooKeeper(root: string, runId: string): Promise<DemoZooKeeper> {
  // A port found free can be taken before ZooKeeper binds it: try again with another. ZooKeeper logs nothing here
  // (see zookeeperJar.ts) and exits at once when it cannot bind, so an early exit is taken for that.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const dir = join(root, 'zookeeper');
    const dataDir = join(dir, 'data');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const config = join(dir, 'zoo.cfg');
    writeFileSync(config, zooKeeperConfig({ tickMs: TICK_MS, dataDir, port }).join('\n') + '\n');
    const { command, args } = zooKeeperCommand(STANDALONE_MAIN, config);
    // If the demo is killed outright, the watchdog removes the demo's whole temp dir once ZooKeeper has stopped.
    const group = new Group('zookeeper', command, args, runId, { tmpDir: root });
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (await answersHandshake(port, 2 * TICK_MS)) return { url: `zookeeper://127.0.0.1:${port}`, dataDir, group };
      if (!group.running || Date.now() > deadline) break;
      await sleep(50);
    }
    const timedOut = Date.now() > deadline;
    await group.stop(1000);
    if (timedOut || attempt >= 3) {
      throw new Error(`ZooKeeper did not start${timedOut ? ' in 20 s' : ''}:\n${group.output.slice(-3000)}`);
    }
  }
}

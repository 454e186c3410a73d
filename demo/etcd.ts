import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports';
import { sleep } from '../src/core/sleep';
import { Group } from './processes';

/** The demo's own etcd: Debian's `etcd`, one member on free loopback ports, its data dir under the demo's temp dir. */
export interface DemoEtcd {
  readonly endpoint: string;
  readonly dataDir: string;
  readonly group: Group;
}

export async function startEtcd(root: string, runId: string): Promise<DemoEtcd> {
  // A port found free can be taken before etcd binds it: try again with others.
  for (let attempt = 1; ; attempt++) {
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    const dataDir = join(root, 'etcd');
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const endpoint = `127.0.0.1:${clientPort}`;
    const group = new Group(
      'etcd',
      'etcd',
      [
        '--name=demo',
        `--data-dir=${dataDir}`,
        `--listen-client-urls=http://${endpoint}`,
        `--advertise-client-urls=http://${endpoint}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=demo=http://127.0.0.1:${peerPort}`,
        '--initial-cluster-state=new',
        '--initial-cluster-token=locklens-demo',
        '--logger=zap',
        '--log-outputs=stderr',
      ],
      runId,
      // If the demo is killed outright, etcd's watchdog removes the demo's whole temp dir once etcd has stopped.
      { tmpDir: root },
    );
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (/serving client traffic|ready to serve client requests/.test(group.output)) return { endpoint, dataDir, group };
      if (!group.running || Date.now() > deadline) break;
      await sleep(25);
    }
    await group.stop(1000);
    const inUse = /address already in use/.test(group.output);
    if (!inUse || attempt >= 3) {
      throw new Error(`etcd did not start${Date.now() > deadline ? ' in 20 s' : ''}:\n${group.output.slice(-3000)}`);
    }
  }
}

import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports';
import { sleep } from '../src/core/sleep';
import { Group } from './processes';

/**
 * The demo's own Redis: Debian's `redis-server` on a free loopback port, nothing persisted (its dir, under the demo's
 * temp dir, stays empty), and keyspace notifications on (`KEA`) so that LockLens follows it live instead of polling.
 */
export interface DemoRedis {
  /** redis://127.0.0.1:PORT */
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  readonly group: Group;
}

export async function startRedis(root: string, runId: string): Promise<DemoRedis> {
  // A port found free can be taken before redis-server binds it: try again with another.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const dir = join(root, 'redis');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const group = new Group(
      'redis',
      'redis-server',
      [
        '--port', String(port),
        '--bind', '127.0.0.1',
        '--dir', dir,
        '--save', '',
        '--appendonly', 'no',
        '--notify-keyspace-events', 'KEA',
        '--daemonize', 'no',
        '--logfile', '',
      ],
      runId,
      // If the demo is killed outright, the watchdog removes the demo's whole temp dir once redis-server has stopped.
      { tmpDir: root },
    );
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (/Ready to accept connections/.test(group.output)) return { url: `redis://127.0.0.1:${port}`, port, dir, group };
      if (!group.running || Date.now() > deadline) break;
      await sleep(25);
    }
    await group.stop(1000);
    const inUse = /Address already in use/i.test(group.output);
    if (!inUse || attempt >= 3) {
      throw new Error(`redis-server did not start${Date.now() > deadline ? ' in 10 s' : ''}:\n${group.output.slice(-3000)}`);
    }
  }
}

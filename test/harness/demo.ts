import { randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { processesWithEnv } from '../../demo/processes';
import { Procs, type Proc } from './cli';

/**
 * The demo (dist/demo.js, built by npm run build) as a test runs it: started with a marker variable in its environment
 * that every process it starts inherits, so that a test can check that nothing is left after it stops, and `dispose`
 * can SIGKILL every one of them whatever happened.
 */

export const DEMO = resolve(__dirname, '../../../dist/demo.js');
const MARK = 'LOCKLENS_DEMO_TEST_MARK';

export interface RunningDemo {
  readonly proc: Proc;
  /** host:port of the demo's etcd. */
  readonly endpoint: string;
  /** redis://127.0.0.1:PORT of the demo's Redis ('' when started with --no-redis). */
  readonly redisUrl: string;
  /** The demo's temp dir (etcd's data is in it). */
  readonly tempDir: string;
  /** The stuck holder's lease (hex) when the demo became ready. */
  readonly stuckLease: string;
  /** The stuck Redis token (32 hex digits, no expiry) when the demo became ready ('' without Redis). */
  readonly stuckToken: string;
  /** zookeeper://127.0.0.1:PORT of the demo's ZooKeeper ('' when started with --no-zookeeper). */
  readonly zookeeperUrl: string;
  /** The stuck ZooKeeper holder when the demo became ready: its node (Curator's layout), session (hex) and czxid. */
  readonly stuckZnode: { readonly node: string; readonly session: string; readonly token: number } | undefined;
  /** Pids of every process carrying this run's marker (the demo included, while it runs). */
  marked(): number[];
  /** Kills the demo's group and every process carrying the marker. */
  dispose(): Promise<void>;
}

export async function startDemo(args: readonly string[] = ['--no-editor']): Promise<RunningDemo> {
  if (!existsSync(DEMO)) throw new Error(`${DEMO} is missing: npm run build makes it`);
  const mark = randomUUID();
  const procs = new Procs('');
  const marked = () => processesWithEnv(MARK, mark);
  let proc: Proc | undefined;
  const dispose = async () => {
    // As a user would stop it first (it stops its processes and removes its temp dir), then by force: its group, every
    // process carrying the marker, and its temp dir.
    if (proc?.running) {
      proc.signal('SIGTERM');
      await proc.wait(30_000).catch(() => undefined);
    }
    await procs.dispose();
    for (const pid of marked()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    const dir = proc && /temp dir +(\/\S+)/.exec(proc.stdout)?.[1];
    if (dir && /locklens-demo-/.test(dir)) rmSync(dir, { recursive: true, force: true });
  };
  proc = procs.spawn(process.execPath, [DEMO, ...args], { env: { [MARK]: mark } });
  try {
    const ready = await proc.until((p) => /ready: (\S+)/.exec(p.stdout) ?? undefined, 'the demo says ready', 90_000);
    return {
      proc,
      endpoint: ready[1],
      redisUrl: /^\S+ redis +(redis:\/\/\S+)/m.exec(proc.stdout)?.[1] ?? '',
      tempDir: /temp dir +(\/\S+)/.exec(proc.stdout)?.[1] ?? '',
      stuckLease: /held with lease ([0-9a-f]+)/.exec(proc.stdout)?.[1] ?? '',
      stuckToken: /held by token ([0-9a-f]+)/.exec(proc.stdout)?.[1] ?? '',
      zookeeperUrl: /^\S+ zookeeper +(zookeeper:\/\/\S+)/m.exec(proc.stdout)?.[1] ?? '',
      stuckZnode: stuckZnode(proc.stdout),
      marked,
      dispose,
    };
  } catch (e) {
    await dispose();
    throw e;
  }
}

/** The demo's line `stuck  NAME held by session S (node N, token T) in Curator's layout…`, read. */
function stuckZnode(stdout: string): RunningDemo['stuckZnode'] {
  const m = /held by session ([0-9a-f]+) \(node (\S+), token (\d+)\)/.exec(stdout);
  return m ? { session: m[1], node: m[2], token: Number(m[3]) } : undefined;
}

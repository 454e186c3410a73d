import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { spawnGuarded } from './codeServer';
import { sleep } from '../src/core/sleep';

/**
 * The demo's child processes. Each runs in a process group of its own (led by the watchdog of `spawnGuarded`, which
 * stops the group if the demo dies without doing so), and every one carries `LOCKLENS_DEMO_RUN=<run id>` in its
 * environment, which its own children inherit: at the end the demo looks for any process still carrying it (a
 * grandchild that left its group, say) and kills it, so that nothing it started outlives it.
 */

export const RUN_VAR = 'LOCKLENS_DEMO_RUN';

export interface GroupOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Removed by the watchdog if the demo dies without stopping the group. */
  readonly tmpDir?: string;
  /** Called with each line the process writes (stdout and stderr). */
  readonly onLine?: (line: string) => void;
}

/** One process group the demo started. */
export class Group {
  readonly proc: ChildProcess;
  readonly exited: Promise<void>;
  private tail = '';

  constructor(
    readonly name: string,
    command: string,
    args: readonly string[],
    runId: string,
    options: GroupOptions = {},
  ) {
    this.proc = spawnGuarded(command, args, {
      env: { ...process.env, ...options.env, [RUN_VAR]: runId },
      cwd: options.cwd,
      tmpDir: options.tmpDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((done) => this.proc.once('exit', () => done()));
    let partial = '';
    const collect = (d: Buffer) => {
      const text = d.toString();
      this.tail = (this.tail + text).slice(-20_000);
      if (!options.onLine) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      lines.forEach((l) => options.onLine!(l));
    };
    this.proc.stdout!.on('data', collect);
    this.proc.stderr!.on('data', collect);
  }

  /** The process group id (the watchdog's pid). */
  get pgid(): number {
    return this.proc.pid!;
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** The last output, for error messages. */
  get output(): string {
    return this.tail;
  }

  /** Signals every process of the group. */
  signal(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.pgid, signal);
    } catch {
      // the group is gone
    }
  }

  /** Whether any process of the group is still there (the leader may have gone before its children). */
  get alive(): boolean {
    try {
      process.kill(-this.pgid, 0);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Stops the group: SIGTERM to every process in it, SIGKILL to whatever is left after `graceMs`. Resolves once the
   * group is empty.
   */
  async stop(graceMs = 3000): Promise<void> {
    this.signal('SIGTERM');
    const deadline = Date.now() + graceMs;
    while (this.alive && Date.now() < deadline) await sleep(50);
    this.signal('SIGKILL');
    while (this.alive) await sleep(20);
    if (this.running) await this.exited;
    this.proc.stdout!.destroy();
    this.proc.stderr!.destroy();
  }
}

/** The pids of the processes whose environment has `variable=value` (other users' processes are not readable: skipped). */
export function processesWithEnv(variable: string, value: string): number[] {
  const needle = Buffer.from(`${variable}=${value}\0`);
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`);
      // Every entry, the last included, ends with a NUL; one at the very start has nothing before it.
      if (environ.subarray(0, needle.length).equals(needle) || environ.includes(Buffer.concat([Buffer.from([0]), needle]))) {
        pids.push(Number(entry));
      }
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

/** SIGKILLs every process carrying `RUN_VAR=runId`; returns how many there were. */
export function killStragglers(runId: string): number {
  const pids = processesWithEnv(RUN_VAR, runId);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return pids.length;
}

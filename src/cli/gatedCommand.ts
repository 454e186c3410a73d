import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';

/**
 * The user's command, started *before* the lock is held and blocked until it is: `sh` waits for the word `go` on
 * fd 3, then `exec`s the command in its own process. Forking from Node costs milliseconds, and a waiter that forks
 * only after the predecessor's delete adds them to every handoff; this way the handoff is a pipe write.
 *
 * The command can never run without the lock: if LockLens exits, fails or gives up, fd 3 closes and the gate exits
 * 125 without running anything.
 */
const GATE = 'IFS= read -r word <&3 && [ "$word" = go ] || exit 125; exec 3<&-; exec "$@"';

/** The exit code of a gate that was closed without `go`: the command never ran. */
export const GATE_CLOSED = 125;

export class GatedCommand {
  private readonly child: ChildProcess;
  readonly exited: Promise<number>;

  constructor(command: readonly string[], env: NodeJS.ProcessEnv) {
    this.child = spawn('sh', ['-c', GATE, 'locklens-gate', ...command], { stdio: ['inherit', 'inherit', 'inherit', 'pipe'], env });
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 1))),
    );
  }

  /** Lets the command run. */
  open(): void {
    (this.child.stdio[3] as Writable).end('go\n');
  }

  /** Makes sure the command never runs (if it has not been let run yet) and waits for the gate to exit. */
  async close(): Promise<void> {
    (this.child.stdio[3] as Writable).destroy();
    await this.exited;
  }

  kill(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }
}

import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';

/**
 * The user's command, started *before* the lock is held and blocked until it is: `sh` waits for the word `go` (and
 * the revision the lock was taken at, for ETCD_LOCK_REV) on fd 3, then `exec`s the command in its own process.
 * Forking from Node costs milliseconds, and a waiter that forks only after the predecessor's delete adds them to
 * every handoff; this way the handoff is a pipe write.
 *
 * The command can never run without the lock: if LockLens exits, fails or gives up, fd 3 closes and the gate exits
 * 125 without running anything.
 */
const GATE =
  'IFS=" " read -r word rev <&3 && [ "$word" = go ] || exit 125; exec 3<&-; if [ -n "$rev" ]; then ETCD_LOCK_REV=$rev; export ETCD_LOCK_REV; fi; exec "$@"';

/** How long the command has to stop after SIGTERM before it is killed. */
const GRACE_MS = 10_000;

export class GatedCommand {
  private readonly child: ChildProcess;
  readonly exited: Promise<number>;
  private isOpen = false;

  constructor(command: readonly string[], env: NodeJS.ProcessEnv) {
    this.child = spawn('sh', ['-c', GATE, 'locklens-gate', ...command], { stdio: ['inherit', 'inherit', 'inherit', 'pipe'], env });
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 1)));
      this.child.once('error', () => resolve(127));
    });
    // A gate that died (a signal to the whole process group, say) makes the write fail with EPIPE: that is its exit,
    // reported through `exited`, not a reason to crash before the lock is released.
    this.pipe.on('error', () => undefined);
  }

  /**
   * Lets the command run (once: later calls do nothing); `revision` is the revision the lock was taken at (etcdctl's
   * ETCD_LOCK_REV), where the store has one.
   */
  open(revision: number | null): void {
    if (this.isOpen) return;
    this.isOpen = true;
    this.pipe.end(`go ${revision ?? ''}\n`);
  }

  get opened(): boolean {
    return this.isOpen;
  }

  /** Calls `listener` synchronously when the process exits (before `exited` resolves). */
  onExit(listener: () => void): void {
    if (!this.running) return void queueMicrotask(listener);
    this.child.once('exit', () => listener());
  }

  /** Makes sure the command never runs (if it has not been let run yet) and waits for the gate to exit. */
  async close(): Promise<void> {
    this.pipe.destroy();
    await this.exited;
  }

  /** Asks the command to stop, and kills it if it has not after a grace period. */
  stop(): void {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.running && this.child.kill('SIGKILL'), GRACE_MS);
    void this.exited.then(() => clearTimeout(timer));
  }

  private get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  private get pipe(): Writable {
    return this.child.stdio[3] as Writable;
  }
}

import type { ChildProcess } from 'node:child_process';

/** The servers and peers the harness started that are still running: SIGKILLed when the test process exits. */
const running = new Set<ChildProcess>();
process.on('exit', () => running.forEach((p) => p.kill('SIGKILL')));

/** Kills `proc` when the test process exits, unless it has exited by then; returns it. */
export function killOnExit<P extends ChildProcess>(proc: P): P {
  proc.on('exit', () => running.delete(proc));
  running.add(proc);
  return proc;
}

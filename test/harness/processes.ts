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

/** Starts `server`; if it does not come up, disposes of it (its process and its dir) and rethrows. */
export async function startOrDispose<S extends { start(): Promise<void>; dispose(): Promise<void> }>(server: S): Promise<S> {
  try {
    await server.start();
  } catch (e) {
    await server.dispose();
    throw e;
  }
  return server;
}

/** Sends `signal` to `proc` unless it has exited, and resolves once it has. */
export async function stopProcess(proc: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill(signal);
  await exited;
}

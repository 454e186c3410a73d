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

/**
 * Starts servers side by side; when one fails, those that started are stopped before the error is thrown. A server
 * left running (its output piped to the test) keeps the test's process alive for ever after a failed `before`.
 */
export async function startAll<T extends readonly Promise<{ dispose(): Promise<void> }>[]>(starts: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(starts);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await Promise.all(settled.map((s) => (s.status === 'fulfilled' ? s.value.dispose() : undefined)));
    throw failed.reason;
  }
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as { -readonly [K in keyof T]: Awaited<T[K]> };
}

/** Sends `signal` to `proc` unless it has exited, and resolves once it has. */
export async function stopProcess(proc: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill(signal);
  await exited;
}

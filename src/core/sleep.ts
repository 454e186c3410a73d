/**
 * Waits `ms`, or less: until `signal` aborts or `wake` settles, whichever comes first. Never rejects, so a loop that
 * sleeps between tries checks its own abort afterwards. `unref`: the timer alone does not keep the process alive (a
 * retry's pause in a CLI that is done).
 */
export function sleep(ms: number, signal?: AbortSignal, options: { readonly wake?: Promise<unknown>; readonly unref?: boolean } = {}): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    if (options.unref) timer.unref();
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
    void options.wake?.then(done, done);
  });
}

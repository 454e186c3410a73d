import type { Socket } from 'node:net';

/**
 * A diagnostic look at a socket, for explaining why a store's client could not connect: the first outcome `listen`
 * reports wins (or `silent` after `timeoutMs`), and the socket is closed at once.
 */
export function probe<T>(socket: Socket, timeoutMs: number, silent: T, listen: (done: (outcome: T) => void) => void): Promise<T> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (outcome: T) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(outcome);
    };
    socket.setTimeout(timeoutMs, () => done(silent));
    listen(done);
  });
}

/** Bytes a server sent, as text fit for a message: anything outside printable ASCII becomes '?'. */
export function printable(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?');
}

/** The first line of what a server sent (of its first 60 bytes), fit for a message saying what answered instead. */
export function firstLine(got: Buffer): string {
  return printable(got.toString('latin1', 0, Math.min(got.length, 60)).split(/\r?\n/)[0]);
}

/**
 * How long a probe after a failed connection may take: a share of the dial timeout of its own, since the connection's
 * deadline is spent by the time it runs.
 */
export function probeBudgetMs(dialTimeoutMs: number): number {
  return Math.max(500, Math.min(dialTimeoutMs, 3000));
}

/** The clock rules every recipe shares: how long a hold is certainly ours, and how often a waiter tries again. */

/** How often a waiter tries again when nothing wakes it sooner (redis-py polls every 0.1 s). */
export const RETRY_MS = 100;

/** Redlock's allowance for clock drift between us and the servers: 1% of the TTL plus 2 ms. */
function driftMs(ttlMs: number): number {
  return Math.round(ttlMs * 0.01) + 2;
}

/**
 * Until when a PX of `ttlMs` set by a command sent at `sentAt` is certainly still in force: the server started the TTL
 * when it ran the command, which was after we sent it, so counting from the send (less the drift) never overestimates.
 */
export function validUntil(sentAt: number, ttlMs: number): number {
  return sentAt + ttlMs - driftMs(ttlMs);
}

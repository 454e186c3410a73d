import type { Capabilities } from '../../core/backend';
import { lockHealth, type MemberHealth } from '../../core/lockHealth';
import type { LockState } from '../../core/lockState';
import type { StoreConnection } from '../connections';
import { longHoldMs } from '../settings';

export function freshHealth(connection: StoreConnection, lock: LockState): MemberHealth[] {
  return lockHealth(lock, connection.clock, (id) => connection.watch?.lease(id), { longHoldMs: longHoldMs() });
}

/**
 * Each member's health, computed once per lock state per redraw: every member row of a lock asks for it, and computing
 * it per row would be quadratic in the queue's length.
 */
export class HealthCache {
  private readonly cache = new WeakMap<LockState, { generation: number; health: MemberHealth[] }>();
  /** Counts redraws: cached health is good for one (TTLs and ages move between them). */
  private generation = 0;

  get(connection: StoreConnection, lock: LockState): MemberHealth[] {
    const cached = this.cache.get(lock);
    if (cached && cached.generation === this.generation) return cached.health;
    const health = freshHealth(connection, lock);
    this.cache.set(lock, { generation: this.generation, health });
    return health;
  }

  nextRedraw(): void {
    this.generation++;
  }
}

/** What the connection's store has; while it is not connected, nothing. */
export function capabilities(connection: StoreConnection): Capabilities {
  return connection.backend?.capabilities ?? NOTHING;
}

const NOTHING: Capabilities = { waiters: false, fencingTokens: false, ttl: false, owner: 'token', queuedAcquire: false, readWriteLocks: false };

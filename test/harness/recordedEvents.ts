import type { HoldEnd } from '../../src/shared/holdEnds';
import type { EventMember, LockEvent } from '../../src/core/lockEventTypes';

/**
 * Lock events as a watcher would send them, for tests of the recorded history that need no store: the lock `name` of
 * connection `connection`, its member `key` owned by `owner`.
 */
export function eventsOf(connection: string, name: string) {
  const base = (key: string, at: number, owner = `owner-of-${key}`, token: number | null = null) => ({
    connection,
    lockId: `id:${name}`,
    lock: name,
    kind: 'queue' as const,
    member: { key, owner, token } satisfies EventMember,
    at,
    exact: true,
  });
  return {
    holdStarted: (key: string, at: number, o: { exact?: boolean; waitedMs?: number | null; owner?: string; token?: number | null } = {}): LockEvent => ({
      ...base(key, at, o.owner, o.token),
      type: 'holdStarted',
      exact: o.exact ?? true,
      waitedMs: o.waitedMs ?? null,
      handoff: false,
    }),
    holdEnded: (key: string, at: number, how: HoldEnd | null, heldMs: number | null, o: { owner?: string; token?: number | null } = {}): LockEvent => ({
      ...base(key, at, o.owner, o.token),
      type: 'holdEnded',
      how,
      heldMs,
    }),
    waitStarted: (key: string, at: number): LockEvent => ({ ...base(key, at), type: 'waitStarted' }),
    waitEnded: (key: string, at: number, granted: boolean, waitedMs: number | null): LockEvent => ({ ...base(key, at), type: 'waitEnded', granted, waitedMs }),
  };
}

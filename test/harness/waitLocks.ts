import { keyId } from '../../src/core/keys';
import type { LockKind, LockMember, LockState } from '../../src/core/lockState';

/**
 * LockStates for the diagnosis's unit tests and benchmark, as a store's reader would make them: a member's key is
 * `<lock>/<owner>` (a Go Mutex's key under its lease), its token a number that is new when it holds or queues again.
 */
export function member(lock: string, owner: string, token = 1, mode?: 'read' | 'write'): LockMember {
  return {
    key: Buffer.from(`${lock}/${owner}`),
    convention: 'go-mutex',
    owner,
    expiresWith: owner ? 'lease' : 'nothing',
    lease: owner,
    token,
    holds: null,
    ...(mode ? { mode } : {}),
    valuePreview: Buffer.alloc(0),
    valueSize: 0,
  };
}

/** A lock `name` held by `holder` (none: null) with `waiters` queued in order; `tokens` gives members' tokens by owner. */
export function lockOf(name: string, holder: string | null, waiters: readonly string[] = [], options: { kind?: LockKind; tokens?: Record<string, number> } = {}): LockState {
  const token = (owner: string) => options.tokens?.[owner] ?? 1;
  return {
    id: keyId(Buffer.from(name)),
    name: Buffer.from(name),
    kind: options.kind ?? 'queue',
    holder: holder === null ? null : member(name, holder, token(holder)),
    waiters: waiters.map((w) => member(name, w, token(w))),
  };
}

/**
 * Every failure LockLens reports is a LockLensError with a stable `code`, so the CLI can map it to an exit code and the
 * extension to a message, and neither has to parse gRPC text. `detail` carries what the user needs to fix it.
 */
export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'UNREACHABLE'
  | 'TIMEOUT'
  | 'AUTH'
  | 'PERMISSION'
  | 'TLS'
  | 'LOCKED'
  | 'LOCK_LOST'
  /** A force-release found the lock no longer as the user was shown it (it changed hands): nothing was done. */
  | 'LOCK_CHANGED'
  | 'LEASE_NOT_FOUND'
  | 'CANCELLED'
  | 'CLOSED'
  | 'ETCD'
  /** The store's support is not in this installation (its store package is not installed). */
  | 'NOT_INSTALLED'
  /** Any other failure reported by a store (Redis, …), with its message. */
  | 'STORE';

export class LockLensError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LockLensError';
  }
}

export function isLockLensError(e: unknown, code?: ErrorCode): e is LockLensError {
  return e instanceof LockLensError && (code === undefined || e.code === code);
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Rejects with CANCELLED when `signal` aborts; the reason, if it is a LockLensError, is passed through. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal);
}

export function abortError(signal: AbortSignal): LockLensError {
  const reason: unknown = signal.reason;
  if (reason instanceof LockLensError) return reason;
  return new LockLensError('CANCELLED', reason instanceof Error ? reason.message : 'cancelled');
}

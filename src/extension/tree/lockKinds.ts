import type { LockState } from '../../core/lockState';

// Exhaustive switches: a new lock kind has to say where it stands.

/** A single-key lock is its one key, held while it exists: no queue, and no row between the lock and its key. */
export function isSingleKey(lock: LockState): boolean {
  switch (lock.kind) {
    case 'single':
      return true;
    case 'queue':
    case 'election':
    case 'readwrite':
      return false;
  }
}

/** An election's holder is its leader and its waiters are candidates. */
export function isElection(lock: LockState): boolean {
  switch (lock.kind) {
    case 'election':
      return true;
    case 'queue':
    case 'single':
    case 'readwrite':
      return false;
  }
}

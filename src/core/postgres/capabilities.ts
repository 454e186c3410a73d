import type { Capabilities } from '../backend';

export const POSTGRES_CAPABILITIES: Capabilities = {
  waiters: true,
  fencingTokens: false,
  // Lock-table rows with an expiry column are sampled; advisory locks have none (they last as long as their session).
  ttl: true,
  // A session's locks can only be freed by terminating it, which is force release itself: no leases.
  owner: 'connection',
  queuedAcquire: true,
  // pg_advisory_lock_shared: shared holders are readers, pg_advisory_lock's holder the writer.
  readWriteLocks: true,
};

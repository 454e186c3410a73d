import type { Capabilities } from '../backend';

export const MYSQL_CAPABILITIES: Capabilities = {
  // The holder and the connections blocked in GET_LOCK (MariaDB: the processlist; MySQL 8: performance_schema).
  waiters: true,
  fencingTokens: false,
  // Lock-table rows with an expiry column (ShedLock's lock_until); GET_LOCK locks have none.
  ttl: true,
  owner: 'connection',
  // The server grants a freed name to one of its waiters from its metadata-lock queue, which no table shows: the
  // waiters' order here is how long each has waited, an estimate (whole seconds on MySQL), and a waiter killed or
  // timed out leaves unseen. LockLens cannot promise a position, so an acquire only says "held by another".
  queuedAcquire: false,
  readWriteLocks: false,
};

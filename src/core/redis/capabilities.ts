import type { Capabilities } from '../backend';

export const REDIS_CAPABILITIES: Capabilities = {
  waiters: true,
  fencingTokens: false,
  ttl: true,
  owner: 'token',
  queuedAcquire: false,
  readWriteLocks: true,
};

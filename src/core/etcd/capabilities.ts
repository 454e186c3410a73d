import type { Capabilities } from '../backend';

export const ETCD_CAPABILITIES: Capabilities = {
  waiters: true,
  fencingTokens: true,
  ttl: true,
  owner: 'lease',
  queuedAcquire: true,
  readWriteLocks: false,
};

import type { Capabilities } from '../backend';

export const ZOOKEEPER_CAPABILITIES: Capabilities = {
  waiters: true,
  // The creation zxid (czxid) of the holder's node: cluster-wide and increasing, so a later holder's is larger.
  fencingTokens: true,
  // No per-node TTL, and a session's remaining time is not readable: nothing to count down.
  ttl: false,
  // A session owns every ephemeral node its client made, as an etcd lease owns its keys, but ZooKeeper has no API to
  // close another client's session (only the client, knowing the session's password, can): the backend has no leases.
  owner: 'session',
  queuedAcquire: true,
  // Curator's InterProcessReadWriteLock and kazoo's ReadLock/WriteLock share one recipe: taken for read or write.
  readWriteLocks: true,
};

import * as l10n from '@vscode/l10n';
import { LockLensError } from '../errors';
import type { StoreDescriptor } from '../storeDescriptor';
import { ZOOKEEPER_CAPABILITIES } from './capabilities';
import { ZOOKEEPER_LAYOUTS } from './layouts';
import type { Convention } from './conventions';
import { parseZooKeeperUrl } from './url';

export const zookeeperStore: StoreDescriptor<Convention> = {
  kind: 'zookeeper',
  displayName: 'ZooKeeper',
  schemes: ['zookeeper'],
  capabilities: ZOOKEEPER_CAPABILITIES,
  conventions: {
    'curator-mutex': 'Curator InterProcessMutex',
    'curator-read': 'Curator InterProcessReadWriteLock (read)',
    'curator-write': 'Curator InterProcessReadWriteLock (write)',
    'curator-latch': 'Curator LeaderLatch',
    'curator-semaphore': 'Curator InterProcessSemaphoreV2',
    'kazoo-lock': 'kazoo Lock',
    'kazoo-rlock': 'kazoo ReadLock',
    'kazoo-semaphore': 'kazoo Semaphore',
    'zk-recipe': 'ZooKeeper lock recipe (-lock-<sequence>)',
  },
  freeNameLayouts: ZOOKEEPER_LAYOUTS,
  checkEndpoints(endpoints) {
    if (endpoints.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'no ZooKeeper URL given: write zookeeper://host:port[,host:port][/chroot]');
    for (const text of endpoints) parseZooKeeperUrl(text);
  },
  // LockLens's ZooKeeper client speaks no TLS.
  endpointsAskTls: () => false,
  open: (profile) => (require('./zookeeperBackend') as typeof import('./zookeeperBackend')).ZooKeeperBackend.open(profile),
  namespaces: false,
  lockTables: false,
  nameSeparator: '/',
  environment: {},
  form: {
    libraries: () => l10n.t('Curator InterProcessMutex and LeaderLatch, kazoo Lock, the ephemeral-sequential recipe'),
    endpointsPrompt: () => l10n.t('ZooKeeper URL: zookeeper://host:port[,host:port…][/chroot] (the servers of one ensemble)'),
    endpointsExample: 'zookeeper://127.0.0.1:2181',
    authLabel: () => l10n.t('Digest user name and password'),
    userPrompt: () => l10n.t('Digest user name'),
    tls: false,
    watchPrompt: () => l10n.t('A path: every lock node below it is read (Curator, kazoo and recipe nodes are recognised by name), e.g. /locks'),
    firstPrefixPrompt: () => l10n.t('A path to watch for locks, e.g. /locks (leave empty to add one later)'),
    prefixExample: '/locks',
    emptyPrefixWatchesAll: false,
  },
  cli: {
    url: 'ZooKeeper: zookeeper://HOST:PORT[,HOST:PORT...][/CHROOT][?sessionTimeout=MS] (one ensemble)',
    list:
      "ZooKeeper (--url zookeeper://…): a prefix is a znode path, read with everything below it (/app, not /ap); a lock is a znode whose children are contenders named as Curator (_c_<uuid>-lock-<seq>, its read/write locks, leader latches as elections), kazoo (<hex>__lock__<seq>, __rlock__) or ZooKeeper's recipe (…-lock-<seq>) name them. The lowest sequence holds, the others wait in sequence order. A member's owner is the session its ephemeral node goes with, its token the node's creation zxid (czxid), its data what the client wrote there (kazoo's identifier, Curator's IP). There is no TTL: a node lasts as long as its session, whose time left cannot be read. A kazoo Semaphore (leases <hex> under its path, its limit in the path's data, its Lock at PATH-__lock__) and a Curator InterProcessSemaphoreV2 (leases/ and locks/ under its path) are one semaphore each: its permits, each lease a holder, the contenders of its lock the waiters.",
    watch:
      'ZooKeeper is followed by watches on the znodes under each path (set again after each event), read again after a reconnect and on a new session when ZooKeeper expired the watching one; a lock whose last contender left is removed.',
    acquire:
      "ZooKeeper (--url zookeeper://…): NAME is the lock's znode path. Joins it in the layout the lock already has (Curator's _c_<uuid>-lock-, kazoo's <hex>__lock__, or ZooKeeper's recipe's …-lock-), --layout's for a NAME nobody uses yet: an ephemeral sequential node that watches only the node just ahead of it, so Curator's and kazoo's clients queue with it in sequence order. Each acquire has a ZooKeeper session of its own whose timeout is --ttl (the server grants a timeout within its bounds, by default 2 to 20 ticks: 4 s to 40 s); the node goes with that session, so the lock of a locklens that died is free once the session times out. A leader latch is not joined. --mode takes Curator's InterProcessReadWriteLock or kazoo's ReadLock/WriteLock.",
    severalNames: 'ZooKeeper: on one session, as one kazoo client or Curator framework takes several locks: every node is that session\'s (its timeout is --ttl), so others see one owner.',
    unlock:
      "ZooKeeper: deletes the holder's node if it is still the one created at the zxid shown (its fencing token), by the session shown; the contender watching it (the next in sequence) wakes and takes the lock. Its session lives on, and so do its other nodes: ZooKeeper offers no way to end another client's session. A semaphore's permit is its lease: only that lease is deleted, and the waiter holding the semaphore's lock takes the permit.",
    fencingToken: "the node's creation zxid, czxid",
    lost: 'its node deleted, its session expired, or nothing heard for a session timeout',
  },
};

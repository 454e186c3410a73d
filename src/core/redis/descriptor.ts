import * as l10n from '@vscode/l10n';
import { LockLensError } from '../errors';
import type { StoreDescriptor } from '../storeDescriptor';
import { REDIS_CAPABILITIES } from './capabilities';
import { parseRedisEndpoint } from './endpoints';
import { REDIS_LAYOUTS } from './layouts';
import type { RedisConvention } from './recognize';

export const redisStore: StoreDescriptor<RedisConvention> = {
  kind: 'redis',
  displayName: 'Redis',
  schemes: ['redis', 'rediss'],
  capabilities: REDIS_CAPABILITIES,
  conventions: {
    'redisson-lock': 'Redisson RLock',
    'redisson-port-lock': 'Redisson RLock (node-redisson)',
    'redisson-fair-lock': 'Redisson RFairLock',
    'redisson-rwlock': 'Redisson RReadWriteLock',
    shedlock: 'ShedLock',
    'redis-token': 'token lock: redis-py Lock, redlock, Spring, SET NX PX',
    'redis-semaphore': 'redis-semaphore Semaphore (npm)',
    'redis-multi-semaphore': 'redis-semaphore MultiSemaphore (npm)',
    'redisson-permit-semaphore': 'Redisson RPermitExpirableSemaphore',
  },
  freeNameLayouts: REDIS_LAYOUTS,
  checkEndpoints(endpoints) {
    if (endpoints.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'no Redis URL given');
    for (const text of endpoints) parseRedisEndpoint(text);
  },
  endpointsAskTls: (endpoints) => endpoints.some((e) => parseRedisEndpoint(e).tls),
  open: (profile) => (require('./redisBackend') as typeof import('./redisBackend')).RedisBackend.open(profile),
  namespaces: false,
  lockTables: false,
  // Redis keys are named in parts separated by colons (lock:orders:42), as RedisInsight's tree view groups them.
  nameSeparator: ':',
  // redis-cli's; alone it is the default user's password.
  environment: { password: 'REDISCLI_AUTH' },
  form: {
    libraries: () => l10n.t('Redisson, redis-py, redlock, ShedLock, SET NX PX token locks'),
    endpointsPrompt: () => l10n.t('Redis URLs, comma separated: redis://host:port/db, or rediss:// for TLS (several: independent redlock instances)'),
    endpointsExample: 'redis://127.0.0.1:6379',
    authLabel: () => l10n.t('Password, with an ACL user or the default user'),
    userPrompt: () => l10n.t('ACL user name (leave empty for the default user)'),
    tls: {},
    watchPrompt: () => l10n.t('Keys under this prefix are read as locks: every string is a token lock, and Redisson hashes are recognised by shape.'),
    firstPrefixPrompt: () => l10n.t('A key prefix to watch for locks, e.g. lock: (every string under it is a token lock; Redisson hashes are recognised by shape)'),
    prefixExample: 'lock:',
    emptyPrefixWatchesAll: false,
  },
  cli: {
    url: 'Redis: redis://[USER@]HOST:PORT[/DB] or rediss:// (TLS); several Redis URLs are independent instances (redlock: held on a majority)',
    list: 'Redis (--url redis://…): every key under the prefixes: Redisson locks (hold counts, fair-lock queues, read/write locks) and node-redisson\'s, ShedLock, token locks (redis-py, redlock, SET NX PX) and semaphores (redis-semaphore under semaphore:, Redisson RSemaphore and RPermitExpirableSemaphore), with each key\'s remaining TTL.',
    watch: 'Redis is followed by keyspace notifications when the server has them on, else by reading again every second.',
    acquire:
      "Redis (--url redis://…): takes NAME with Redisson's own script and field when a Redisson lock holds that name, with SET NX PX and a random token (redis-py Lock, redlock, the classic recipe) when a token does, and a free NAME in --layout's layout; renewed while held and released only if still ours; several --url instances: token locks held on a majority (redlock). --mode takes Redisson's RReadWriteLock. A semaphore's permit: redis-semaphore's (semaphore:KEY, with --permits N: its limit is not stored) and Redisson's RPermitExpirableSemaphore, each with its own scripts; an RSemaphore (holders not recorded) is refused.",
    severalNames:
      "Redis: as one Redisson owner <uuid>:<n>, as one thread of Redisson's MultiLock: every Redisson lock among the NAMEs (plain, fair, read/write) holds that field, so others see one owner (and a deadlock in fair locks, whose waiters are visible, is found). A token lock (a NAME that is one, or free) keeps a random token of its own: the token is all its key holds, so others cannot see that one owner holds it, and its waiters spin unseen.",
    unlock: "Redis: compare-and-delete on the token shown; a Redisson lock is deleted and its channel told, as Redisson's forceUnlock does, so its waiters wake; a semaphore's permit shown is removed alone (an RPermitExpirableSemaphore's given back as Redisson's release does).",
    readTtlIgnored: "a read hold's lease is Redisson's watchdog (30 s, see --help); --ttl does not apply",
  },
};

/** The layouts a free Redis name can be taken in (see storeLayouts.ts): the descriptor lists them, acquire takes them. */
import * as l10n from '@vscode/l10n';
import type { FreeNameLayout, FreeNameLayouts } from '../storeLayouts';
import type { RedisConvention } from './recognize';

const TOKEN_LAYOUT = { id: 'token', label: 'token: redis-py, redlock, Spring, SET NX PX', conventions: ['redis-token'] } as const satisfies FreeNameLayout<RedisConvention>;

/** Several independent instances hold a lock on a majority of them (redlock), which only token locks do. */
export const REDLOCK_LAYOUTS: FreeNameLayouts<RedisConvention> = {
  layouts: [TOKEN_LAYOUT],
  defaultId: TOKEN_LAYOUT.id,
  why: () => l10n.t('several independent instances hold token locks on a majority (redlock); a Redisson lock lives on one Redis'),
};

export const REDIS_LAYOUTS: FreeNameLayouts<RedisConvention> = {
  layouts: [
    { id: 'redisson', label: 'Redisson RLock: Redisson, node-redisson', conventions: ['redisson-lock'] },
    { id: 'redisson-fair', label: 'Redisson RFairLock: Redisson getFairLock', conventions: ['redisson-fair-lock'] },
    { id: 'redisson-rw', label: 'Redisson RReadWriteLock: Redisson getReadWriteLock (taken for reading or writing)', conventions: ['redisson-rwlock'], readWrite: true },
    TOKEN_LAYOUT,
  ],
  // A Redisson client that meets a string on its lock's name fails with WRONGTYPE (its Lua reads the key as a hash),
  // where a token client meeting a hash only sees its SET NX refused and waits (redis-py, Spring) or gives up as on
  // any held lock (redlock's retries): a Redisson hash breaks nobody. Several instances (redlock) take tokens.
  defaultId: 'redisson',
  why: () => l10n.t('token clients (redis-py, redlock, Spring) wait on a Redisson lock, while Redisson clients fail with WRONGTYPE on a token'),
};

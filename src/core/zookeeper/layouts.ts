/** The layouts a free ZooKeeper name can be taken in (see storeLayouts.ts): the descriptor lists them, acquire takes them. */
import * as l10n from '@vscode/l10n';
import type { FreeNameLayouts } from '../storeLayouts';
import type { Convention } from './conventions';

export const ZOOKEEPER_LAYOUTS: FreeNameLayouts<Convention> = {
  layouts: [
    { id: 'curator', label: 'Curator: InterProcessMutex, InterProcessReadWriteLock (_c_<uuid>-lock-)', conventions: ['curator-mutex', 'curator-read', 'curator-write'] },
    { id: 'kazoo', label: 'kazoo: Lock, ReadLock, WriteLock (<uuid>__lock__)', conventions: ['kazoo-lock', 'kazoo-rlock'] },
    { id: 'recipe', label: 'the ZooKeeper recipe: <guid>-lock-', conventions: ['zk-recipe'] },
  ],
  // No node name is counted by both families: Curator orders every child by what follows its last `lock-` and
  // sorts kazoo's `__lock__` names behind its own, kazoo counts only `__lock__`/`__rlock__` names (plus its
  // `extra_lock_patterns`); either, meeting the other's node, takes the lock beside it. Curator's names are the
  // ones most clients count: Curator, the recipe's clients, go-zookeeper, and kazoo given
  // extra_lock_patterns=['-lock-'], while Curator has no way to count kazoo's.
  defaultId: 'curator',
  why: () => l10n.t("Curator's node names are counted by Curator, the recipe's clients and go-zookeeper, and by kazoo given extra_lock_patterns; kazoo's only by kazoo and go-zookeeper"),
};

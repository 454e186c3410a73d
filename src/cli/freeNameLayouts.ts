/**
 * `locklens acquire`'s layouts: each NAME that holds no lock is taken in `--layout`'s layout, else in the layout of
 * the other locks under its prefix when they agree, else in the store's default, and stderr says which and why. The
 * CLI keeps no records of its own, so what LockLens saw on the name before is the extension's to go by. A NAME that
 * holds a lock is taken in that lock's layout, and a `--layout` that contradicts it is refused.
 */
import type { LockBackend, LockMode } from '../core/backend';
import { LockLensError } from '../core/errors';
import { chooseLayout, layoutById, layoutOfLock, prefixOf, reasonText } from '../core/freeNameLayout';
import { displayKey } from '../core/keys';
import type { LockState } from '../core/lockState';
import { layoutsOf, storeOf } from '../core/stores';
import type { Output } from './commands/command';

/** The layout to pass for each name (undefined: it holds a lock, whose own layout is taken). */
export async function freeNameLayouts(backend: LockBackend, names: readonly Buffer[], asked: string | undefined, mode: LockMode | undefined, out: Output): Promise<(string | undefined)[]> {
  const store = storeOf(backend.kind);
  const layouts = layoutsOf(backend);
  if (asked !== undefined) layoutById(layouts, asked);
  // One layout (a SQL store's own lock) leaves nothing to choose or to say.
  else if (layouts.layouts.length === 1) return names.map(() => undefined);
  // One listing per prefix: a name's siblings, and whether the name itself holds a lock. A name at the top has no
  // siblings to go by, and its own lock is read under the name itself.
  const listings = new Map<string, Promise<readonly LockState[]>>();
  const locksUnder = (prefix: string) => {
    let listed = listings.get(prefix);
    if (!listed) listings.set(prefix, (listed = backend.list([Buffer.from(prefix)]).then((l) => l.locks)));
    return listed;
  };
  const chosen: (string | undefined)[] = [];
  for (const name of names) {
    const locks = await locksUnder(prefixOf(name, store.nameSeparator) || displayKey(name));
    const own = locks.find((l) => l.name.equals(name));
    if (own) {
      const layout = layoutOfLock(layouts, own);
      if (asked !== undefined && layout && layout.id !== asked) {
        throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} is held as ${layout.label} (layout ${layout.id}): it is taken in its own layout, not --layout ${asked}`);
      }
      chosen.push(undefined);
      continue;
    }
    const choice = chooseLayout(layouts, { name, asked, mode: mode !== undefined, locks, separator: store.nameSeparator });
    if (choice.layout.readWrite && mode === undefined) {
      throw new LockLensError('INVALID_ARGUMENT', `${displayKey(name)} holds no lock and would be taken as ${choice.layout.label} (${reasonText(layouts, choice.reason)}): give --mode read or write, or another --layout`);
    }
    out.stderr(`locklens: ${displayKey(name)} holds no lock: taking it as ${choice.layout.label} (layout ${choice.layout.id}: ${reasonText(layouts, choice.reason)})`);
    chosen.push(choice.layout.id);
  }
  return chosen;
}

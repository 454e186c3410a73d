import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { StoreKind } from './stores';
import type { Disposable } from './emitter';
import { LockLensError } from './errors';

/**
 * Where each store's bundle (`<store>.js`: its backend and client library, built by esbuild.mjs) is found. A full
 * build (the CLI, the demo, a development host) has every store in `dist/stores/` next to the loading bundle. The
 * packaged extension carries only etcd's: another store's bundle comes in that store's own package (the extension
 * "LockLens for Redis"), so nobody downloads a store they do not use, and the extension host tells where it is
 * installed through a source.
 */
export interface StoreSource {
  /** The path of `store`'s bundle, if this source has it; throws if it has one that cannot be used. */
  locate(store: StoreKind): string | undefined;
  /** What to tell a user who has not got `store`: how to get it from this source. */
  missing(store: StoreKind): string;
}

const sources: StoreSource[] = [];

export function addStoreSource(source: StoreSource): Disposable {
  sources.push(source);
  return {
    dispose: () => {
      const at = sources.indexOf(source);
      if (at >= 0) sources.splice(at, 1);
    },
  };
}

/** The bundle file of `store`, or undefined when neither the build beside `dir` nor any source has it. */
export function findStoreBundle(store: StoreKind, dir: string): string | undefined {
  const own = join(dir, 'stores', `${store}.js`);
  if (existsSync(own)) return own;
  for (const source of sources) {
    const found = source.locate(store);
    if (found && existsSync(found)) return found;
  }
  return undefined;
}

/** A store bundle's entry: it takes the loading bundle's store-neutral core modules and returns the store's backend module. */
interface StoreBundle {
  load(core: Record<string, unknown>): unknown;
}

/** Loads `store`'s bundle with the loading bundle's core modules, or says plainly that this store is not installed. */
export function loadStoreBundle(store: StoreKind, dir: string, core: Record<string, unknown>): unknown {
  const file = findStoreBundle(store, dir);
  if (!file) {
    throw new LockLensError('NOT_INSTALLED', sources[0]?.missing(store) ?? `this build of LockLens has no ${store} store (${join(dir, 'stores', `${store}.js`)} is missing)`);
  }
  return (require(file) as StoreBundle).load(core);
}

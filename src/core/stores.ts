/**
 * The registry of stores: one entry per store folder's descriptor. Everything that differs between stores is read
 * from here (or from an open backend's capabilities); adding a store is its folder plus its entry below.
 */
import type { LockBackend } from './backend';
import { etcdStore } from './etcd/descriptor';
import { LockLensError } from './errors';
import { mysqlStore } from './mysql/descriptor';
import { postgresStore } from './postgres/descriptor';
import type { ConnectionProfile } from './profile';
import { redisStore } from './redis/descriptor';
import type { StoreDescriptor } from './storeDescriptor';
import type { FreeNameLayouts } from './storeLayouts';
import { zookeeperStore } from './zookeeper/descriptor';

export const STORES = {
  etcd: etcdStore,
  redis: redisStore,
  zookeeper: zookeeperStore,
  postgres: postgresStore,
  mysql: mysqlStore,
} as const satisfies Record<string, StoreDescriptor>;

/** `postgres`: PostgreSQL advisory locks and lock tables; `mysql`: MySQL/MariaDB `GET_LOCK` and lock tables. */
export type StoreKind = keyof typeof STORES;

/** In the order the store pick and the help list them. */
export const STORE_KINDS = Object.keys(STORES) as StoreKind[];

/** The store of a connection that names none (settings without `store`, the CLI's `--endpoints`): LockLens began with etcd. */
export const DEFAULT_STORE: StoreKind = 'etcd';

export function isStoreKind(kind: string): kind is StoreKind {
  return Object.hasOwn(STORES, kind);
}

/** The descriptor of a connection's store; a store LockLens does not know is INVALID_ARGUMENT (a settings typo). */
export function storeOf(kind: string | undefined): StoreDescriptor & { readonly kind: StoreKind } {
  const store = kind ?? DEFAULT_STORE;
  if (!isStoreKind(store)) throw new LockLensError('INVALID_ARGUMENT', `unknown store '${store}'`);
  return STORES[store] as StoreDescriptor & { readonly kind: StoreKind };
}

/**
 * Opens the backend a profile names. Each store's module (and its client library) is required only when a connection
 * of that kind is first opened (see the descriptors' `open`), so a user of one store never pays for the others.
 */
export function openBackend(profile: ConnectionProfile): Promise<LockBackend> {
  return storeOf(profile.store).open(profile);
}

/** The layouts a free name can be taken in through this backend (see `LockBackend.freeNameLayouts`). */
export function layoutsOf(backend: LockBackend): FreeNameLayouts {
  return backend.freeNameLayouts ?? storeOf(backend.kind).freeNameLayouts;
}

/** The store a connection URL names by its scheme, or undefined for a plain `host:port` (the default store's). */
export function storeOfUrl(url: string): StoreKind | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url.trim())?.[1]?.toLowerCase();
  if (scheme === undefined) return undefined;
  const store = STORE_KINDS.find((kind) => STORES[kind].schemes.includes(scheme));
  if (store) return store;
  const known = STORE_KINDS.filter((kind) => kind !== DEFAULT_STORE).flatMap((kind) => STORES[kind].schemes.map((s) => `${s}://`));
  throw new LockLensError('INVALID_ARGUMENT', `'${url}': unknown scheme '${scheme}://' (use ${known.join(', ')} or an ${STORES[DEFAULT_STORE].displayName} endpoint)`);
}

/** Throws a clear INVALID_ARGUMENT unless every endpoint is one the store can connect to. */
export function checkEndpoints(store: StoreKind, endpoints: readonly string[]): void {
  STORES[store].checkEndpoints(endpoints);
}

/** The libraries a layout stands for (not translated), whichever store reported it. */
export function conventionLabel(convention: string): string {
  for (const kind of STORE_KINDS) {
    const label = (STORES[kind].conventions as Readonly<Record<string, string>>)[convention];
    if (label !== undefined) return label;
  }
  return convention;
}

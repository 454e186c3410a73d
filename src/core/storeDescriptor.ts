/**
 * What a store is, said once, in its own folder (`src/core/<store>/descriptor.ts`): its names, the URLs it takes and how
 * they are checked, the words its connection flow uses, the labels of its clients' layouts, what it can do, and how
 * its backend is opened. The registry (`stores.ts`) lists the descriptors; the CLI, the extension's flows and labels
 * and the build read them, so adding a store touches its folder and one registry entry, never a view.
 *
 * A store whose folder has a `package/` (a manifest and a README) is shipped as an extension of its own,
 * `locklens-<kind>`, so that users of other stores do not download its client (scripts/package.mjs); etcd's is in the
 * extension's own package.
 *
 * Pure data and pure functions: a descriptor is loaded by every host bundle, so it must not import its store's client
 * library (its `open` requires the backend module lazily; esbuild.mjs turns that require into a load of the store's
 * bundle). Texts a user reads in VS Code are functions that call `l10n.t` from `@vscode/l10n`, so they are exported
 * for translation with the rest of src/ and looked up when asked, after the extension has loaded its bundle.
 */
import type { Capabilities, LockBackend } from './backend';
import type { ConnectionProfile } from './profile';
import type { FreeNameLayouts } from './storeLayouts';

export interface StoreDescriptor<Convention extends string = string> {
  /** The store's id in settings (`"store": "redis"`), package names and bundle file names. */
  readonly kind: string;
  /** Its name as users know it (not translated): "Redis", "MySQL/MariaDB". */
  readonly displayName: string;
  /** URL schemes that name this store in `--url` and in settings (`redis`, `rediss`). */
  readonly schemes: readonly string[];
  readonly capabilities: Capabilities;
  /** Library names (not translated) for each layout its recognisers report in `LockMember.convention`. */
  readonly conventions: Readonly<Record<Convention, string>>;
  /** The layouts a name that holds nothing can be taken in (`AcquireOptions.layout`), and which one by default. */
  readonly freeNameLayouts: FreeNameLayouts<Convention>;
  /** Throws INVALID_ARGUMENT, saying what to write, unless every endpoint is one this store can connect to. */
  checkEndpoints(endpoints: readonly string[]): void;
  /** Whether these endpoints ask for TLS by themselves (`https://`, `rediss://`, `sslmode=require`). */
  endpointsAskTls(endpoints: readonly string[]): boolean;
  /** Opens the backend (loading the store's bundle on first use). */
  open(profile: ConnectionProfile): Promise<LockBackend>;
  /** Keys are read under a namespace prefix (etcdctl's `--namespace`): the connection flow and the CLI offer one. */
  readonly namespaces: boolean;
  /** SQL lock tables of the user's own layout can be read (`--lock-table`, `locklens.lockTables`). */
  readonly lockTables: boolean;
  /** What separates the directories of a lock's name (`/` in paths and lock tables' `<table>/<row>`), for folders in views. */
  readonly nameSeparator: string;
  /** Where the CLI reads connection settings the store's own tools read (etcdctl's `ETCDCTL_*`, `PGPASSWORD`). */
  readonly environment: StoreEnvironment;
  readonly form: ConnectionForm;
  readonly cli: CliText;
}

/** Environment variables the CLI reads for this store, as its own command-line client does. */
export interface StoreEnvironment {
  readonly password?: string;
  readonly endpoints?: string;
  readonly user?: string;
  readonly cacert?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly insecureSkipTlsVerify?: string;
}

/**
 * The Add/Edit Connection flow of a store, as data: the steps are the same for every store (endpoints, name,
 * authentication, TLS where the client speaks it, a namespace where the store has one, a first prefix), and these
 * are their words and defaults. Each text is a function so it is translated when asked.
 */
export interface ConnectionForm {
  /** The libraries whose locks it shows, beside its name in the store pick. */
  readonly libraries: () => string;
  readonly endpointsPrompt: () => string;
  /** The value the endpoints box starts with. */
  readonly endpointsExample: string;
  readonly authLabel: () => string;
  readonly userPrompt: () => string;
  /**
   * Whether the store's client speaks TLS (LockLens's ZooKeeper client does not); `withTls` is what asking for TLS
   * does to an endpoint whose URL carries the mode (a SQL URL without `sslmode=`/`ssl=` gets full verification).
   */
  readonly tls: false | { readonly withTls?: (endpoint: string) => string };
  readonly watchPrompt: () => string;
  readonly firstPrefixPrompt: () => string;
  readonly prefixExample: string;
  /** An empty first prefix watches every lock (a database has few, with no common prefix) instead of none. */
  readonly emptyPrefixWatchesAll: boolean;
}

/** What the CLI's help says of this store (English only, like the rest of the CLI). */
export interface CliText {
  /** `--url`'s line for it: the URL's shape and what it shows. */
  readonly url: string;
  /** What `locklens list` reads in this store and how it groups it into locks. */
  readonly list: string;
  /** How `locklens watch` follows this store. */
  readonly watch: string;
  /** What the revision `watch` prints is, where the store has revisions; absent: it counts the changes instead. */
  readonly revision?: string;
  /** How `locklens acquire` takes a lock in this store. */
  readonly acquire: string;
  /**
   * How `locklens acquire` takes several NAMEs as one owner in this store, or why it refuses them (the backend has no
   * `openOwner`): said in its help, and as the error.
   */
  readonly severalNames: string;
  /** How `locklens unlock --force` frees a lock in this store. */
  readonly unlock: string;
  /** What its fencing token is, for `acquire`'s help ("the key's create revision"); absent: it has none. */
  readonly fencingToken?: string;
  /** When a hold taken by `acquire` counts as lost, for its help. */
  readonly lost?: string;
  /** Said on stderr when `--ttl` is given for a read hold and does not apply (Redisson: readers share one lease). */
  readonly readTtlIgnored?: string;
}

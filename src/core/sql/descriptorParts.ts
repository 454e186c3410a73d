/**
 * What the PostgreSQL and MySQL/MariaDB descriptors share: both read the same lock tables, take one URL with a TLS
 * mode in it, and free a lock-table row the same way.
 */
import * as l10n from '@vscode/l10n';
import type { StoreDescriptor } from '../storeDescriptor';
import type { FreeNameLayouts } from '../storeLayouts';
import type { LockTableConvention } from './tableLayouts';
import { parseSqlUrl, sqlUrlOf, type SqlDialect } from './url';

export const LOCK_TABLE_CONVENTION_NAMES: Readonly<Record<LockTableConvention, string>> = {
  shedlock: 'ShedLock',
  liquibase: 'Liquibase DATABASECHANGELOGLOCK',
  'lock-table': 'lock table with a unique lock_name (INSERT to take, DELETE to release)',
  'custom-table': 'lock table of your own (setting locklens.lockTables)',
};

export const LOCK_TABLE_LIST =
  "Lock tables of the URL's database (ShedLock, Liquibase, a lock table with a unique lock_name, --lock-table) are read too, named TABLE/ROW, with the row's expiry as TTL (a ShedLock row past it is free, one run a hold; your own table's: expired; none: held until the row is cleared).";

/** How `locklens watch` follows a SQL store: its locks are in tables and views no server notifies of. */
export const SQL_WATCH = (name: string) => `${name} is read again every second: no table of its locks sends notifications.`;

export const LOCK_TABLE_UNLOCK =
  "A lock-table row (ShedLock, Liquibase, your own) is released with the library's own unlock statement, only while the row still has the holder and times shown.";

/**
 * A free name is taken as the server's own lock, the one layout: LockLens acquires no lock-table row (each table's
 * clients write rows of their own columns and rules), so a name that services lock with a table is taken there only
 * by its own clients.
 */
export function nativeLayout<C extends string>(convention: C, label: string): FreeNameLayouts<C> {
  return {
    layouts: [{ id: 'native', label, conventions: [convention] }],
    defaultId: 'native',
    why: () => l10n.t("the server's own lock is the only layout LockLens takes: it acquires no lock-table rows"),
  };
}

/** The URL checks and TLS handling of a SQL store. */
export function sqlEndpoints(dialect: SqlDialect, tlsOption: string): Pick<StoreDescriptor, 'checkEndpoints' | 'endpointsAskTls'> & { withTls(endpoint: string): string } {
  return {
    checkEndpoints: (endpoints) => void sqlUrlOf(dialect, endpoints),
    endpointsAskTls: (endpoints) => endpoints.some((e) => parseSqlUrl(e).tlsMode !== 'disable'),
    // A URL that already names a mode keeps it.
    withTls: (url) => (/[?&](sslmode|ssl)=/.test(url) ? url : `${url}${url.includes('?') ? '&' : '?'}${tlsOption}`),
  };
}

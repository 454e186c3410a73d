import * as l10n from '@vscode/l10n';
import { LOCK_TABLE_CONVENTION_NAMES, LOCK_TABLE_LIST, LOCK_TABLE_UNLOCK, SQL_WATCH, nativeLayout, sqlEndpoints } from '../sql/descriptorParts';
import type { LockTableConvention } from '../sql/tableLayouts';
import type { StoreDescriptor } from '../storeDescriptor';
import { POSTGRES_CAPABILITIES } from './capabilities';

const { withTls, ...endpoints } = sqlEndpoints('postgres', 'sslmode=verify-full');

export const postgresStore: StoreDescriptor<'pg-advisory' | LockTableConvention> = {
  kind: 'postgres',
  displayName: 'PostgreSQL',
  schemes: ['postgres', 'postgresql'],
  capabilities: POSTGRES_CAPABILITIES,
  conventions: { 'pg-advisory': 'PostgreSQL advisory lock: pg_advisory_lock, Flyway, Rails, golang-migrate', ...LOCK_TABLE_CONVENTION_NAMES },
  freeNameLayouts: nativeLayout('pg-advisory', 'advisory lock: pg_advisory_lock, psycopg2, Flyway, Rails, golang-migrate, npm advisory-lock'),
  ...endpoints,
  open: (profile) => (require('./postgresBackend') as typeof import('./postgresBackend')).PostgresBackend.open(profile),
  namespaces: false,
  lockTables: true,
  nameSeparator: '/',
  environment: { password: 'PGPASSWORD' },
  form: {
    libraries: () => l10n.t('advisory locks (pg_advisory_lock, Flyway, golang-migrate), ShedLock, Liquibase and lock tables'),
    endpointsPrompt: () => l10n.t('PostgreSQL URL: postgres://host:port/database[?sslmode=require|verify-ca|verify-full] (advisory locks are per database)'),
    endpointsExample: 'postgres://127.0.0.1:5432/postgres',
    authLabel: () => l10n.t('Database user and password'),
    userPrompt: () => l10n.t('Database user'),
    tls: { withTls },
    watchPrompt: () => l10n.t('A lock-name prefix: advisory locks are named by their key (12345, or 1:2 for an int pair), table locks by table (shedlock/, databasechangeloglock/)'),
    firstPrefixPrompt: () => l10n.t('A lock-name prefix to watch, e.g. shedlock/ (leave empty to watch every lock)'),
    prefixExample: 'shedlock/',
    emptyPrefixWatchesAll: true,
  },
  cli: {
    url: 'PostgreSQL: postgres://[USER@]HOST:PORT/DB[?sslmode=require|verify-ca|verify-full] (advisory locks and lock tables of DB)',
    list: `PostgreSQL (--url postgres://…): the advisory locks of the URL's database (pg_locks), named by key (12345 for a bigint key, 1:2 for an int pair); holders, then waiters in the order they began waiting; each member's owner is its session's pid, with the session's user, application, client, state and query (pg_stat_activity). ${LOCK_TABLE_LIST}`,
    watch: SQL_WATCH('PostgreSQL'),
    acquire:
      'PostgreSQL (--url postgres://…): NAME is an advisory key, a bigint (42) or an int pair (7:1), taken with pg_advisory_lock on a session of its own (pg_advisory_lock_shared with --mode read, pg_try_advisory_lock with --try) in the server\'s queue; --ttl sets the session\'s TCP keepalives, and the hold counts as lost after 0.9 × --ttl without an answer.',
    severalNames:
      'PostgreSQL: refused. Each lock is held on a connection of its own, and one connection cannot hold one lock while it waits for another: a waiting pg_advisory_lock takes the connection, and the pings that check the held lock would wait behind it.',
    unlock: `PostgreSQL (advisory locks): terminates the holding session (pg_terminate_backend) if it is still the one shown (same pid, same start). Every other lock of that session goes too, and its open transaction is rolled back. ${LOCK_TABLE_UNLOCK}`,
  },
};

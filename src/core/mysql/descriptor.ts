import * as l10n from '@vscode/l10n';
import { LOCK_TABLE_CONVENTION_NAMES, LOCK_TABLE_LIST, LOCK_TABLE_UNLOCK, SQL_WATCH, nativeLayout, sqlEndpoints } from '../sql/descriptorParts';
import type { LockTableConvention } from '../sql/tableLayouts';
import type { StoreDescriptor } from '../storeDescriptor';
import { MYSQL_CAPABILITIES } from './capabilities';

const { withTls, ...endpoints } = sqlEndpoints('mysql', 'ssl=verify-full');

export const mysqlStore: StoreDescriptor<'mysql-get-lock' | LockTableConvention> = {
  kind: 'mysql',
  displayName: 'MySQL/MariaDB',
  schemes: ['mysql', 'mariadb'],
  capabilities: MYSQL_CAPABILITIES,
  conventions: { 'mysql-get-lock': 'MySQL/MariaDB GET_LOCK: Flyway, golang-migrate', ...LOCK_TABLE_CONVENTION_NAMES },
  freeNameLayouts: nativeLayout('mysql-get-lock', 'GET_LOCK: pymysql, Flyway, golang-migrate'),
  ...endpoints,
  open: (profile) => (require('./mysqlBackend') as typeof import('./mysqlBackend')).MysqlBackend.open(profile),
  namespaces: false,
  lockTables: true,
  nameSeparator: '/',
  environment: { password: 'MYSQL_PWD' },
  form: {
    libraries: () => l10n.t('GET_LOCK (Flyway, golang-migrate), ShedLock, Liquibase and lock tables'),
    endpointsPrompt: () => l10n.t('MySQL or MariaDB URL: mysql://host:port/database[?ssl=true|verify-ca|verify-full] (lock tables are read from the database)'),
    endpointsExample: 'mysql://127.0.0.1:3306/app',
    authLabel: () => l10n.t('Database user and password'),
    userPrompt: () => l10n.t('Database user'),
    tls: { withTls },
    watchPrompt: () => l10n.t('A lock-name prefix: GET_LOCK locks are named as taken, table locks by table (shedlock/, DATABASECHANGELOGLOCK/)'),
    firstPrefixPrompt: () => l10n.t('A lock-name prefix to watch, e.g. app. (leave empty to watch every lock)'),
    prefixExample: 'app.',
    emptyPrefixWatchesAll: true,
  },
  cli: {
    url: 'MySQL/MariaDB: mysql://[USER@]HOST:PORT[/DB][?ssl=true|verify-ca|verify-full] (GET_LOCK, and lock tables of DB)',
    list: `MySQL/MariaDB (--url mysql://…): GET_LOCK locks by name; owners are connection ids, waiters the connections waiting in GET_LOCK. ${LOCK_TABLE_LIST}`,
    watch: SQL_WATCH('MySQL/MariaDB'),
    acquire:
      "MySQL/MariaDB (--url mysql://…): takes NAME with GET_LOCK on a connection of its own, whose wait_timeout is --ttl (a locklens that vanished frees the lock then); the hold is checked every third of it.",
    severalNames:
      'MySQL/MariaDB: refused. Each lock is held on a connection of its own, and one connection cannot hold one lock while it waits for another: a waiting GET_LOCK takes the connection, and the pings that check the held lock would wait behind it.',
    unlock: `MySQL/MariaDB (GET_LOCK): kills the holding connection (KILL) if it still holds the name. Every other lock of that connection goes too, and its open transaction is rolled back. ${LOCK_TABLE_UNLOCK}`,
  },
};

/**
 * `postgres://user@host:port/database?sslmode=require` and `mysql://user@host:port/database?ssl=true`, checked and
 * split. Pure (no client library), so the host bundles can check what a user types. A password in the URL is refused:
 * it belongs in SecretStorage (the extension) or LOCKLENS_PASSWORD / --password-stdin (the CLI), never in settings or
 * a shell history.
 */
import { LockLensError } from '../errors';
import type { TlsOptions } from '../profile';
import { redact } from '../redact';

export type SqlDialect = 'postgres' | 'mysql';

/** How the connection uses TLS: libpq's sslmode names, which the MySQL URL's `ssl` option maps onto. */
export type SqlTlsMode = 'disable' | 'require' | 'verify-ca' | 'verify-full';

export interface SqlUrl {
  readonly dialect: SqlDialect;
  readonly host: string;
  readonly port: number;
  /**
   * The database whose locks are shown: PostgreSQL advisory locks and every lock table are per database. MySQL's
   * `GET_LOCK` names are server-wide; without a database ('') no lock table is read.
   */
  readonly database: string;
  readonly user: string | undefined;
  readonly tlsMode: SqlTlsMode;
  /** host:port/database, for messages. */
  readonly label: string;
}

const DEFAULT_PORTS: Record<SqlDialect, number> = { postgres: 5432, mysql: 3306 };
const DEFAULT_DATABASES: Record<SqlDialect, string> = { postgres: 'postgres', mysql: '' };
const SCHEMES: Record<string, SqlDialect> = { postgres: 'postgres', postgresql: 'postgres', mysql: 'mysql', mariadb: 'mysql' };

/** The URL is echoed with any password masked: a refused URL is exactly the one that may hold one. */
function invalid(text: string, why: string): LockLensError {
  return new LockLensError('INVALID_ARGUMENT', `'${redact(text)}' is not a database URL: ${why} (write postgres://user@host:port/database or mysql://user@host:port/database)`);
}

/** The dialect a URL's scheme names, or undefined when it is no SQL URL. */
export function sqlDialectOf(text: string): SqlDialect | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text.trim())?.[1]?.toLowerCase();
  return scheme === undefined ? undefined : SCHEMES[scheme];
}

export function parseSqlUrl(text: string): SqlUrl {
  const dialect = sqlDialectOf(text);
  if (!dialect) throw invalid(text, 'it does not start with postgres://, postgresql://, mysql:// or mariadb://');
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw invalid(text, 'it cannot be parsed');
  }
  if (url.password) throw invalid(text, "the password goes in the connection's secret storage (the CLI: LOCKLENS_PASSWORD), not in the URL");
  if (!url.hostname) throw invalid(text, 'it names no host');
  const port = url.port === '' ? DEFAULT_PORTS[dialect] : Number(url.port);
  const path = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (path.includes('/')) throw invalid(text, `'${path}' is not a database name`);
  const database = path || DEFAULT_DATABASES[dialect];
  let tlsMode: SqlTlsMode = 'disable';
  for (const [key, value] of url.searchParams) {
    if (dialect === 'postgres' && key === 'sslmode') {
      if (value === 'prefer' || value === 'allow') throw invalid(text, `sslmode=${value} falls back to plain text silently: say disable or require`);
      if (!['disable', 'require', 'verify-ca', 'verify-full'].includes(value)) throw invalid(text, `unknown sslmode '${value}'`);
      tlsMode = value as SqlTlsMode;
    } else if (dialect === 'mysql' && key === 'ssl') {
      if (!['true', 'false', 'verify-ca', 'verify-full'].includes(value)) throw invalid(text, `unknown ssl '${value}' (true, false, verify-ca or verify-full)`);
      tlsMode = value === 'true' ? 'require' : value === 'false' ? 'disable' : (value as SqlTlsMode);
    } else {
      throw invalid(text, `unknown option '${key}' (the one option is ${dialect === 'postgres' ? 'sslmode' : 'ssl'})`);
    }
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return {
    dialect,
    host,
    port,
    database,
    user: url.username ? decodeURIComponent(url.username) : undefined,
    tlsMode,
    label: `${url.hostname}:${port}${database ? `/${database}` : ''}`,
  };
}

const NAMES: Record<SqlDialect, string> = { postgres: 'PostgreSQL', mysql: 'MySQL/MariaDB' };
const EXAMPLES: Record<SqlDialect, string> = { postgres: 'postgres://user@host:5432/database', mysql: 'mysql://user@host:3306/database' };
/** The URL option that names the TLS mode, and its value for encryption without verification. */
const TLS_OPTIONS: Record<SqlDialect, { option: string; unverified: string }> = {
  postgres: { option: 'sslmode', unverified: 'sslmode=require' },
  mysql: { option: 'ssl', unverified: 'ssl=true' },
};

/**
 * The one URL of a `store` connection, checked: exactly one, of that store's dialect, and (given the profile's TLS) not
 * asking to verify the certificate while insecureSkipVerify says not to. Pure: the host bundles check input with it.
 */
export function sqlUrlOf(store: SqlDialect, endpoints: readonly string[], tls?: Pick<TlsOptions, 'insecureSkipVerify'>): SqlUrl {
  if (endpoints.length !== 1) {
    throw new LockLensError('INVALID_ARGUMENT', `a ${NAMES[store]} connection has exactly one URL (${EXAMPLES[store]}), not ${endpoints.length}`);
  }
  const url = parseSqlUrl(endpoints[0]);
  if (url.dialect !== store) throw new LockLensError('INVALID_ARGUMENT', `'${redact(endpoints[0])}' is not a ${NAMES[store]} URL: write ${EXAMPLES[store]}`);
  if ((url.tlsMode === 'verify-ca' || url.tlsMode === 'verify-full') && tls?.insecureSkipVerify) {
    const { option, unverified } = TLS_OPTIONS[store];
    throw new LockLensError(
      'INVALID_ARGUMENT',
      `${option}=${url.tlsMode} asks to verify the server's certificate, and insecureSkipVerify (the CLI's --insecure-skip-tls-verify) not to: for encryption without verification, connect with ${unverified}`,
    );
  }
  return url;
}

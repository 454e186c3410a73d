/**
 * Connecting to MySQL or MariaDB: `mysql://user@host:port/database?ssl=…` (see sql/url.ts), the password from the
 * profile, TLS from the URL's `ssl` and the profile's files, a deadline on the handshake; and when it fails, the
 * server's error or a look at the socket, in words (nothing listens, not MySQL, wrong password, no such database, TLS
 * required or not offered). Which server it is (MariaDB or MySQL) is read once, from VERSION().
 */
import { createConnection as createSocket } from 'node:net';
import { createConnection, type Connection, type ConnectionOptions } from 'mysql2/promise';
import { LockLensError, errorMessage } from '../errors';
import { DEFAULT_DIAL_TIMEOUT_MS, type ConnectionProfile } from '../profile';
import { firstLine, printable, probe, probeBudgetMs } from '../socketProbe';
import { sqlUrlOf, type SqlUrl } from '../sql/url';
import { loadTlsMaterial } from '../tlsMaterial';

export type MysqlFlavor = 'mariadb' | 'mysql';

/** What every connection of one backend is opened with, and what it connects to. */
export interface MysqlTarget {
  readonly url: SqlUrl;
  readonly options: ConnectionOptions;
  readonly timeoutMs: number;
}

/**
 * A server error's number (mysql2 puts it in `errno`, with the SQL state), also under a LockLensError that wraps it;
 * undefined for a network or protocol failure.
 */
export function serverErrno(e: unknown): number | undefined {
  const error = e as { errno?: unknown; sqlState?: unknown; cause?: unknown } | undefined;
  if (typeof error?.errno === 'number' && error.sqlState !== undefined) return error.errno;
  return e instanceof LockLensError ? serverErrno(e.cause) : undefined;
}

export function errorCode(e: unknown): string {
  const code = (e as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : '';
}

/** The profile's server, user and TLS as mysql2 options; TLS files are read and checked here, before any connection. */
export async function targetOf(profile: ConnectionProfile): Promise<MysqlTarget> {
  const url = sqlUrlOf('mysql', profile.endpoints, profile.tls);
  const user = url.user ?? profile.username;
  if (!user) throw new LockLensError('INVALID_ARGUMENT', `no user for ${url.label}: write mysql://user@${url.label}`);
  const timeoutMs = profile.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS;
  const tlsFiles = profile.tls?.caFile || profile.tls?.certFile;
  if (url.tlsMode === 'disable' && tlsFiles) {
    throw new LockLensError('INVALID_ARGUMENT', `TLS files are set for ${url.label} but its URL does not ask for TLS: add ?ssl=true, ?ssl=verify-ca or ?ssl=verify-full`);
  }
  const verify = url.tlsMode === 'verify-ca' || url.tlsMode === 'verify-full';
  // mysql2 checks the certificate against the host it connects to: it cannot be given another name to expect.
  if (url.tlsMode === 'verify-full' && profile.tls?.serverName) {
    throw new LockLensError(
      'INVALID_ARGUMENT',
      `a server name to verify (${profile.tls.serverName}: serverName, the CLI's --server-name) cannot be given for MySQL: the certificate is checked against the URL's host, so write the name it carries there (mysql://user@${profile.tls.serverName}:${url.port}/…), or use ssl=verify-ca to check the chain only`,
    );
  }
  let ssl: ConnectionOptions['ssl'];
  if (url.tlsMode !== 'disable') {
    const tls = await loadTlsMaterial(profile.tls ?? {});
    // `require` encrypts without checking who answers (MySQL's ssl-mode=REQUIRED, libpq's sslmode=require);
    // verify-ca checks the chain, verify-full also the host name.
    ssl = { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: verify, verifyIdentity: url.tlsMode === 'verify-full' };
  }
  return {
    url,
    timeoutMs,
    options: {
      host: url.host,
      port: url.port,
      user,
      password: profile.password ?? '',
      database: url.database || undefined,
      ssl,
      connectTimeout: timeoutMs,
      charset: 'utf8mb4',
      // Connection ids and lock-table numbers as numbers while exact, as strings beyond 2^53; DECIMAL as strings.
      supportBigNumbers: true,
      // DATETIME and TIMESTAMP as Date, read as UTC: the session's time zone is set to UTC below.
      timezone: 'Z',
      multipleStatements: false,
    },
  };
}

/** Opens one connection, or throws a LockLensError saying why not, within the dial timeout (and a probe's worth more). */
export async function openConnection(target: MysqlTarget): Promise<Connection> {
  let conn: Connection | undefined;
  try {
    conn = await createConnection(target.options);
    // A connection that fails while no query runs emits 'error': without a listener that would crash the process.
    // Whoever uses the connection finds out with its next query, or listens itself.
    conn.on('error', () => undefined);
    await conn.query("SET time_zone = '+00:00'");
    return conn;
  } catch (e) {
    conn?.destroy();
    throw await explainOpenFailure(target, e);
  }
}

/** MariaDB or MySQL, from VERSION() ("10.11.6-MariaDB-0+deb12u1", "8.0.36"). */
export async function flavorOf(conn: Connection): Promise<{ flavor: MysqlFlavor; version: string }> {
  const [rows] = await conn.query('SELECT VERSION() AS version');
  const version = String((rows as { version: unknown }[])[0].version);
  return { flavor: /mariadb/i.test(version) ? 'mariadb' : 'mysql', version };
}

// Server errors at connect time (MySQL's and MariaDB's numbers agree; 3159 is MySQL's alone).
const ER_DBACCESS_DENIED = 1044;
const ER_ACCESS_DENIED = 1045;
const ER_BAD_DB = 1049;
const ER_SECURE_TRANSPORT_REQUIRED = 3159;

const TLS_CODES = /SSL|TLS|CERT|SELF_SIGNED|UNABLE_TO|EPROTO/;

async function explainOpenFailure(target: MysqlTarget, e: unknown): Promise<LockLensError> {
  if (e instanceof LockLensError) return e;
  const { url, options } = target;
  const at = `${url.host}:${url.port}`;
  const fail = (code: ConstructorParameters<typeof LockLensError>[0], text: string) => new LockLensError(code, `cannot connect to MySQL at ${url.label}: ${text}`, { cause: e });
  const errno = serverErrno(e);
  const code = errorCode(e);
  if (errno === ER_ACCESS_DENIED) {
    // MariaDB refuses a plain connection under require_secure_transport (or an account's REQUIRE SSL) with this same
    // error, not MySQL's own code for it: whether the server offers TLS at all is the one hint to give.
    const greeting = url.tlsMode === 'disable' ? await probeGreeting(url.host, url.port, probeBudgetMs(target.timeoutMs)) : undefined;
    const tlsHint = greeting?.kind === 'mysql' && greeting.offersTls ? `; the server offers TLS, and if it requires it (require_secure_transport, an account's REQUIRE SSL), add ?ssl=true to the URL` : '';
    return fail('AUTH', `access denied for user '${String(options.user)}': wrong password, or the user may not connect from here${tlsHint}`);
  }
  if (errno === ER_BAD_DB) return fail('INVALID_ARGUMENT', `there is no database '${url.database}' on the server`);
  if (errno === ER_DBACCESS_DENIED) return fail('PERMISSION', `user '${String(options.user)}' may not use database '${url.database}'`);
  if (errno === ER_SECURE_TRANSPORT_REQUIRED) {
    return fail('TLS', 'the server requires TLS (require_secure_transport): add ?ssl=true, ?ssl=verify-ca or ?ssl=verify-full to the URL');
  }
  if (code === 'HANDSHAKE_NO_SSL_SUPPORT') return fail('TLS', 'the URL asks for TLS but the server does not offer it (no ssl_cert/ssl_key configured): drop ?ssl or configure TLS on the server');
  if (TLS_CODES.test(code)) return fail('TLS', `the TLS handshake failed: ${errorMessage(e)}`);
  if (errno !== undefined) return fail('STORE', `the server refused the connection: ${errorMessage(e)}`);
  if (code === 'ECONNREFUSED') return fail('UNREACHABLE', `nothing listens on ${at} (connection refused)`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return fail('UNREACHABLE', `${url.host} is not a known host name`);
  const finding = await probeGreeting(url.host, url.port, probeBudgetMs(target.timeoutMs));
  switch (finding.kind) {
    case 'mysql':
      return fail(code === 'ETIMEDOUT' ? 'TIMEOUT' : 'UNREACHABLE', `${at} greets as MySQL but the connection failed: ${errorMessage(e)}`);
    case 'other':
      return fail('UNREACHABLE', `${at} is not a MySQL or MariaDB server: it answered ${JSON.stringify(finding.text)}`);
    case 'silent':
      return fail('UNREACHABLE', `${at} accepted the TCP connection but sent no MySQL greeting within ${target.timeoutMs} ms: not a MySQL or MariaDB server, or a stuck one`);
    case 'closed':
      return fail('UNREACHABLE', `${at} accepted the connection and closed it without a MySQL greeting`);
    case 'error':
      return fail('UNREACHABLE', `${at}: ${finding.message}`);
  }
}

type Greeting = { kind: 'mysql'; offersTls: boolean } | { kind: 'silent' | 'closed' } | { kind: 'other'; text: string } | { kind: 'error'; message: string };

/** The capability flag a server's greeting sets when it can switch to TLS. */
const CLIENT_SSL = 0x0800;

/**
 * A MySQL server speaks first: a packet (3-byte length, sequence 0) holding protocol version 10, its version text,
 * a thread id, 8 bytes of salt, a filler and its capability flags; or an error packet (0xff) when it refuses this
 * host. Anything else is another kind of server.
 */
export function readGreeting(got: Buffer): Greeting | undefined {
  if (got.length < 5) return undefined;
  if (got[3] !== 0 || (got[4] !== 10 && got[4] !== 0xff)) return { kind: 'other', text: firstLine(got) };
  if (got[4] === 0xff) return { kind: 'mysql', offersTls: false };
  const versionEnd = got.indexOf(0, 5);
  const flagsAt = versionEnd + 1 + 4 + 8 + 1;
  if (versionEnd < 0 || got.length < flagsAt + 2) return undefined;
  return { kind: 'mysql', offersTls: (got.readUInt16LE(flagsAt) & CLIENT_SSL) !== 0 };
}

function probeGreeting(host: string, port: number, timeoutMs: number): Promise<Greeting> {
  const socket = createSocket({ host, port });
  return probe<Greeting>(socket, timeoutMs, { kind: 'silent' }, (done) => {
    let got = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const greeting = readGreeting(got);
      if (greeting) done(greeting);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => done({ kind: 'error', message: err.message }));
    socket.once('close', () => done(got.length ? { kind: 'other', text: printable(got.toString('latin1')) } : { kind: 'closed' }));
  });
}

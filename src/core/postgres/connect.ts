/**
 * Connecting to PostgreSQL: `postgres://user@host:port/database?sslmode=…` (one URL), the password from the profile,
 * TLS as libpq's sslmode says it (require: encrypted, nothing verified; verify-ca: the chain; verify-full: the chain
 * and the host name, or the profile's server name), a deadline on connecting, and `application_name` LockLens so that
 * our sessions are recognisable in pg_stat_activity. When connecting fails, the server's error code, or a look at the
 * socket, says why in words.
 *
 * PgConnection is the backend's own session, for reading the locks, cancelling a waiting acquire and terminating a
 * session on force release; it reconnects on the next statement after it broke.
 */
import { createConnection } from 'node:net';
import { checkServerIdentity, type ConnectionOptions } from 'node:tls';
import { userInfo } from 'node:os';
import { Client, DatabaseError, type ClientConfig, type QueryResult } from 'pg';
import { LockLensError, errorMessage } from '../errors';
import { DEFAULT_DIAL_TIMEOUT_MS, type ConnectionProfile } from '../profile';
import { firstLine, printable, probe, probeBudgetMs } from '../socketProbe';
import { sqlUrlOf, type SqlUrl } from '../sql/url';
import { loadTlsMaterial, type TlsMaterial } from '../tlsMaterial';

export interface PgSpec {
  readonly url: SqlUrl;
  /** The role we log in as, for messages. */
  readonly user: string;
  readonly timeoutMs: number;
  readonly config: ClientConfig;
}

function sslOf(url: SqlUrl, material: TlsMaterial | undefined): ConnectionOptions | false {
  if (url.tlsMode === 'disable') return false;
  const files = { ca: material?.ca, cert: material?.cert, key: material?.key };
  if (url.tlsMode === 'require') return { ...files, rejectUnauthorized: false };
  if (url.tlsMode === 'verify-ca') return { ...files, rejectUnauthorized: true, checkServerIdentity: () => undefined };
  const name = material?.serverName ?? url.host;
  return { ...files, rejectUnauthorized: true, checkServerIdentity: (_host, cert) => checkServerIdentity(name, cert) };
}

/** What every connection of a profile is opened with; the TLS files are read and checked once, here. */
export async function pgSpecOf(profile: ConnectionProfile): Promise<PgSpec> {
  const url = sqlUrlOf('postgres', profile.endpoints, profile.tls);
  const material = url.tlsMode !== 'disable' && profile.tls ? await loadTlsMaterial(profile.tls) : undefined;
  const user = url.user ?? (profile.username || userInfo().username);
  const timeoutMs = profile.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS;
  return {
    url,
    user,
    timeoutMs,
    config: {
      host: url.host,
      port: url.port,
      database: url.database,
      user,
      password: profile.password,
      ssl: sslOf(url, material),
      connectionTimeoutMillis: timeoutMs,
      application_name: 'LockLens',
      keepAlive: true,
    },
  };
}

/**
 * A connected client, or a LockLensError saying why not. `error` listeners are attached before connecting: an
 * unheard client error would end the process.
 */
export async function openClient(spec: PgSpec, extra: Partial<ClientConfig> = {}): Promise<Client> {
  const client = new Client({ ...spec.config, ...extra });
  client.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  // pg's own connection timeout covers the socket and the handshake; this covers a server that answers gibberish.
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout expired')), spec.timeoutMs + 1000);
  });
  try {
    await Promise.race([client.connect(), deadline]);
    return client;
  } catch (e) {
    void client.end().catch(() => undefined);
    throw await explainConnectFailure(spec, e);
  } finally {
    clearTimeout(timer);
  }
}

function at(spec: PgSpec): string {
  return `PostgreSQL at ${spec.url.label}`;
}

const TLS_ERROR = /CERT|SELF_SIGNED|UNABLE_TO_|ALTNAME|ERR_SSL|ERR_TLS|HOSTNAME/;

async function explainConnectFailure(spec: PgSpec, e: unknown): Promise<LockLensError> {
  const { url } = spec;
  const message = errorMessage(e);
  const fail = (code: ConstructorParameters<typeof LockLensError>[0], text: string) => new LockLensError(code, text, { cause: e });
  if (e instanceof DatabaseError) {
    switch (e.code) {
      case '28P01':
        return fail('AUTH', `${at(spec)} refused role "${spec.user}": wrong password, or no such role (${message})`);
      case '28000':
        if (/no encryption/.test(message) && url.tlsMode === 'disable') {
          return fail('TLS', `${at(spec)} accepts only TLS connections from here: connect with sslmode=require (or verify-ca/verify-full) (${message})`);
        }
        return fail('AUTH', `${at(spec)} refused role "${spec.user}": ${message}`);
      case '3D000':
        return fail('INVALID_ARGUMENT', `${at(spec)}: the database "${url.database}" does not exist (${message})`);
      default:
        return fail('STORE', `${at(spec)} refused the connection: ${message} (${e.code ?? 'no code'})`);
    }
  }
  if (message === 'The server does not support SSL connections') {
    return fail('TLS', `${at(spec)} does not offer TLS, but sslmode=${url.tlsMode} asks for it: connect with sslmode=disable, or turn ssl on in the server`);
  }
  const code = (e as NodeJS.ErrnoException).code ?? '';
  if (TLS_ERROR.test(code)) return fail('TLS', `${at(spec)}: the server's certificate does not verify (sslmode=${url.tlsMode}): ${message}`);
  if (code === 'ECONNREFUSED') return fail('UNREACHABLE', `nothing listens on ${url.host}:${url.port} (connection refused)`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return fail('UNREACHABLE', `${url.host} is not a known host name`);
  const seen = await probeServer(url, probeBudgetMs(spec.timeoutMs));
  const hostPort = `${url.host}:${url.port}`;
  switch (seen.kind) {
    case 'postgres':
      return /timeout/i.test(message)
        ? fail('TIMEOUT', `${at(spec)} answers, but the connection was not set up within ${spec.timeoutMs} ms (${message})`)
        : fail('UNREACHABLE', `${at(spec)}: ${message}`);
    case 'other':
      return fail('UNREACHABLE', `${hostPort} is not a PostgreSQL server: it answered ${JSON.stringify(seen.text)}`);
    case 'closed':
      return fail('UNREACHABLE', `${hostPort} accepted the connection and closed it without a PostgreSQL answer: not PostgreSQL, or a server that is not serving`);
    case 'silent':
      return fail('TIMEOUT', `${hostPort} accepted the TCP connection but gave no PostgreSQL answer: not a PostgreSQL server, or a stuck one (${message})`);
    case 'error':
      return fail('UNREACHABLE', `${hostPort}: ${seen.message}`);
  }
}

type Seen = { kind: 'postgres' | 'closed' | 'silent' } | { kind: 'other'; text: string } | { kind: 'error'; message: string };

/** PostgreSQL's SSLRequest: length 8, code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

/** Asks what every PostgreSQL server answers with one byte, `S` or `N` (older ones may send an error, `E`). */
function probeServer(url: SqlUrl, timeoutMs: number): Promise<Seen> {
  const socket = createConnection({ host: url.host, port: url.port });
  return probe<Seen>(socket, timeoutMs, { kind: 'silent' }, (done) => {
    let got = Buffer.alloc(0);
    socket.once('connect', () => socket.write(SSL_REQUEST));
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const first = got.toString('latin1', 0, 1);
      if (got.length === 1 && (first === 'S' || first === 'N')) return done({ kind: 'postgres' });
      if (first === 'E' && got.length >= 5 && got.readInt32BE(1) < 10_000) return done({ kind: 'postgres' });
      if (got.length >= 2) done({ kind: 'other', text: firstLine(got) });
    });
    socket.once('error', (err) => done({ kind: 'error', message: err.message }));
    socket.once('close', () => done(got.length ? { kind: 'other', text: printable(got.toString('latin1')) } : { kind: 'closed' }));
  });
}

/** PostgreSQL error codes of a connection that is gone: admin shutdown, crash shutdown, cannot connect now. */
const CONNECTION_GONE = /^(57P0[1-3]|08)/;

/** Whether `e` left its connection unusable (the next statement needs a new one). */
function isConnectionError(e: unknown): boolean {
  if (e instanceof DatabaseError) return CONNECTION_GONE.test(e.code ?? '');
  return !(e instanceof LockLensError && e.code !== 'TIMEOUT');
}

/** The server facts the backend's statements depend on. */
export interface ServerInfo {
  /** server_version_num: 150004 for 15.4. */
  readonly version: number;
  readonly currentUser: string;
}

/** See the file's comment. */
export class PgConnection {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private closed = false;
  /** Statements under way: close waits for them (a cancel of a waiting acquire must reach the server). */
  private readonly running = new Set<Promise<unknown>>();

  private constructor(
    readonly spec: PgSpec,
    readonly server: ServerInfo,
    client: Client,
  ) {
    this.adopt(client);
  }

  static async open(spec: PgSpec): Promise<PgConnection> {
    const client = await openClient(spec);
    try {
      const [row] = (await client.query("SELECT current_setting('server_version_num')::int AS version, current_user AS usr")).rows as { version: number; usr: string }[];
      return new PgConnection(spec, { version: row.version, currentUser: row.usr }, client);
    } catch (e) {
      void client.end().catch(() => undefined);
      throw new LockLensError('STORE', `${at(spec)}: ${errorMessage(e)}`, { cause: e });
    }
  }

  private adopt(client: Client): void {
    this.client = client;
    const forget = () => {
      if (this.client === client) this.client = undefined;
    };
    client.on('error', forget);
    client.on('end', forget);
  }

  private async live(): Promise<Client> {
    if (this.closed) throw new LockLensError('CLOSED', 'the PostgreSQL connection is closed');
    if (this.client) return this.client;
    this.connecting ??= openClient(this.spec).finally(() => (this.connecting = undefined));
    const client = await this.connecting;
    if (this.closed) {
      void client.end().catch(() => undefined);
      throw new LockLensError('CLOSED', 'the PostgreSQL connection is closed');
    }
    if (this.client !== client) this.adopt(client);
    return client;
  }

  /** One statement's rows, within the dial timeout; a connection that broke or timed out is replaced on the next one. */
  async query<R = Record<string, unknown>>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    return (await this.run(sql, params)).rows as R[];
  }

  /** How many rows a statement changed. */
  async execute(sql: string, params: readonly unknown[] = []): Promise<number> {
    return (await this.run(sql, params)).rowCount ?? 0;
  }

  private async run(sql: string, params: readonly unknown[]): Promise<QueryResult> {
    const client = await this.live();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new LockLensError('TIMEOUT', `${at(this.spec)} did not answer within ${this.spec.timeoutMs} ms`)), this.spec.timeoutMs);
    });
    const run = client.query(sql, params as unknown[]);
    this.running.add(run);
    try {
      return await Promise.race([run, deadline]);
    } catch (e) {
      if (isConnectionError(e)) {
        if (this.client === client) this.client = undefined;
        void client.end().catch(() => undefined);
      }
      throw e;
    } finally {
      clearTimeout(timer);
      this.running.delete(run);
      run.catch(() => undefined);
    }
  }

  /** Closes once the statements under way have their answer. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.running]);
    await this.client?.end().catch(() => undefined);
    this.client = undefined;
  }
}

/**
 * One verified ioredis connection per endpoint. ioredis on its own retries forever, queues commands while offline and
 * reports most failures as "Connection is closed.", so opening is done under our own deadline with retries off, and a
 * failure is explained by what the server said (WRONGPASS, NOAUTH) or, when it said nothing useful, by asking the
 * socket directly (plain RESP? TLS?). Afterwards commands fail fast while disconnected and the client reconnects.
 */
import { createConnection } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import Redis, { Cluster, type RedisOptions } from 'ioredis';
import { LockLensError, errorMessage } from '../errors';
import { DEFAULT_DIAL_TIMEOUT_MS, type ConnectionProfile } from '../profile';
import { printable, probe } from '../socketProbe';
import { loadTlsMaterial, oneLine, type TlsMaterial } from '../tlsMaterial';
import { parseRedisEndpoint, type RedisEndpoint } from './endpoints';

export interface ClientSpec {
  readonly endpoint: RedisEndpoint;
  readonly username?: string;
  readonly password?: string;
  readonly tls?: TlsMaterial;
  readonly timeoutMs: number;
}

/** The specs of a profile's endpoints, with its TLS files read and checked once. */
export async function clientSpecs(profile: ConnectionProfile): Promise<ClientSpec[]> {
  if (profile.endpoints.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'no Redis endpoint given');
  const endpoints = profile.endpoints.map(parseRedisEndpoint);
  const anyTls = endpoints.some((e) => e.tls);
  const tls = anyTls ? await loadTlsMaterial(profile.tls ?? {}) : undefined;
  const timeoutMs = profile.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS;
  return endpoints.map((endpoint) => ({
    endpoint,
    username: profile.username || endpoint.username,
    password: profile.password || endpoint.password,
    tls: endpoint.tls ? tls : undefined,
    timeoutMs,
  }));
}

function tlsOptions(spec: ClientSpec): ConnectionOptions | undefined {
  const t = spec.tls;
  if (!spec.endpoint.tls || !t) return undefined;
  const servername = t.serverName ?? (isIp(spec.endpoint.host) ? undefined : spec.endpoint.host);
  return {
    ca: t.ca,
    cert: t.cert,
    key: t.key,
    servername,
    rejectUnauthorized: !t.insecureSkipVerify,
    checkServerIdentity: (host, cert) => checkServerIdentity(t.serverName ?? host, cert),
  };
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}

/** Reconnect quickly at first, then every 2 s: a restarted server is back within a few seconds. */
export function reconnectDelay(times: number): number {
  return Math.min(100 * times, 2000);
}

function redisOptions(spec: ClientSpec, connectionName: string): RedisOptions {
  return {
    host: spec.endpoint.host,
    port: spec.endpoint.port,
    db: spec.endpoint.db,
    username: spec.username,
    password: spec.password,
    tls: tlsOptions(spec),
    // RESP2: every server since 2.x speaks it, and replies (HGETALL pairs, pub/sub) keep one shape.
    protocol: 2,
    connectionName,
    lazyConnect: true,
    // Never queue or resend while disconnected: a command on a dead server fails now and says why.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: spec.timeoutMs,
    commandTimeout: spec.timeoutMs,
    // No retry while opening: the first failure is the answer. Set to reconnectDelay once open.
    retryStrategy: () => null,
  };
}

/** Opens and verifies (PING) a client, or throws a LockLensError saying why not. */
export async function openClient(spec: ClientSpec, connectionName = 'locklens'): Promise<Redis> {
  const client = new Redis(redisOptions(spec, connectionName));
  const errors: Error[] = [];
  const onError = (e: Error) => errors.push(e);
  client.on('error', onError);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), spec.timeoutMs)));
  try {
    const outcome = await Promise.race([
      (async () => {
        await client.connect();
        const pong = await client.ping();
        if (pong !== 'PONG') throw new Error(`PING answered ${JSON.stringify(pong)}`);
        return 'ok' as const;
      })().catch((e: unknown) => e as Error),
      deadline,
    ]);
    if (outcome === 'ok') {
      client.options.retryStrategy = reconnectDelay;
      client.off('error', onError);
      // ioredis reports every reconnect failure as an 'error' event; without a listener node would print them.
      client.on('error', () => undefined);
      return client;
    }
    client.disconnect();
    throw await explainOpenFailure(spec, outcome === 'timeout' ? undefined : outcome, errors);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether the server is a Redis Cluster node (`INFO cluster` says `cluster_enabled:1`): then its keys are spread over
 * masters and the connection switches to a Cluster by itself. A server that refuses INFO (an ACL user without it) is
 * taken as a plain one.
 */
export async function isClusterNode(client: Redis): Promise<boolean> {
  try {
    return /^cluster_enabled:1\s*$/m.test(await client.info('cluster'));
  } catch {
    return false;
  }
}

/**
 * An ioredis Cluster seeded with the given nodes, verified: the slot map loaded, every master answering PING, within
 * the dial timeout. Commands fail fast while a node is down rather than queue.
 */
export async function openCluster(specs: readonly ClientSpec[]): Promise<Cluster> {
  const seed = specs[0];
  if (specs.some((s) => s.endpoint.db !== 0)) {
    throw new LockLensError('INVALID_ARGUMENT', `Redis at ${seed.endpoint.label} is a Redis Cluster, which has only database 0: drop the /db from the URL`);
  }
  const { host: _h, port: _p, db: _d, lazyConnect: _l, retryStrategy: _r, ...nodeOptions } = redisOptions(seed, 'locklens');
  const cluster = new Cluster(
    specs.map((s) => ({ host: s.endpoint.host, port: s.endpoint.port })),
    {
      redisOptions: nodeOptions,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRedirections: 16,
      slotsRefreshTimeout: seed.timeoutMs,
      // Once open: reconnect like a single instance does. While opening: the first failure is the answer.
      clusterRetryStrategy: () => null,
    },
  );
  cluster.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), seed.timeoutMs * 2)));
  try {
    const outcome = await Promise.race([
      (async () => {
        await cluster.connect();
        const masters = cluster.nodes('master');
        if (masters.length === 0) throw new Error('the cluster has no master');
        await Promise.all(masters.map((m) => m.ping()));
        const info = await masters[0].cluster('INFO');
        const state = /^cluster_state:(\w+)/m.exec(String(info))?.[1];
        if (state !== 'ok') throw new LockLensError('STORE', `the Redis Cluster at ${seed.endpoint.label} is not serving (cluster_state:${state ?? 'unknown'})`);
        return 'ok' as const;
      })().catch((e: unknown) => e as Error),
      deadline,
    ]);
    if (outcome === 'ok') {
      cluster.options.clusterRetryStrategy = reconnectDelay;
      return cluster;
    }
    cluster.disconnect();
    if (outcome instanceof LockLensError) throw outcome;
    if (outcome === 'timeout') throw new LockLensError('TIMEOUT', `the Redis Cluster at ${seed.endpoint.label} did not become ready within ${seed.timeoutMs * 2} ms`);
    throw new LockLensError('UNREACHABLE', `the Redis Cluster at ${seed.endpoint.label}: ${firstLine(outcome.message)}`, { cause: outcome });
  } finally {
    clearTimeout(timer);
  }
}

/** The error that matters among what ioredis reported (the rejection is often only "Connection is closed."). */
function rootCause(rejection: Error | undefined, events: readonly Error[]): Error | undefined {
  const all = [...events, ...(rejection ? [rejection] : [])];
  return all.find((e) => /WRONGPASS|NOAUTH|NOPERM|invalid password|ERR AUTH|Unknown RESP type/i.test(e.message)) ?? events[0] ?? rejection;
}

export async function explainOpenFailure(spec: ClientSpec, rejection: Error | undefined, events: readonly Error[]): Promise<LockLensError> {
  const at = `Redis at ${spec.endpoint.label}`;
  const cause = rootCause(rejection, events);
  const message = cause?.message ?? '';
  const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (/WRONGPASS|invalid password|invalid username-password/i.test(message)) {
    const who = spec.username ? `user '${spec.username}' and its password` : 'password (of the default user)';
    return new LockLensError('AUTH', `${at} rejected the ${who}: wrong password, unknown or disabled ACL user (WRONGPASS)`, { cause });
  }
  if (/NOAUTH/i.test(message)) {
    return new LockLensError('AUTH', `${at} requires a password (NOAUTH): set the connection's password, and its username for an ACL user`, { cause });
  }
  if (/NOPERM/i.test(message)) {
    return new LockLensError('PERMISSION', `${at}: the ACL user${spec.username ? ` '${spec.username}'` : ''} may not run a command LockLens needs (${firstLine(message)})`, { cause });
  }
  if (code === 'ECONNREFUSED') return new LockLensError('UNREACHABLE', `${at}: connection refused (nothing listens on that port)`, { cause });
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new LockLensError('UNREACHABLE', `${at}: host ${spec.endpoint.host} not found`, { cause });
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return new LockLensError('UNREACHABLE', `${at}: host unreachable`, { cause });
  const tlsReason = spec.endpoint.tls ? certificateProblem(cause, spec) : undefined;
  if (tlsReason) return new LockLensError('TLS', `${at}: ${tlsReason}`, { cause });

  // Nothing useful was said: ask the socket what speaks on that port (both questions at once, briefly).
  const probeMs = Math.min(spec.timeoutMs, 1000);
  const [plain, tlsAnswers] = await Promise.all([probePlain(spec.endpoint, probeMs), spec.endpoint.tls ? false : speaksTls(spec.endpoint, probeMs)]);
  if (plain.kind === 'refused') return new LockLensError('UNREACHABLE', `${at}: connection refused (nothing listens on that port)`, { cause });
  if (spec.endpoint.tls) {
    if (plain.kind === 'redis') {
      return new LockLensError('TLS', `${at} speaks plain Redis, not TLS: use redis:// instead of rediss://`, { cause });
    }
    // Under TLS 1.3 the server checks the client's certificate after the handshake: its alert can be lost to the
    // close that follows it, and the client then sees only a closed connection. Ask once more, and listen for it.
    const after = await tlsAfterHandshake(spec, probeMs);
    const reason = after.kind === 'error' ? certificateProblem(after.error, spec) : undefined;
    if (reason) return new LockLensError('TLS', `${at}: ${reason}`, { cause });
    if (after.kind === 'closed') {
      const why = spec.tls?.cert
        ? 'it may not accept the client certificate (is it signed by a CA the server trusts?)'
        : 'it may require a client certificate (set one, with its key)';
      return new LockLensError('TLS', `${at} closed the TLS connection without answering: ${why}`, { cause });
    }
  } else if (tlsAnswers) {
    return new LockLensError('TLS', `${at} speaks TLS: use rediss:// (and set the CA file that signed its certificate)`, { cause });
  }
  if (plain.kind === 'other') {
    return new LockLensError('UNREACHABLE', `${at} is not a Redis server: it answered ${JSON.stringify(plain.text)}`, { cause });
  }
  if (plain.kind === 'redis' && plain.text.startsWith('-')) {
    return new LockLensError('STORE', `${at} refused the connection: ${plain.text}`, { cause });
  }
  if (plain.kind === 'silent' || !cause || /timed? ?out|ETIMEDOUT/i.test(message)) {
    return new LockLensError(
      'TIMEOUT',
      `${at} accepted the TCP connection but gave no Redis answer within ${spec.timeoutMs} ms: not a Redis server, or a stuck one`,
      { cause },
    );
  }
  return new LockLensError('UNREACHABLE', `${at}: ${firstLine(message) || 'the connection closed'}`, { cause });
}

function firstLine(s: string): string {
  return s.split('\n')[0];
}

function certificateProblem(cause: Error | undefined, spec: ClientSpec): string | undefined {
  if (!cause) return undefined;
  const code = (cause as NodeJS.ErrnoException).code ?? '';
  const trusted = spec.tls?.caCerts.length
    ? `the CA file (${spec.tls.caCerts.map((c) => oneLine(c.subject)).join('; ')})`
    : "the system's trusted roots: set the CA file that signed it";
  switch (code) {
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
    case 'UNABLE_TO_GET_ISSUER_CERT':
      return `the server's certificate is not signed by ${trusted}`;
    case 'CERT_HAS_EXPIRED':
      return "the server's certificate has expired";
    case 'CERT_NOT_YET_VALID':
      return "the server's certificate is not valid yet";
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `the server's certificate is not valid for '${spec.tls?.serverName ?? spec.endpoint.host}' (${cause.message}): connect by a name it lists or set the server name override`;
  }
  if (/wrong version number|packet length too long|unknown protocol/i.test(cause.message)) {
    return 'the server does not speak TLS here: use redis:// instead of rediss://';
  }
  if (/alert|certificate required|handshake failure/i.test(cause.message)) {
    return spec.tls?.cert
      ? `the server rejected the TLS handshake or the client certificate (${firstLine(cause.message)})`
      : `the server refused the TLS handshake, it may require a client certificate (${firstLine(cause.message)})`;
  }
  return undefined;
}

type PlainProbe = { kind: 'redis' | 'other'; text: string } | { kind: 'silent' | 'closed' | 'refused' };

/** Sends an inline PING in the clear and looks at the first bytes back: RESP starts with + - : $ or *. */
function probePlain(endpoint: RedisEndpoint, timeoutMs: number): Promise<PlainProbe> {
  const socket = createConnection({ host: endpoint.host, port: endpoint.port });
  return probe<PlainProbe>(socket, timeoutMs, { kind: 'silent' }, (done) => {
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (d: Buffer) => {
      const text = d.toString('latin1', 0, Math.min(d.length, 60)).split('\r\n')[0];
      done({ kind: /^[+\-:$*]/.test(text) ? 'redis' : 'other', text: printable(text) });
    });
    socket.once('error', (e: NodeJS.ErrnoException) => done(e.code === 'ECONNREFUSED' ? { kind: 'refused' } : { kind: 'closed' }));
    socket.once('close', () => done({ kind: 'closed' }));
  });
}

type AfterHandshake = { kind: 'answered' | 'closed' | 'silent' } | { kind: 'error'; error: Error };

/**
 * With the connection's own TLS settings: the handshake, then a PING. `answered`: the server replied; `closed`: it
 * hung up after the handshake without a word; `error`: what failed (an alert, a certificate), to diagnose.
 */
function tlsAfterHandshake(spec: ClientSpec, timeoutMs: number): Promise<AfterHandshake> {
  const socket = tlsConnect({ host: spec.endpoint.host, port: spec.endpoint.port, ...tlsOptions(spec) });
  return probe<AfterHandshake>(socket, timeoutMs, { kind: 'silent' }, (done) => {
    socket.once('secureConnect', () => socket.write('PING\r\n'));
    socket.once('data', () => done({ kind: 'answered' }));
    socket.once('error', (error) => done({ kind: 'error', error }));
    socket.once('close', () => done({ kind: 'closed' }));
  });
}

/** Whether a TLS handshake (without verification) completes: the port speaks TLS. */
function speaksTls(endpoint: RedisEndpoint, timeoutMs: number): Promise<boolean> {
  const socket = tlsConnect({ host: endpoint.host, port: endpoint.port, rejectUnauthorized: false, servername: isIp(endpoint.host) ? undefined : endpoint.host });
  return probe(socket, timeoutMs, false, (done) => {
    socket.once('secureConnect', () => done(true));
    // A TLS alert is an answer in TLS too (a server that wants a client certificate).
    socket.once('error', (e) => done(/alert/i.test(errorMessage(e))));
    socket.once('close', () => done(false));
  });
}

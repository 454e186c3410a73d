import * as grpc from '@grpc/grpc-js';
import { isBrokenCircuitError, noop } from 'cockatiel';
import {
  Etcd3,
  EtcdAuthenticationFailedError,
  EtcdInvalidAuthTokenError,
  EtcdPermissionDeniedError,
  GRPCDeadlineExceededError,
  GRPCUnauthenticatedError,
  GRPCUnavailableError,
  type IOptions,
} from 'etcd3';
import { diagnoseEndpoint } from './diagnose';
import { LockLensError, errorMessage } from '../errors';
import { DEFAULT_DIAL_TIMEOUT_MS, parseEndpoints, type ConnectionProfile, type Endpoint } from '../profile';
import { loadTlsMaterial, type TlsMaterial } from '../tlsMaterial';

/**
 * An open, verified connection to one etcd cluster: the etcd3 client plus the namespace that every key is read and
 * written under. Opening it proves the cluster answers and the credentials are right, or says precisely why not.
 */
export class EtcdConnection {
  private constructor(
    readonly client: Etcd3,
    readonly namespace: Buffer,
    readonly endpoints: readonly Endpoint[],
    readonly callTimeoutMs: number,
  ) {}

  static async open(profile: ConnectionProfile): Promise<EtcdConnection> {
    const { endpoints, wantsTls } = parseEndpoints(profile.endpoints);
    const timeoutMs = profile.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS;
    const tls = profile.tls || wantsTls ? await loadTlsMaterial(profile.tls ?? {}) : undefined;
    const client = createClient(profile, endpoints, tls, timeoutMs);
    const connection = new EtcdConnection(client, Buffer.from(profile.namespace ?? ''), endpoints, timeoutMs);
    try {
      // Status needs no key permissions, and with a user name it authenticates first: reachability and credentials.
      await withDeadline(client.maintenance.status(), timeoutMs);
      // Without a user name etcd 3.4 answers Status even when auth is on; one key read tells. Permission denied is
      // fine here (credentials work, that key is not theirs); "user name is empty" is not.
      if (!profile.username) await withDeadline(requireNoAuth(client), timeoutMs);
    } catch (e) {
      client.close();
      throw await explainConnectFailure(e, endpoints, tls, timeoutMs);
    }
    return connection;
  }

  /** The etcd key for a key as the user names it (inside the namespace). */
  toEtcd(key: Uint8Array): Buffer {
    return this.namespace.length ? Buffer.concat([this.namespace, key]) : Buffer.from(key);
  }

  close(): void {
    this.client.close();
  }
}

async function requireNoAuth(client: Etcd3): Promise<void> {
  try {
    await client.kv.range({ key: Buffer.from([0]), count_only: true });
  } catch (e) {
    const error = asLockLensError(e);
    if (error.code === 'AUTH') throw new LockLensError('AUTH', 'this etcd has authentication enabled: give a user name and password', { cause: e });
    if (error.code !== 'PERMISSION') throw error;
  }
}

function createClient(profile: ConnectionProfile, endpoints: Endpoint[], tls: TlsMaterial | undefined, timeoutMs: number): Etcd3 {
  const options: IOptions = {
    hosts: endpoints.map((e) => `${tls ? 'https' : 'http'}://${e.host.includes(':') ? `[${e.host}]` : e.host}:${e.port}`),
    auth: profile.username ? { username: profile.username, password: profile.password ?? '' } : undefined,
    credentials: tls ? { rootCertificate: tls.ca ?? (null as unknown as Buffer), privateKey: tls.key, certChain: tls.cert } : undefined,
    grpcOptions: {
      // Ranges over many keys with large values exceed gRPC's 4 MB default; etcd bounds requests itself.
      'grpc.max_receive_message_length': -1,
      // gRPC's reconnect backoff grows to 120 s; after an outage LockLens should see etcd back within seconds.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2000,
      // A frozen or cut-off member leaves watch streams silent, and a silent watch would show a frozen model as live.
      // Pings every 10 s while a call or stream is open (etcd's --grpc-keepalive-min-time allows 5 s; it refuses pings
      // on idle connections) make such a connection fail, and the streams reconnect and reconcile.
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      ...(tls?.serverName ? { 'grpc.ssl_target_name_override': tls.serverName, 'grpc.default_authority': tls.serverName } : {}),
    },
    // Unary calls get a deadline so nothing hangs on a silent server; streams (watch, keepalive) live as long as needed.
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeoutMs }),
    // etcd3's default also puts a circuit breaker on each host, which refuses every call for 5 s after three
    // failures: after a restart that keeps LockLens blind when etcd is already back. Deadlines and the global retry
    // (three attempts, each on another endpoint) are enough.
    faultHandling: { host: () => noop },
  };
  const client = new Etcd3(options);
  if (tls?.insecureSkipVerify) skipServerVerification(client, tls);
  return client;
}

/**
 * etcd3 1.1.2 builds its TLS credentials with grpc-js's three-argument createSsl, which cannot turn off verification.
 * Swap in credentials with grpc-js's verify options before the first call opens a channel (none is open yet).
 * Pinned etcd3 version; the TLS integration tests cover this.
 */
function skipServerVerification(client: Etcd3, tls: TlsMaterial): void {
  const credentials = grpc.credentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null, {
    rejectUnauthorized: false,
    checkServerIdentity: () => undefined,
  });
  const pool = (client as unknown as { pool: { hosts: { channelCredentials: unknown }[]; authenticator: { credentials: unknown } } }).pool;
  for (const host of pool.hosts) host.channelCredentials = credentials;
  pool.authenticator.credentials = credentials;
}

export async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LockLensError('TIMEOUT', `no answer from etcd within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function explainConnectFailure(e: unknown, endpoints: Endpoint[], tls: TlsMaterial | undefined, timeoutMs: number): Promise<LockLensError> {
  const known = asLockLensError(e);
  if (known.code !== 'UNREACHABLE' && known.code !== 'TIMEOUT') return known;
  const found = await Promise.all(endpoints.map((ep) => diagnoseEndpoint(ep, tls, Math.min(timeoutMs, 3000))));
  const bad = found.filter((d) => d.kind !== 'ok');
  if (bad.length === 0) return known;
  const lines = bad.map((d) => `${d.endpoint.text}: ${d.reason}`).join('; ');
  const code = bad.some((d) => d.kind === 'tls') ? 'TLS' : bad.every((d) => d.kind === 'unreachable') ? 'UNREACHABLE' : 'TIMEOUT';
  return new LockLensError(code, `cannot reach etcd: ${lines}`, { cause: e });
}

/** Maps what etcd3/gRPC throws to LockLens's typed errors. */
export function asLockLensError(e: unknown): LockLensError {
  if (e instanceof LockLensError) return e;
  const message = errorMessage(e);
  if (e instanceof EtcdAuthenticationFailedError || e instanceof EtcdInvalidAuthTokenError || e instanceof GRPCUnauthenticatedError) {
    return new LockLensError('AUTH', `etcd refused the credentials: ${message}`, { cause: e });
  }
  if (/user name is empty|authentication is not enabled/i.test(message)) {
    return new LockLensError('AUTH', `etcd refused the credentials: ${message}`, { cause: e });
  }
  if (e instanceof EtcdPermissionDeniedError) return new LockLensError('PERMISSION', `etcd denied the request: ${message}`, { cause: e });
  if (e instanceof GRPCDeadlineExceededError) return new LockLensError('TIMEOUT', `etcd did not answer in time: ${message}`, { cause: e });
  if (e instanceof GRPCUnavailableError || isBrokenCircuitError(e)) return new LockLensError('UNREACHABLE', `etcd is unavailable: ${message}`, { cause: e });
  if (/lease not found/i.test(message)) return new LockLensError('LEASE_NOT_FOUND', 'lease not found (expired or revoked)', { cause: e });
  return new LockLensError('ETCD', message, { cause: e });
}

/** Runs one etcd call and reports its failure as a LockLensError. */
export async function call<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (e) {
    throw asLockLensError(e);
  }
}

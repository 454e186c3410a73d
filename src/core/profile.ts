import { LockLensError } from './errors';

/** TLS settings of a connection. Paths are read when connecting; the passphrase is a secret (never in settings). */
export interface TlsOptions {
  /** PEM CA bundle that signed the server's certificate; the system roots when absent. */
  readonly caFile?: string;
  /** PEM client certificate (with its chain), for etcd's `--client-cert-auth`. */
  readonly certFile?: string;
  /** PEM private key of the client certificate: PKCS#1, PKCS#8 (plain or encrypted) or SEC1. */
  readonly keyFile?: string;
  readonly keyPassphrase?: string;
  /** The name to verify the server's certificate against, when endpoints are IPs or tunnels. */
  readonly serverName?: string;
  /** Accept any server certificate. Dangerous: anyone on the path can read and forge every lock. */
  readonly insecureSkipVerify?: boolean;
}

export interface ConnectionProfile {
  /** Which store the endpoints are: a `StoreKind` of the registry (stores.ts), which checks it; default etcd. */
  readonly store?: string;
  /**
   * etcd: `host:port`, `http://host:port` or `https://host:port` (https turns TLS on). Redis: `redis://host:port[/db]`
   * or `rediss://…` (TLS); several are independent instances (redlock), not replicas. ZooKeeper:
   * `zookeeper://host:port[,host:port…][/chroot][?sessionTimeout=ms]`, the servers of one ensemble; `username` and
   * `password` are then digest credentials (ZooKeeper only checks them against a node's ACL).
   */
  readonly endpoints: readonly string[];
  readonly username?: string;
  readonly password?: string;
  readonly tls?: TlsOptions;
  /** A key prefix every key is read and written under, shown without it (like etcdctl's --namespace... but for all). */
  readonly namespace?: string;
  /** How long connecting, and each unary call, may take before LockLens says why it could not. */
  readonly dialTimeoutMs?: number;
  /** SQL stores: lock tables of the user's own layout, read besides the ones LockLens recognises (ShedLock, Liquibase, …). */
  readonly lockTables?: readonly LockTableSpec[];
}

/**
 * A lock table of the user's own (`locklens.lockTables`): one row per held lock. A row whose expiry has passed is shown
 * as expired; without an expiry column a row is held until it is deleted. Force release deletes the row, only while it
 * still has the holder and expiry the user was shown.
 */
export interface LockTableSpec {
  /** The table, optionally schema-qualified (`jobs.locks`). */
  readonly table: string;
  readonly nameColumn: string;
  readonly holderColumn: string;
  readonly expiryColumn?: string;
}

export interface Endpoint {
  readonly host: string;
  readonly port: number;
  /** As given, for messages. */
  readonly text: string;
}

export const DEFAULT_DIAL_TIMEOUT_MS = 5000;
const ENDPOINT = /^(?:(https?):\/\/)?(\[[0-9a-fA-F:.]+\]|[^:/\s[\]]+)(?::(\d{1,5}))?\/?$/;

/** Validated endpoints, and whether any `https://` asks for TLS. */
export function parseEndpoints(endpoints: readonly string[]): { endpoints: Endpoint[]; wantsTls: boolean } {
  if (endpoints.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'no etcd endpoint given');
  let wantsTls = false;
  const parsed = endpoints.map((text) => {
    const m = ENDPOINT.exec(text.trim());
    const port = m?.[3] === undefined ? 2379 : Number(m[3]);
    if (!m || port < 1 || port > 65535) {
      throw new LockLensError('INVALID_ARGUMENT', `'${text}' is not an etcd endpoint: write host:port, e.g. 127.0.0.1:2379`);
    }
    if (m[1] === 'https') wantsTls = true;
    return { host: m[2].replace(/^\[|\]$/g, ''), port, text };
  });
  return { endpoints: parsed, wantsTls };
}

/**
 * Splits endpoints typed in one line, comma separated, the way etcdctl does. A ZooKeeper URL lists its ensemble's
 * servers with commas inside it (`zookeeper://a:2181,b:2181/chroot`): what follows one without a scheme of its own is
 * still that URL.
 */
export function splitEndpoints(list: string): string[] {
  const parts: string[] = [];
  for (const part of list.split(',').map((s) => s.trim())) {
    if (!part) continue;
    const previous = parts.length - 1;
    if (previous >= 0 && /^zookeeper:\/\//i.test(parts[previous]) && !/^[a-z][a-z0-9+.-]*:\/\//i.test(part)) parts[previous] += `,${part}`;
    else parts.push(part);
  }
  return parts;
}

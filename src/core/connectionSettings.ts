import type { ConnectionProfile, LockTableSpec } from './profile';
import type { StoreKind } from './stores';

/**
 * One connection as a person writes it: in VS Code's `locklens.connections`, or in `locklens serve`'s config file.
 * Secrets are not here: VS Code keeps the password and the key passphrase in SecretStorage under the connection's
 * name; serve reads them from the environment variables or files its config names.
 */
export interface ConnectionSettings {
  readonly name: string;
  /** Which store; etcd when absent (connections written before there were others). */
  readonly store?: StoreKind;
  /** etcd: host:port or http(s)://host:port; Redis: redis:// or rediss:// URLs (several: independent redlock instances). */
  readonly endpoints: readonly string[];
  readonly username?: string;
  readonly namespace?: string;
  readonly prefixes?: readonly string[];
  readonly tls?: {
    readonly caFile?: string;
    readonly certFile?: string;
    readonly keyFile?: string;
    readonly serverName?: string;
    readonly insecureSkipVerify?: boolean;
  };
  readonly dialTimeoutMs?: number;
}

export interface ConnectionSecrets {
  readonly password?: string;
  readonly keyPassphrase?: string;
}

/** What opening the connection takes: its settings, its secrets, and the user's own lock tables (SQL stores read them). */
export function toProfile(c: ConnectionSettings, secrets: ConnectionSecrets, lockTables: readonly LockTableSpec[]): ConnectionProfile {
  return {
    lockTables,
    store: c.store,
    endpoints: c.endpoints,
    username: c.username || undefined,
    password: secrets.password,
    namespace: c.namespace || undefined,
    dialTimeoutMs: c.dialTimeoutMs,
    tls: c.tls && { ...c.tls, keyPassphrase: secrets.keyPassphrase },
  };
}

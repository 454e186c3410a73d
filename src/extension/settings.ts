import * as vscode from 'vscode';
import type { ConnectionProfile } from '../core/profile';

/**
 * One connection as stored in settings (`locklens.connections`). Secrets are not here: the password and the key
 * passphrase live in SecretStorage under the connection's name (see secrets.ts).
 */
export interface ConnectionSettings {
  readonly name: string;
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

const SECTION = 'locklens';

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

export function readConnections(): ConnectionSettings[] {
  const raw = config().get<unknown>('connections');
  return Array.isArray(raw) ? raw.filter(isConnectionSettings) : [];
}

function isConnectionSettings(v: unknown): v is ConnectionSettings {
  const c = v as ConnectionSettings;
  return typeof c?.name === 'string' && Array.isArray(c.endpoints) && c.endpoints.every((e) => typeof e === 'string');
}

/** Connections are machine-wide facts about clusters, so they go to user settings, not to one workspace. */
export async function writeConnections(connections: readonly ConnectionSettings[]): Promise<void> {
  await config().update('connections', connections.map(withoutEmpty), vscode.ConfigurationTarget.Global);
}

/** Keeps settings.json readable: no `"username": ""` or `"insecureSkipVerify": false`. */
function withoutEmpty(c: ConnectionSettings): ConnectionSettings {
  return JSON.parse(JSON.stringify(c, (_key, v: unknown) => (v === '' || v === false ? undefined : v))) as ConnectionSettings;
}

export function isReadOnly(): boolean {
  return config().get<boolean>('readOnly', false);
}

export function longHoldMs(): number {
  return config().get<number>('longHoldSeconds', 300) * 1000;
}

export function leaseSampleIntervalMs(): number {
  return Math.max(0.5, config().get<number>('leaseSampleSeconds', 2)) * 1000;
}

export function defaultAcquireTtl(): number {
  return config().get<number>('acquireTtlSeconds', 60);
}

export function autoConnect(): boolean {
  return config().get<boolean>('autoConnect', true);
}

export function toProfile(c: ConnectionSettings, secrets: ConnectionSecrets): ConnectionProfile {
  return {
    endpoints: c.endpoints,
    username: c.username || undefined,
    password: secrets.password,
    namespace: c.namespace || undefined,
    dialTimeoutMs: c.dialTimeoutMs,
    tls: c.tls && { ...c.tls, keyPassphrase: secrets.keyPassphrase },
  };
}

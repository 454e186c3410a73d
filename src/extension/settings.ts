import * as vscode from 'vscode';
import type { ConnectionSettings } from '../core/connectionSettings';
import type { LockTableSpec } from '../core/profile';

const SECTION = 'locklens';

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

/**
 * Connections come from user settings only: a workspace's `.vscode/settings.json` must not be able to point a
 * connection name (and so its stored password) at another host. (A `machine` scope would say the same, but remote
 * windows, code-server's included, then ignore the user's own settings.)
 */
export function readConnections(): ConnectionSettings[] {
  const raw = config().inspect<unknown>('connections')?.globalValue;
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

/**
 * Keeps settings.json readable: no `"username": ""` or `"insecureSkipVerify": false`. An empty prefix in the list is
 * kept: it watches every lock (a SQL connection's default), and dropping it from an array would leave a null there.
 */
function withoutEmpty(c: ConnectionSettings): ConnectionSettings {
  return JSON.parse(
    JSON.stringify(c, function (this: unknown, _key, v: unknown) {
      return !Array.isArray(this) && (v === '' || v === false) ? undefined : v;
    }),
  ) as ConnectionSettings;
}

/** Read-only if any level says so: a workspace can turn it on for its folder, never off against the user's settings. */
export function isReadOnly(): boolean {
  const v = config().inspect<boolean>('readOnly');
  return [v?.globalValue, v?.workspaceValue, v?.workspaceFolderValue].some((x) => x === true);
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

/** How often a store without change notifications (Redis with keyspace notifications off) is read again. */
export function pollIntervalMs(): number {
  return Math.max(0.2, config().get<number>('pollSeconds', 1)) * 1000;
}

export function autoConnect(): boolean {
  return config().get<boolean>('autoConnect', true);
}

/**
 * The user's own lock tables (`locklens.lockTables`), read by every SQL connection (the other stores have no tables);
 * malformed entries are left out. From user settings only, as connections are: a workspace's `.vscode/settings.json`
 * must not be able to turn a table of the user's database (`users`, say) into "locks" whose Force Release deletes rows.
 */
export function lockTables(): LockTableSpec[] {
  const raw = config().inspect<unknown>('lockTables')?.globalValue ?? [];
  return Array.isArray(raw) ? raw.filter(isLockTableSpec) : [];
}

function isLockTableSpec(v: unknown): v is LockTableSpec {
  const t = v as LockTableSpec;
  const text = (x: unknown) => typeof x === 'string' && x.length > 0;
  return text(t?.table) && text(t.nameColumn) && text(t.holderColumn) && (t.expiryColumn === undefined || text(t.expiryColumn));
}

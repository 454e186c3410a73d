/**
 * `locklens serve`'s config file: the connections it watches (the fields of VS Code's `locklens.connections`), where
 * it listens, and what its metrics may say. Secrets are never in the file: it names the environment variables or files
 * they are read from, and a password written in it is refused. Everything is checked and read here, at start, so that
 * a mistake is one clear message (file, line, column, what to write) and exit code 2, never a watcher failing later.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionSecrets, ConnectionSettings } from '../../core/connectionSettings';
import { LockLensError, errorMessage } from '../../core/errors';
import type { LockTableSpec } from '../../core/profile';
import { STORE_KINDS, checkEndpoints, isStoreKind, storeOf } from '../../core/stores';
import { parseAge, parseBytes } from '../../core/recording/spans';
import { parseConfig, type ConfigMap } from './configNodes';

export interface ServeConnection {
  readonly settings: ConnectionSettings & { readonly prefixes: readonly string[] };
  readonly secrets: ConnectionSecrets;
  /** How often a store that pushes no changes (SQL, Redis without keyspace notifications) is read again. */
  readonly pollMs: number;
}

export interface Listen {
  readonly host: string;
  readonly port: number;
}

export interface NameRewrite {
  readonly match: RegExp;
  readonly replace: string;
}

export interface ServeConfig {
  readonly listen: Listen;
  /** Where the recorded history lives; undefined: nothing is recorded. */
  readonly data?: string;
  readonly history: { readonly maxAgeMs?: number; readonly maxBytes?: number };
  /** Lock series at most, over every connection. */
  readonly maxLocks: number;
  /** Required on /metrics (`Authorization: Bearer …`) when set. */
  readonly bearerToken?: string;
  /** /metrics over HTTPS with this certificate (PEM, with its chain) and key. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
  readonly lockNames: { readonly drop: readonly RegExp[]; readonly rewrite: readonly NameRewrite[] };
  readonly lockTables: readonly LockTableSpec[];
  readonly connections: readonly ServeConnection[];
}

export const DEFAULT_LISTEN = '127.0.0.1:9464';
export const DEFAULT_MAX_LOCKS = 500;
/**
 * Not VS Code's 1 s: Prometheus reads /metrics every 15 s and alerts wait minutes, so a poll every 5 s keeps each
 * scrape within 5 s of the store, and at 1 s the polls of two databases of 2,000 locks each were most of what serve
 * cost (docs/BENCHMARKS.md, serve).
 */
export const DEFAULT_POLL_SECONDS = 5;

const PASSWORD_REFUSED = 'a password is never written in the config file: write passwordEnv: VARIABLE (read from the environment) or passwordFile: /path/to/file instead';
const PASSPHRASE_REFUSED = 'a key passphrase is never written in the config file: write keyPassphraseEnv: VARIABLE or keyPassphraseFile: /path/to/file (beside endpoints) instead';
const CONNECTION_FIELDS = ['name', 'store', 'endpoints', 'username', 'namespace', 'prefixes', 'tls', 'dialTimeoutMs', 'pollSeconds', 'passwordEnv', 'passwordFile', 'keyPassphraseEnv', 'keyPassphraseFile'];
const TLS_FIELDS = ['caFile', 'certFile', 'keyFile', 'serverName', 'insecureSkipVerify'];

/** Reads and checks the config file; throws INVALID_ARGUMENT naming the file, line and column of any mistake. */
export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): ServeConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new LockLensError('INVALID_ARGUMENT', `${file}: cannot read the config file (${errorMessage(e)})`);
  }
  const root = parseConfig(file, text);
  const metrics = root.map('metrics', ['bearerTokenFile', 'bearerTokenEnv', 'tls']);
  const tls = metrics?.map('tls', ['certFile', 'keyFile']);
  const history = root.map('history', ['maxAge', 'maxBytes']);
  const lockNames = root.map('lockNames', ['drop', 'rewrite']);
  const connections = root.maps('connections', CONNECTION_FIELDS, { password: PASSWORD_REFUSED, keyPassphrase: PASSPHRASE_REFUSED });
  if (connections.length === 0) root.fail('connections', 'no connection to watch: write connections: [{ name: …, store: …, endpoints: [...] }]');
  const names = new Set<string>();
  const read = connections.map((c) => {
    const connection = connectionOf(c, env);
    if (names.has(connection.settings.name)) c.fail('name', `'${connection.settings.name}' names two connections: each needs its own name (it is the connection label of their metrics)`);
    names.add(connection.settings.name);
    return connection;
  });
  const bearerToken = secretOf(metrics, 'bearerTokenEnv', 'bearerTokenFile', env, 'the bearer token');
  if (tls && !(tls.has('certFile') && tls.has('keyFile'))) tls.fail(tls.has('certFile') ? 'keyFile' : 'certFile', 'TLS needs both: write tls: { certFile: /path/cert.pem, keyFile: /path/key.pem }');
  return {
    listen: parseListen(root.text('listen', DEFAULT_LISTEN) ?? DEFAULT_LISTEN, (m) => root.fail('listen', m)),
    data: root.text('data', '/var/lib/locklens'),
    history: { maxAgeMs: span(history, 'maxAge', '30d', parseAge), maxBytes: span(history, 'maxBytes', '1GiB', parseBytes) },
    maxLocks: root.int('maxLocks', 1, String(DEFAULT_MAX_LOCKS)) ?? DEFAULT_MAX_LOCKS,
    ...(bearerToken === undefined ? {} : { bearerToken }),
    ...(tls ? { tls: { cert: fileOf(tls, 'certFile', 'the certificate'), key: fileOf(tls, 'keyFile', 'the key') } } : {}),
    lockNames: {
      drop: (lockNames?.texts('drop', "['^secret/']") ?? []).map((p) => regex(lockNames!, 'drop', p)),
      rewrite: (lockNames?.maps('rewrite', ['match', 'replace']) ?? []).map((r) => ({
        match: regex(r, 'match', r.requiredText('match', "'^tenant-[0-9]+/'"), 'g'),
        replace: r.requiredText('replace', "'tenant-N/'"),
      })),
    },
    lockTables: root.maps('lockTables', ['table', 'nameColumn', 'holderColumn', 'expiryColumn']).map((t) => ({
      table: t.requiredText('table', 'jobs.locks'),
      nameColumn: t.requiredText('nameColumn', 'name'),
      holderColumn: t.requiredText('holderColumn', 'owner'),
      ...(t.has('expiryColumn') ? { expiryColumn: t.text('expiryColumn', 'until') } : {}),
    })),
    connections: read,
  };
}

function connectionOf(c: ConfigMap, env: NodeJS.ProcessEnv): ServeConnection {
  const name = c.requiredText('name', 'prod-etcd');
  const store = c.text('store', STORE_KINDS.join(' | '));
  if (store !== undefined && !isStoreKind(store)) c.fail('store', `unknown store '${store}': write one of ${STORE_KINDS.join(', ')}`);
  const kind = storeOf(store).kind;
  const endpoints = c.texts('endpoints', '[127.0.0.1:2379]');
  if (!endpoints?.length) c.fail('endpoints', 'missing: write endpoints: [...], the addresses of the store, e.g. [127.0.0.1:2379]');
  // A URL's password would be in the start line's list of what is watched: only the named secrets are secret.
  if (endpoints.some((e) => /^[a-z][a-z0-9+.-]*:\/\/[^/@]*:[^/@]*@/i.test(e))) c.fail('endpoints', PASSWORD_REFUSED.replace('the config file', 'an endpoint URL'));
  try {
    checkEndpoints(kind, endpoints);
  } catch (e) {
    c.fail('endpoints', errorMessage(e));
  }
  const tls = c.map('tls', TLS_FIELDS, { keyPassphrase: PASSPHRASE_REFUSED });
  const namespace = c.text('namespace', '/app/');
  if (namespace !== undefined && !storeOf(kind).namespaces) c.fail('namespace', `a namespace is etcd's: ${kind} keys are named in full (use prefixes)`);
  const settings = {
    name,
    store: kind,
    endpoints,
    username: c.text('username', 'monitor'),
    namespace,
    prefixes: c.texts('prefixes', "['/locks/']") ?? [''],
    tls: tls && {
      caFile: tls.text('caFile', '/etc/ssl/ca.pem'),
      certFile: tls.text('certFile', '/etc/ssl/client.pem'),
      keyFile: tls.text('keyFile', '/etc/ssl/client-key.pem'),
      serverName: tls.text('serverName', 'etcd.internal'),
      insecureSkipVerify: tls.bool('insecureSkipVerify'),
    },
    dialTimeoutMs: c.int('dialTimeoutMs', 1, '5000'),
  };
  const password = secretOf(c, 'passwordEnv', 'passwordFile', env, 'the password');
  const keyPassphrase = secretOf(c, 'keyPassphraseEnv', 'keyPassphraseFile', env, 'the key passphrase');
  const pollSeconds = c.int('pollSeconds', 1, String(DEFAULT_POLL_SECONDS)) ?? DEFAULT_POLL_SECONDS;
  return { settings, secrets: { password, keyPassphrase }, pollMs: pollSeconds * 1000 };
}

/** A secret named by an environment variable or a file (its content, without the line end editors add). */
function secretOf(m: ConfigMap | undefined, envField: string, fileField: string, env: NodeJS.ProcessEnv, what: string): string | undefined {
  if (!m) return undefined;
  if (m.has(envField) && m.has(fileField)) m.fail(fileField, `${what} comes from one place: write ${envField} or ${fileField}, not both`);
  const variable = m.text(envField, 'VARIABLE');
  if (variable !== undefined) {
    const value = env[variable];
    if (value === undefined) m.fail(envField, `the environment variable ${variable} is not set: set it to ${what}, or write ${fileField}: /path/to/file`);
    return value;
  }
  return m.has(fileField) ? fileOf(m, fileField, what).toString('utf8').replace(/\r?\n$/, '') : undefined;
}

function fileOf(m: ConfigMap, field: string, what: string): Buffer {
  const path = m.requiredText(field, '/path/to/file');
  try {
    return readFileSync(path);
  } catch (e) {
    return m.fail(field, `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? errorMessage(e)}): write the path of the file that holds ${what}`);
  }
}

function regex(m: ConfigMap, field: string, pattern: string, flags = ''): RegExp {
  try {
    return new RegExp(pattern, flags);
  } catch (e) {
    return m.fail(field, `'${pattern}' is not a regular expression (${errorMessage(e)})`);
  }
}

/** `127.0.0.1:9464`, `[::1]:9464`, `0.0.0.0:9464` (every interface: say so on purpose). */
export function parseListen(text: string, fail: (message: string) => never): Listen {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(text.trim());
  const port = Number(m?.[2]);
  if (!m || port > 65535) fail(`'${text}' is not HOST:PORT: write e.g. ${DEFAULT_LISTEN}`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}


/** A span in the config (`30d`, `1GiB`), read by the recorded history's own parsers and refused with its line. */
function span(m: ConfigMap | undefined, field: string, example: string, parse: (text: string, what: string) => number): number | undefined {
  const text = m?.text(field, example);
  if (text === undefined) return undefined;
  try {
    return parse(text, field);
  } catch (e) {
    return m!.fail(field, errorMessage(e));
  }
}

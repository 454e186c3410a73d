import { parseArgs, type ParseArgsConfig } from 'node:util';
import { LockLensError } from '../core/errors';
import { DEFAULT_STORE, STORE_KINDS, STORES, storeOfUrl } from '../core/stores';
import type { StoreEnvironment } from '../core/storeDescriptor';
import { splitEndpoints, type ConnectionProfile, type LockTableSpec } from '../core/profile';
import { usageLine, type Command } from './commands/command';

/** Connection flags every command takes. Names follow etcdctl's, so muscle memory carries over. */
export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  endpoints: { type: 'string' },
  user: { type: 'string' },
  cacert: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  'server-name': { type: 'string' },
  'insecure-skip-tls-verify': { type: 'boolean' },
  namespace: { type: 'string' },
  'dial-timeout': { type: 'string' },
  'lock-table': { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

const INDENT = ' '.repeat(31);

/** `text` wrapped to the help's 118 columns, each line after the first indented by `indent` (the first is the caller's). */
export function wrap(text: string, indent = ''): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && indent.length + line.length + 1 + word.length > 118) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return [...lines, line].join(`\n${indent}`);
}

const wrapped = (text: string) => wrap(text, INDENT);

const OTHER_STORES = STORE_KINDS.filter((kind) => kind !== DEFAULT_STORE).map((kind) => STORES[kind]);
const PASSWORD_VARIABLES = STORE_KINDS.flatMap((kind) => (STORES[kind].environment.password ? [`${STORES[kind].displayName}: $${STORES[kind].environment.password}`] : []));

export const CONNECTION_HELP = `Connection (etcdctl's names; ETCDCTL_* environment variables are read too):
  --url URL[,URL]              another store (default: ${STORES[DEFAULT_STORE].displayName} at --endpoints):
${OTHER_STORES.map((store) => `${INDENT}${wrapped(store.cli.url)}`).join('\n')}
  --endpoints H:P[,H:P]        etcd client URLs (default $ETCDCTL_ENDPOINTS or ${STORES[DEFAULT_STORE].form.endpointsExample}); https:// turns on TLS
  --user NAME[:PASSWORD]       password auth (Redis: an ACL user; ZooKeeper: digest); without ':PASSWORD' it is read from
${INDENT}${wrapped(`$LOCKLENS_PASSWORD, else the store's own variable (${PASSWORD_VARIABLES.join(', ')}; Redis's alone means the default user). Never put a password in a URL`)}
  --cacert FILE                CA bundle that signed the server certificate
  --cert FILE --key FILE       client certificate and key (PKCS#1, PKCS#8, SEC1); passphrase from $LOCKLENS_KEY_PASSPHRASE
  --server-name NAME           verify the server certificate against NAME instead of the endpoint's host
  --insecure-skip-tls-verify   accept any server certificate (dangerous)
  --namespace PREFIX           read and write every key under PREFIX
  --dial-timeout DURATION      e.g. 5s or 800ms (default 5s)
  --lock-table T:NAME,HOLDER[,EXPIRY]
                               SQL: also read table T as a lock table (a row per held lock; NAME, HOLDER and the
                               optional EXPIRY timestamp are its columns); repeatable. ShedLock's shedlock, Liquibase's
                               DATABASECHANGELOGLOCK and a lock table with a unique lock_name are recognised anyway`;

export interface Parsed {
  readonly values: Record<string, string | boolean | string[] | undefined>;
  readonly positionals: string[];
}

/**
 * Parses the command's flags plus the connection flags, and its one positional argument if it takes one (or more, if repeatable). A command
 * line of the wrong shape (an unknown flag, an argument missing or one too many) is said with the command's usage line.
 */
export function parse(args: string[], command: Command): Parsed {
  const wrongShape = (problem: string) => new LockLensError('INVALID_ARGUMENT', `${problem}\n${usageLine(command)}`);
  let parsed: Parsed;
  try {
    const connection = command.connectionFlags === false ? { help: CONNECTION_OPTIONS.help } : CONNECTION_OPTIONS;
    parsed = parseArgs({ args, options: { ...connection, ...command.options }, allowPositionals: true, strict: true }) as Parsed;
  } catch (e) {
    throw wrongShape((e as Error).message);
  }
  const expected = command.argument === undefined ? 0 : 1;
  if (!parsed.values.help && parsed.positionals.length < expected) throw wrongShape(`${command.name} needs ${command.argument}`);
  if (!parsed.values.help && !command.repeatable && parsed.positionals.length > expected) throw wrongShape(`unexpected argument '${parsed.positionals[expected]}'`);
  return parsed;
}

type ConnectionValues = { [K in keyof typeof CONNECTION_OPTIONS]?: string | boolean | string[] };

export function profileFrom(values: ConnectionValues, env: NodeJS.ProcessEnv = process.env): ConnectionProfile {
  const str = (v: string | boolean | string[] | undefined) => (typeof v === 'string' ? v : undefined);
  const url = str(values.url);
  if (url !== undefined && values.endpoints !== undefined) throw new LockLensError('INVALID_ARGUMENT', '--url and --endpoints name two stores: give one');
  const urls = url === undefined ? undefined : splitEndpoints(url);
  const stores = new Set(urls?.map((u) => storeOfUrl(u) ?? DEFAULT_STORE));
  if (stores.size > 1) throw new LockLensError('INVALID_ARGUMENT', `--url ${url}: every URL must name the same store`);
  const store = [...stores][0] ?? DEFAULT_STORE;
  const descriptor = STORES[store];
  // Another store's connection would ignore it, and the keys read would not be the ones the user meant.
  if (!descriptor.namespaces && values.namespace !== undefined) throw new LockLensError('INVALID_ARGUMENT', `--namespace is etcd's: ${store} keys are named in full (use --prefix)`);
  // Each store reads only its own tools' variables: etcdctl's never leak into another store's connection.
  const storeEnv = (name: keyof StoreEnvironment) => {
    const variable = descriptor.environment[name];
    return variable === undefined ? undefined : env[variable];
  };
  const endpoints = urls ?? splitEndpoints(str(values.endpoints) ?? storeEnv('endpoints') ?? descriptor.form.endpointsExample);
  const user = str(values.user) ?? storeEnv('user');
  const [username, inlinePassword] = user ? splitOnce(user, ':') : [undefined, undefined];
  const cacert = str(values.cacert) ?? storeEnv('cacert');
  const cert = str(values.cert) ?? storeEnv('cert');
  const key = str(values.key) ?? storeEnv('key');
  const serverName = str(values['server-name']);
  const insecure = values['insecure-skip-tls-verify'] === true || storeEnv('insecureSkipTlsVerify') === 'true';
  const anyTls = cacert || cert || key || serverName || insecure;
  const lockTables = Array.isArray(values['lock-table']) ? values['lock-table'].map(parseLockTable) : [];
  if (lockTables.length && !descriptor.lockTables) throw new LockLensError('INVALID_ARGUMENT', `--lock-table reads a SQL table: ${store} has none`);
  return {
    store,
    endpoints,
    username,
    password: inlinePassword ?? env.LOCKLENS_PASSWORD ?? storeEnv('password'),
    ...(lockTables.length ? { lockTables } : {}),
    tls: anyTls
      ? { caFile: cacert, certFile: cert, keyFile: key, keyPassphrase: env.LOCKLENS_KEY_PASSPHRASE, serverName, insecureSkipVerify: insecure }
      : undefined,
    namespace: str(values.namespace),
    dialTimeoutMs: values['dial-timeout'] === undefined ? undefined : parseDuration(str(values['dial-timeout'])!, '--dial-timeout'),
  };
}

/** `--lock-table jobs.locks:name,owner,until`: a table and its name, holder and (optional) expiry columns. */
function parseLockTable(text: string): LockTableSpec {
  const m = /^([^:\s]+):([^,\s]+),([^,\s]+)(?:,([^,\s]+))?$/.exec(text);
  if (!m) throw new LockLensError('INVALID_ARGUMENT', `--lock-table '${text}': write TABLE:NAME_COLUMN,HOLDER_COLUMN[,EXPIRY_COLUMN]`);
  return { table: m[1], nameColumn: m[2], holderColumn: m[3], ...(m[4] ? { expiryColumn: m[4] } : {}) };
}

function splitOnce(s: string, sep: string): [string, string | undefined] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + 1)];
}

/** `5s`, `800ms`, `2m`, or a bare number of seconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new LockLensError('INVALID_ARGUMENT', `${flag}: '${text}' is not a duration (e.g. 5s, 800ms, 2m)`);
  const n = Number(m[1]);
  return Math.round(m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000);
}

export function parsePositiveInt(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new LockLensError('INVALID_ARGUMENT', `${flag}: '${text}' is not a whole number ≥ 1`);
  return n;
}

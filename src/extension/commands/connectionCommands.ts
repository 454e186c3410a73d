import * as vscode from 'vscode';
import type { RegisterCommand } from '../commandRunner';
import { LockLensError } from '../../core/errors';
import { STORE_KINDS, type StoreKind } from '../../core/backend';
import { checkEndpoints } from '../../core/backends';
import { splitEndpoints } from '../../core/profile';
import { parseSqlUrl, sqlDialectOf } from '../../core/sql/url';
import type { StoreConnection, ConnectionRegistry } from '../connections';
import { STORE_NAMES } from '../format';
import { ConnectionNode, type LockTreeNode } from '../tree/nodes';
import { Cancelled, orCancel, pickConnection } from '../pickers';
import type { ConnectionSecretStore } from '../secrets';
import type { StorePackages } from '../storePackages';
import { readConnections, writeConnections, type ConnectionSecrets, type ConnectionSettings } from '../settings';

/** What `locklens.addConnection` accepts from scripts and tests instead of asking: settings plus the secrets. */
export type ConnectionInput = ConnectionSettings & ConnectionSecrets;

type Node = LockTreeNode | undefined;

export function registerConnectionCommands(register: RegisterCommand, registry: ConnectionRegistry, secrets: ConnectionSecretStore, stores: StorePackages): vscode.Disposable[] {
  const connectionOf = async (node: Node, title: string) => node?.connection ?? (await pickConnection(registry, title));
  const saveAndSync = async (list: ConnectionSettings[]) => {
    await writeConnections(list);
    await registry.sync();
  };

  return [
    register('locklens.addConnection', async (input?: ConnectionInput) => {
      const { password, keyPassphrase, ...settings } = input ?? (await askConnection(undefined, readConnections().map((c) => c.name), false, stores));
      await secrets.set(settings.name, { password, keyPassphrase });
      await saveAndSync([...readConnections().filter((c) => c.name !== settings.name), settings]);
      await connectWithProgress(registry.get(settings.name)!, stores);
    }),

    register('locklens.editConnection', async (node?: Node) => {
      const current = (await connectionOf(node, vscode.l10n.t('Edit connection'))).settings;
      const others = readConnections().filter((c) => c.name !== current.name);
      const stored = await secrets.get(current.name);
      const { password, keyPassphrase, ...settings } = await askConnection(current, others.map((c) => c.name), stored.password !== undefined, stores);
      await secrets.rename(current.name, settings.name);
      await secrets.set(settings.name, { password, keyPassphrase });
      const list = readConnections().map((c) => (c.name === current.name ? { ...settings, prefixes: current.prefixes } : c));
      await saveAndSync(list);
      const edited = registry.get(settings.name);
      if (edited && edited.state !== 'connected') await connectWithProgress(edited, stores);
    }),

    register('locklens.removeConnection', async (node?: Node) => {
      const c = await connectionOf(node, vscode.l10n.t('Remove connection'));
      const remove = vscode.l10n.t('Remove');
      const answer = await vscode.window.showWarningMessage(
        vscode.l10n.t('Remove the connection "{0}"?', c.name),
        { modal: true, detail: vscode.l10n.t('Locks you hold through it are released, and its stored password and passphrase are deleted.') },
        remove,
      );
      if (answer !== remove) return;
      await c.disconnect();
      await secrets.delete(c.name);
      await saveAndSync(readConnections().filter((s) => s.name !== c.name));
    }),

    register('locklens.connect', async (node?: Node) => connectWithProgress(await connectionOf(node, vscode.l10n.t('Connect')), stores)),

    register('locklens.installStoreSupport', async (node?: Node) => {
      const c = await connectionOf(node, vscode.l10n.t('Install store support'));
      if (await stores.ensure(c.store)) await connectWithProgress(c, stores);
    }),

    register('locklens.disconnect', async (node?: Node) => (await connectionOf(node, vscode.l10n.t('Disconnect'))).disconnect()),

    register('locklens.refresh', async (node?: Node) => {
      const targets = node ? [node.connection] : registry.all();
      await Promise.all(targets.map((c) => (c.state === 'disconnected' ? Promise.resolve() : c.refresh())));
    }),

    register('locklens.addPrefix', async (node?: Node, given?: string) => {
      const c = await connectionOf(node, vscode.l10n.t('Watch a prefix'));
      const setup = STORE_SETUP[c.store]();
      const prefix =
        given ??
        orCancel(
          await vscode.window.showInputBox({
            title: vscode.l10n.t('Watch a prefix on {0}', c.name),
            prompt: setup.watchPrompt,
            placeHolder: setup.prefixExample,
            validateInput: (v) => (c.prefixes.includes(v) ? vscode.l10n.t('Already watched') : undefined),
          }),
        );
      await saveAndSync(readConnections().map((s) => (s.name === c.name ? { ...s, prefixes: [...(s.prefixes ?? []), prefix] } : s)));
    }),

    register('locklens.removePrefix', async (node?: Node) => {
      const c = await connectionOf(node, vscode.l10n.t('Stop watching a prefix'));
      const prefix =
        node?.kind === 'prefix'
          ? node.prefix
          : orCancel(await vscode.window.showQuickPick([...c.prefixes], { title: vscode.l10n.t('Stop watching a prefix on {0}', c.name) }));
      await saveAndSync(readConnections().map((s) => (s.name === c.name ? { ...s, prefixes: (s.prefixes ?? []).filter((p) => p !== prefix) } : s)));
    }),
  ];
}

/** Connects with a progress notification, and says why it could not, offering to edit the connection (or to install its store). */
export async function connectWithProgress(c: StoreConnection, stores: StorePackages): Promise<void> {
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Connecting to {0}…', c.name) },
    () => c.connect(),
  );
  if (c.state !== 'error') return;
  if (c.storeMissing) {
    const install = vscode.l10n.t('Install Store Support');
    if ((await vscode.window.showErrorMessage(vscode.l10n.t('Cannot connect to {0}: {1}', c.name, c.error?.message ?? ''), install)) === install && (await stores.ensure(c.store))) {
      await connectWithProgress(c, stores);
    }
    return;
  }
  const edit = vscode.l10n.t('Edit Connection');
  const answer = await vscode.window.showErrorMessage(vscode.l10n.t('Cannot connect to {0}: {1}', c.name, c.error?.message ?? ''), edit);
  if (answer === edit) await vscode.commands.executeCommand('locklens.editConnection', new ConnectionNode(c));
}

/**
 * The add/edit flow: the store (when adding), endpoints, name, authentication, TLS, namespace (etcd), and (when adding)
 * a first prefix. Escape at any step cancels the whole flow; `current` fills in every default when editing.
 */
async function askConnection(current: ConnectionSettings | undefined, takenNames: readonly string[], hasPassword: boolean, stores: StorePackages): Promise<ConnectionInput> {
  // Which store comes before the numbered steps: it decides how many there are (etcd alone has namespaces). A store
  // whose package is missing is installed first (or the flow ends): a connection that cannot connect is no use.
  const store = current ? (current.store ?? 'etcd') : await askStore();
  if (!current && !(await stores.ensure(store))) throw new Cancelled();
  const etcd = store === 'etcd';
  const setup = STORE_SETUP[store]();
  const steps = 3 + (setup.tls ? 1 : 0) + (etcd ? 1 : 0) + (current ? 0 : 1);
  const title = (n: number) => (current ? vscode.l10n.t('Edit connection ({0}/{1})', n, steps) : vscode.l10n.t('Add connection ({0}/{1})', n, steps));
  const input = async (n: number, options: vscode.InputBoxOptions) => orCancel(await vscode.window.showInputBox({ ...options, title: title(n), ignoreFocusOut: true }));

  let endpoints = splitEndpoints(
    await input(1, {
      prompt: setup.endpointsPrompt,
      value: current?.endpoints.join(',') ?? setup.endpointsExample,
      validateInput: (v) => validate(() => checkEndpoints(store, splitEndpoints(v))),
    }),
  );
  const name = await input(2, {
    prompt: vscode.l10n.t('A name for this connection'),
    value: current?.name ?? endpoints[0],
    validateInput: (v) => (!v.trim() ? vscode.l10n.t('A name is needed') : takenNames.includes(v.trim()) ? vscode.l10n.t('Another connection has this name') : undefined),
  });

  // Redis's default user takes a password alone (requirepass): a stored password is authentication even with no user.
  const authenticated = !!current?.username || hasPassword;
  const auth = orCancel(
    await vscode.window.showQuickPick(
      [
        { label: vscode.l10n.t('No authentication'), user: false, picked: !authenticated },
        {
          label: setup.authLabel,
          description: vscode.l10n.t('the password is kept in VS Code secret storage'),
          user: true,
          picked: authenticated,
        },
      ],
      { title: title(3), ignoreFocusOut: true },
    ),
  );
  let username: string | undefined;
  let password: string | undefined;
  if (auth.user) {
    username = await input(3, { prompt: setup.userPrompt, value: current?.username ?? '' });
    password = await input(3, {
      prompt: current ? vscode.l10n.t('Password (leave empty to keep the stored one)') : vscode.l10n.t('Password'),
      password: true,
    });
    if (current && password === '') password = undefined;
  } else if (authenticated) {
    password = ''; // authentication turned off: delete the stored password rather than keep it for later
  }

  const wantsTls = endpoints.some((e) => e.startsWith('https://') || e.startsWith('rediss://') || (sqlDialectOf(e) !== undefined && parseSqlUrl(e).tlsMode !== 'disable'));
  const tlsChoice = setup.tls
    ? orCancel(
        await vscode.window.showQuickPick(
          [
            { label: vscode.l10n.t('No TLS'), tls: 0, picked: !wantsTls && !current?.tls },
            { label: vscode.l10n.t('TLS'), description: vscode.l10n.t('verify the server with a CA file or the system roots'), tls: 1, picked: wantsTls && !current?.tls?.certFile },
            { label: vscode.l10n.t('TLS with a client certificate'), description: vscode.l10n.t('when the server requires client certificates'), tls: 2, picked: !!current?.tls?.certFile },
          ],
          { title: title(4), ignoreFocusOut: true },
        ),
      )
    : { tls: 0 };
  let tls: ConnectionSettings['tls'];
  // No client certificate (any more): delete a stored passphrase.
  let keyPassphrase: string | undefined = current?.tls?.keyFile ? '' : undefined;
  if (tlsChoice.tls > 0) {
    const caFile = await pickFile(vscode.l10n.t('CA certificate (PEM); cancel to use the system roots'), current?.tls?.caFile);
    let certFile: string | undefined;
    let keyFile: string | undefined;
    if (tlsChoice.tls === 2) {
      certFile = orCancel(await pickFile(vscode.l10n.t('Client certificate (PEM)'), current?.tls?.certFile));
      keyFile = orCancel(await pickFile(vscode.l10n.t('Client key (PEM)'), current?.tls?.keyFile));
      keyPassphrase = await input(4, { prompt: vscode.l10n.t('Passphrase of the key (leave empty if it has none)'), password: true });
      if (current?.tls?.keyFile && keyPassphrase === '') keyPassphrase = undefined;
    }
    const serverName = await input(4, {
      prompt: vscode.l10n.t('Server name to verify the certificate against (leave empty to use the endpoint host)'),
      value: current?.tls?.serverName ?? '',
    });
    tls = { caFile, certFile, keyFile, serverName: serverName || undefined, insecureSkipVerify: current?.tls?.insecureSkipVerify };
    if (setup.sql) endpoints = endpoints.map((e) => withTlsOption(e, setup.sql!.tlsOption));
  }

  const namespace = etcd
    ? await input(5, {
        prompt: vscode.l10n.t('Namespace: a key prefix every key is read and written under, like etcdctl --namespace (usually empty)'),
        value: current?.namespace ?? '',
      })
    : undefined;
  const prefixes = current
    ? current.prefixes
    : [await input(steps, { prompt: setup.firstPrefixPrompt, placeHolder: setup.prefixExample })].filter((p) => p || setup.sql);

  return {
    name: name.trim(),
    ...(etcd ? {} : { store }),
    endpoints,
    username: username || undefined,
    namespace: namespace || undefined,
    prefixes,
    tls,
    dialTimeoutMs: current?.dialTimeoutMs,
    password,
    keyPassphrase,
  };
}

async function askStore(): Promise<StoreKind> {
  const picked = orCancel(
    await vscode.window.showQuickPick(
      STORE_KINDS.map((store) => ({ label: STORE_NAMES[store], description: STORE_SETUP[store]().libraries, store })),
      { title: vscode.l10n.t('Add connection: which store keeps the locks?'), ignoreFocusOut: true },
    ),
  );
  return picked.store;
}

/** What the connection flow asks of each store, in its terms. */
interface StoreSetup {
  /** The libraries whose locks it shows, for the store pick. */
  readonly libraries: string;
  readonly endpointsPrompt: string;
  readonly endpointsExample: string;
  readonly authLabel: string;
  readonly userPrompt: string;
  /** The store's client speaks TLS (LockLens's ZooKeeper client does not). */
  readonly tls: boolean;
  readonly watchPrompt: string;
  readonly firstPrefixPrompt: string;
  readonly prefixExample: string;
  /**
   * An empty first prefix watches every lock (a database has few, and they have no common prefix) instead of none.
   * The store's URL takes a TLS mode (sslmode=, ssl=) that the TLS step sets when the user asks for TLS.
   */
  readonly sql?: { readonly tlsOption: string };
}

/** A record, not a test of the kind: a store added to StoreKind fails to compile until its flow is written here. */
const STORE_SETUP: Readonly<Record<StoreKind, () => StoreSetup>> = {
  etcd: () => ({
    libraries: vscode.l10n.t('Go concurrency.Mutex, etcdctl lock, jetcd, elections, single-key locks'),
    endpointsPrompt: vscode.l10n.t('etcd endpoints, comma separated (https:// turns TLS on)'),
    endpointsExample: '127.0.0.1:2379',
    authLabel: vscode.l10n.t('User name and password'),
    userPrompt: vscode.l10n.t('User name'),
    tls: true,
    watchPrompt: vscode.l10n.t('Keys under this prefix are grouped into locks: a Go Mutex or etcdctl lock named /locks/jobs keeps its keys under /locks/jobs/.'),
    firstPrefixPrompt: vscode.l10n.t('A prefix to watch for locks, e.g. /locks/ (leave empty to add one later)'),
    prefixExample: '/locks/',
  }),
  redis: () => ({
    libraries: vscode.l10n.t('Redisson, redis-py, redlock, ShedLock, SET NX PX token locks'),
    endpointsPrompt: vscode.l10n.t('Redis URLs, comma separated: redis://host:port/db, or rediss:// for TLS (several: independent redlock instances)'),
    endpointsExample: 'redis://127.0.0.1:6379',
    authLabel: vscode.l10n.t('Password, with an ACL user or the default user'),
    userPrompt: vscode.l10n.t('ACL user name (leave empty for the default user)'),
    tls: true,
    watchPrompt: vscode.l10n.t('Keys under this prefix are read as locks: every string is a token lock, and Redisson hashes are recognised by shape.'),
    firstPrefixPrompt: vscode.l10n.t('A key prefix to watch for locks, e.g. lock: (every string under it is a token lock; Redisson hashes are recognised by shape)'),
    prefixExample: 'lock:',
  }),
  zookeeper: () => ({
    libraries: vscode.l10n.t('Curator InterProcessMutex and LeaderLatch, kazoo Lock, the ephemeral-sequential recipe'),
    endpointsPrompt: vscode.l10n.t('ZooKeeper URL: zookeeper://host:port[,host:port…][/chroot] (the servers of one ensemble)'),
    endpointsExample: 'zookeeper://127.0.0.1:2181',
    authLabel: vscode.l10n.t('Digest user name and password'),
    userPrompt: vscode.l10n.t('Digest user name'),
    tls: false,
    watchPrompt: vscode.l10n.t('A path: every lock node below it is read (Curator, kazoo and recipe nodes are recognised by name), e.g. /locks'),
    firstPrefixPrompt: vscode.l10n.t('A path to watch for locks, e.g. /locks (leave empty to add one later)'),
    prefixExample: '/locks',
  }),
  postgres: () => ({
    libraries: vscode.l10n.t('advisory locks (pg_advisory_lock, Flyway, golang-migrate), ShedLock, Liquibase and lock tables'),
    endpointsPrompt: vscode.l10n.t('PostgreSQL URL: postgres://host:port/database[?sslmode=require|verify-ca|verify-full] (advisory locks are per database)'),
    endpointsExample: 'postgres://127.0.0.1:5432/postgres',
    authLabel: vscode.l10n.t('Database user and password'),
    userPrompt: vscode.l10n.t('Database user'),
    tls: true,
    watchPrompt: vscode.l10n.t('A lock-name prefix: advisory locks are named by their key (12345, or 1:2 for an int pair), table locks by table (shedlock/, databasechangeloglock/)'),
    firstPrefixPrompt: vscode.l10n.t('A lock-name prefix to watch, e.g. shedlock/ (leave empty to watch every lock)'),
    prefixExample: 'shedlock/',
    sql: { tlsOption: 'sslmode=verify-full' },
  }),
  mysql: () => ({
    libraries: vscode.l10n.t('GET_LOCK (Flyway, golang-migrate), ShedLock, Liquibase and lock tables'),
    endpointsPrompt: vscode.l10n.t('MySQL or MariaDB URL: mysql://host:port/database[?ssl=true|verify-ca|verify-full] (lock tables are read from the database)'),
    endpointsExample: 'mysql://127.0.0.1:3306/app',
    authLabel: vscode.l10n.t('Database user and password'),
    userPrompt: vscode.l10n.t('Database user'),
    tls: true,
    watchPrompt: vscode.l10n.t('A lock-name prefix: GET_LOCK locks are named as taken, table locks by table (shedlock/, DATABASECHANGELOGLOCK/)'),
    firstPrefixPrompt: vscode.l10n.t('A lock-name prefix to watch, e.g. app. (leave empty to watch every lock)'),
    prefixExample: 'app.',
    sql: { tlsOption: 'ssl=verify-full' },
  }),
};

/** A SQL URL with TLS asked for in the TLS step: the mode it already names, else full verification. */
function withTlsOption(url: string, option: string): string {
  if (/[?&](sslmode|ssl)=/.test(url)) return url;
  return `${url}${url.includes('?') ? '&' : '?'}${option}`;
}

async function pickFile(title: string, current: string | undefined): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    title,
    canSelectMany: false,
    openLabel: vscode.l10n.t('Select'),
    defaultUri: current ? vscode.Uri.file(current) : undefined,
    filters: { PEM: ['pem', 'crt', 'cer', 'key'], [vscode.l10n.t('All files')]: ['*'] },
  });
  return picked?.[0]?.fsPath ?? current;
}

function validate(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (e) {
    return e instanceof LockLensError ? e.message : String(e);
  }
}

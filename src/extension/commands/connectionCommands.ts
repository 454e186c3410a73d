import * as vscode from 'vscode';
import type { RegisterCommand } from '../commandRunner';
import { LockLensError } from '../../core/errors';
import { splitEndpoints } from '../../core/profile';
import { DEFAULT_STORE, STORE_KINDS, STORES, type StoreKind } from '../../core/stores';
import type { StoreConnection, ConnectionRegistry } from '../connections';
import { ConnectionNode, PrefixNode, type LockTreeNode } from '../tree/nodes';
import { Cancelled, orCancel, pickConnection } from '../pickers';
import type { ConnectionSecretStore } from '../secrets';
import type { StorePackages } from '../storePackages';
import type { ConnectionSecrets, ConnectionSettings } from '../../core/connectionSettings';
import { readConnections, writeConnections } from '../settings';

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
      const form = c.descriptor.form;
      const prefix =
        given ??
        orCancel(
          await vscode.window.showInputBox({
            title: vscode.l10n.t('Watch a prefix on {0}', c.name),
            prompt: form.watchPrompt(),
            placeHolder: form.prefixExample,
            validateInput: (v) => (c.prefixes.includes(v) ? vscode.l10n.t('Already watched') : undefined),
          }),
        );
      await saveAndSync(readConnections().map((s) => (s.name === c.name ? { ...s, prefixes: [...(s.prefixes ?? []), prefix] } : s)));
    }),

    register('locklens.removePrefix', async (node?: Node) => {
      const c = await connectionOf(node, vscode.l10n.t('Stop watching a prefix'));
      const prefix =
        node instanceof PrefixNode
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
  const store = current ? (current.store ?? DEFAULT_STORE) : await askStore();
  if (!current && !(await stores.ensure(store))) throw new Cancelled();
  const descriptor = STORES[store];
  const form = descriptor.form;
  const steps = 3 + (form.tls ? 1 : 0) + (descriptor.namespaces ? 1 : 0) + (current ? 0 : 1);
  const title = (n: number) => (current ? vscode.l10n.t('Edit connection ({0}/{1})', n, steps) : vscode.l10n.t('Add connection ({0}/{1})', n, steps));
  const input = async (n: number, options: vscode.InputBoxOptions) => orCancel(await vscode.window.showInputBox({ ...options, title: title(n), ignoreFocusOut: true }));

  let endpoints = splitEndpoints(
    await input(1, {
      prompt: form.endpointsPrompt(),
      value: current?.endpoints.join(',') ?? form.endpointsExample,
      validateInput: (v) => validate(() => descriptor.checkEndpoints(splitEndpoints(v))),
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
          label: form.authLabel(),
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
    username = await input(3, { prompt: form.userPrompt(), value: current?.username ?? '' });
    password = await input(3, {
      prompt: current ? vscode.l10n.t('Password (leave empty to keep the stored one)') : vscode.l10n.t('Password'),
      password: true,
    });
    if (current && password === '') password = undefined;
  } else if (authenticated) {
    password = ''; // authentication turned off: delete the stored password rather than keep it for later
  }

  const wantsTls = descriptor.endpointsAskTls(endpoints);
  const tlsChoice = form.tls
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
    const withTls = form.tls && form.tls.withTls;
    if (withTls) endpoints = endpoints.map(withTls);
  }

  const namespace = descriptor.namespaces
    ? await input(5, {
        prompt: vscode.l10n.t('Namespace: a key prefix every key is read and written under, like etcdctl --namespace (usually empty)'),
        value: current?.namespace ?? '',
      })
    : undefined;
  const prefixes = current
    ? current.prefixes
    : [await input(steps, { prompt: form.firstPrefixPrompt(), placeHolder: form.prefixExample })].filter((p) => p || form.emptyPrefixWatchesAll);

  return {
    name: name.trim(),
    ...(store === DEFAULT_STORE ? {} : { store }),
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
      STORE_KINDS.map((store) => ({ label: STORES[store].displayName, description: STORES[store].form.libraries(), store })),
      { title: vscode.l10n.t('Add connection: which store keeps the locks?'), ignoreFocusOut: true },
    ),
  );
  return picked.store;
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

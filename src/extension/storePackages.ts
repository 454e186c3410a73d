import * as vscode from 'vscode';
import { join } from 'node:path';
import { STORES, type StoreKind } from '../core/stores';
import { LockLensError, errorMessage } from '../core/errors';
import { addStoreSource, findStoreBundle } from '../core/storeBundles';

/** How long an installed store package may take to show up in this extension host before a reload is suggested. */
const INSTALL_APPEAR_MS = 15_000;

/**
 * Store packages. The LockLens extension carries etcd's store bundle; every other store's comes as its own small
 * extension, `locklens.locklens-<store>` (packaged from src/core/<store>/package/ by scripts/package.mjs), so that nobody
 * downloads a store they do not use. Such a package holds the bundle and nothing else (no code of its own runs): this
 * tells the core where an installed one keeps it, says which stores this installation has, and offers to install a
 * missing one.
 */
export class StorePackages implements vscode.Disposable {
  private readonly dist: string;
  private readonly version: string;
  private readonly source = addStoreSource({
    locate: (store) => this.bundleOfPackage(store),
    missing: (store) => vscode.l10n.t('{0} support is not installed: install the extension {1}.', STORES[store].displayName, storePackageId(store)),
  });

  constructor(extension: vscode.Extension<unknown>) {
    this.dist = join(extension.extensionPath, 'dist');
    this.version = (extension.packageJSON as { version: string }).version;
  }

  /** Fires when extensions are installed, removed, enabled or disabled: a missing store may have arrived. */
  readonly onDidChange = vscode.extensions.onDidChange;

  has(store: StoreKind): boolean {
    return this.status(store) === 'installed';
  }

  /**
   * Resolves true once `store` can be used: at once if it is installed, else after the user agreed to install its
   * package and it has arrived in this extension host. False if the user declined or the install failed (said).
   */
  async ensure(store: StoreKind): Promise<boolean> {
    const status = this.status(store);
    if (status === 'installed') return true;
    const id = storePackageId(store);
    if (typeof status === 'object') {
      const show = vscode.l10n.t('Show in Extensions');
      if ((await vscode.window.showErrorMessage(status.mismatch, show)) === show) await vscode.commands.executeCommand('workbench.extensions.search', `@id:${id}`);
      return false;
    }
    const install = vscode.l10n.t('Install');
    const answer = await vscode.window.showInformationMessage(
      vscode.l10n.t('{0} support is not installed. Install the extension {1}?', STORES[store].displayName, id),
      {
        modal: true,
        detail: vscode.l10n.t(
          'Each store other than etcd comes as its own small extension, so that nobody downloads a store they do not use. If it is installed but disabled, enable it instead. Without the Marketplace, install its .vsix with "Extensions: Install from VSIX…".',
        ),
      },
      install,
    );
    if (answer !== install) return false;
    try {
      await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Installing {0}…', id) }, () =>
        vscode.commands.executeCommand('workbench.extensions.installExtension', id),
      );
    } catch (e) {
      // Offline, or no Marketplace (VS Code forks, air-gapped networks): the .vsix is the way.
      const fromVsix = vscode.l10n.t('Install from VSIX…');
      const choice = await vscode.window.showErrorMessage(vscode.l10n.t('Could not install {0}: {1}', id, errorMessage(e)), fromVsix);
      if (choice === fromVsix) await vscode.commands.executeCommand('workbench.extensions.action.installVSIX');
      return false;
    }
    if (!(await this.appears(store))) {
      void vscode.window.showWarningMessage(vscode.l10n.t('{0} was installed but is not running yet: reload the window (Developer: Reload Window).', id));
      return false;
    }
    return true;
  }

  dispose(): void {
    this.source.dispose();
  }

  /**
   * Whether `store` can be loaded: from this extension's own build, or from its package, which must be of this very
   * version (a store bundle uses this bundle's core modules as they are: only the same build fits).
   */
  private status(store: StoreKind): 'installed' | 'missing' | { readonly mismatch: string } {
    try {
      return findStoreBundle(store, this.dist) ? 'installed' : 'missing';
    } catch (e) {
      return { mismatch: errorMessage(e) };
    }
  }

  /** Where an installed package of `store` keeps its bundle; refuses one of another version. */
  private bundleOfPackage(store: StoreKind): string | undefined {
    const extension = vscode.extensions.getExtension(storePackageId(store));
    if (!extension) return undefined;
    const { version } = extension.packageJSON as { version: string };
    if (version !== this.version) {
      throw new LockLensError('NOT_INSTALLED', vscode.l10n.t('{0} {1} does not fit LockLens {2}: install the same version of both.', storePackageId(store), version, this.version));
    }
    return join(extension.extensionPath, 'dist', 'stores', `${store}.js`);
  }

  private appears(store: StoreKind): Promise<boolean> {
    if (this.has(store)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (found: boolean) => {
        clearTimeout(timer);
        listener.dispose();
        resolve(found);
      };
      const timer = setTimeout(() => done(false), INSTALL_APPEAR_MS);
      const listener = vscode.extensions.onDidChange(() => {
        if (this.has(store)) done(true);
      });
    });
  }
}

/** The extension that carries `store`'s bundle when the LockLens extension does not. */
export function storePackageId(store: StoreKind): string {
  return `locklens.locklens-${store}`;
}

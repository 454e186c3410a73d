import type * as vscode from 'vscode';
import type { ConnectionSecrets } from '../core/connectionSettings';

type SecretName = keyof ConnectionSecrets;
const NAMES: readonly SecretName[] = ['password', 'keyPassphrase'];

/**
 * Passwords and key passphrases, kept in VS Code's SecretStorage (the OS keychain on desktop) and never in settings,
 * logs or error messages. Keyed by connection name, so renaming a connection moves them.
 */
export class ConnectionSecretStore {
  constructor(private readonly storage: vscode.SecretStorage) {}

  async get(connection: string): Promise<ConnectionSecrets> {
    const [password, keyPassphrase] = await Promise.all(NAMES.map((n) => this.storage.get(slot(connection, n))));
    return { password, keyPassphrase };
  }

  /** Stores the given secrets; `undefined` leaves one unchanged, '' deletes it. */
  async set(connection: string, secrets: ConnectionSecrets): Promise<void> {
    for (const n of NAMES) {
      const value = secrets[n];
      if (value === '') await this.storage.delete(slot(connection, n));
      else if (value !== undefined) await this.storage.store(slot(connection, n), value);
    }
  }

  async rename(from: string, to: string): Promise<void> {
    if (from === to) return;
    await this.set(to, await this.get(from));
    await this.delete(from);
  }

  async delete(connection: string): Promise<void> {
    for (const n of NAMES) await this.storage.delete(slot(connection, n));
  }
}

function slot(connection: string, name: SecretName): string {
  return `locklens.connection/${connection}/${name}`;
}

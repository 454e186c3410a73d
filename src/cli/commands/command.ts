import type { ParseArgsConfig } from 'node:util';
import type { LockBackend } from '../../core/backend';

export interface Output {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Opens the store the parsed connection flags describe (`--url`, else etcd's `--endpoints`). */
export type Connect = (values: Record<string, unknown>) => Promise<LockBackend>;

export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly help: string;
  readonly options: ParseArgsConfig['options'];
  /** Resolves to the process exit code. */
  run(args: string[], connect: Connect, out: Output): Promise<number>;
}

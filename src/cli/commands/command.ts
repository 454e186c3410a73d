import type { ParseArgsConfig } from 'node:util';
import type { EtcdConnection } from '../../core/connection';

export interface Output {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Opens the connection described by the parsed connection flags. */
export type Connect = (values: Record<string, unknown>) => Promise<EtcdConnection>;

export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly help: string;
  readonly options: ParseArgsConfig['options'];
  /** Resolves to the process exit code. */
  run(args: string[], connect: Connect, out: Output): Promise<number>;
}

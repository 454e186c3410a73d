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
  /** Its first line is the usage line, shown after an argument error too. */
  readonly help: string;
  /** Its one positional argument in words, for the error when it is missing (acquire's: "the lock's NAME"); none if it takes none. */
  readonly argument?: string;
  /** The argument may be given more than once (acquire's several NAMEs). */
  readonly repeatable?: true;
  readonly options: ParseArgsConfig['options'];
  /** false: it takes no connection flags (serve: its connections are in its config file). */
  readonly connectionFlags?: false;
  /** Resolves to the process exit code. */
  run(args: string[], connect: Connect, out: Output): Promise<number>;
}

/** The first line of the command's help: `Usage: locklens acquire NAME …`. */
export function usageLine(command: Command): string {
  return command.help.split('\n', 1)[0];
}

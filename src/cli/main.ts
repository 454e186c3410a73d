import { openBackend } from '../core/stores';
import { LockLensError, errorMessage, type ErrorCode } from '../core/errors';
import { acquire } from './commands/acquire';
import type { Command, Output } from './commands/command';
import { diagnose } from './commands/diagnose';
import { history } from './commands/history';
import { list } from './commands/list';
import { revoke } from './commands/revoke';
import { serve } from './commands/serve';
import { unlock } from './commands/unlock';
import { watch } from './commands/watch';
import { profileFrom } from './options';
import { versionLine } from './version';

const commands: readonly Command[] = [list, acquire, unlock, revoke, watch, history, diagnose, serve];

/** Exit codes, stable for scripts: one per kind of failure. */
export const EXIT_CODES: Record<ErrorCode, number> = {
  ETCD: 1,
  STORE: 1,
  CLOSED: 1,
  NOT_INSTALLED: 1,
  INVALID_ARGUMENT: 2,
  UNREACHABLE: 3,
  TIMEOUT: 3,
  AUTH: 4,
  PERMISSION: 4,
  TLS: 5,
  LOCKED: 6,
  LOCK_LOST: 7,
  LEASE_NOT_FOUND: 8,
  LOCK_CHANGED: 9,
  CANCELLED: 130,
};

const usage = `Usage: locklens <command> [options]   (locklens help <command>, or <command> --help, for its options)
       locklens --version

Commands:
${commands.map((c) => `  ${c.name.padEnd(9)} ${c.summary}`).join('\n')}

Exit codes: 0 ok, 2 bad arguments, 3 unreachable or timed out, 4 auth, 5 TLS, 6 lock held (--try),
7 lock lost, 8 lease not found, 9 lock changed hands (unlock --force did nothing), 10 deadlock found (diagnose),
130 interrupted, 1 any other store error.`;

const out: Output = {
  stdout: (t) => process.stdout.write(t + '\n'),
  stderr: (t) => process.stderr.write(t + '\n'),
};

const isHelp = (arg: string) => arg === '--help' || arg === '-h';

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V') {
    out.stdout(versionLine());
    return 0;
  }
  if (!name || isHelp(name) || name === 'help') {
    // `help list` and `--help list` (as git's) show that command's help.
    if (rest.length > 1) throw new LockLensError('INVALID_ARGUMENT', `unexpected argument '${rest[1]}'\nUsage: locklens help [<command>]`);
    out.stdout(rest.length ? commandNamed(rest[0]).help : usage);
    return name ? 0 : 2;
  }
  const command = commandNamed(name);
  if (rest.slice(0, rest.includes('--') ? rest.indexOf('--') : undefined).some(isHelp)) {
    out.stdout(command.help);
    return 0;
  }
  return command.run(rest, (values) => openBackend(profileFrom(values)), out);
}

/** The command `name`; any other name is refused with the list of commands. */
function commandNamed(name: string): Command {
  const command = commands.find((c) => c.name === name);
  if (!command) throw new LockLensError('INVALID_ARGUMENT', `unknown ${name.startsWith('-') ? 'option' : 'command'} '${name}'\n\n${usage}`);
  return command;
}

/**
 * Exits once stdout and stderr have taken everything written: process.exit drops what a pipe has not taken yet, which
 * cut `history --json` of a long history at a few hundred KB when piped.
 */
function exitFlushed(code: number): void {
  let pending = 2;
  const done = () => --pending === 0 && process.exit(code);
  process.stdout.write('', done);
  process.stderr.write('', done);
}

main(process.argv.slice(2)).then(exitFlushed, (e: unknown) => {
  out.stderr(`locklens: ${errorMessage(e)}`);
  exitFlushed(e instanceof LockLensError ? EXIT_CODES[e.code] : 1);
});

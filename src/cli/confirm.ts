import { createInterface } from 'node:readline/promises';
import { LockLensError } from '../core/errors';

/**
 * Asks a yes/no question on the terminal before a destructive action. Without a terminal there is nobody to ask, so
 * it refuses (the caller's `--yes` is the way to say yes in a script) instead of reading a yes from a pipe.
 */
export async function confirmOnTerminal(question: string, refusal: string): Promise<boolean> {
  if (!process.stdin.isTTY) throw new LockLensError('INVALID_ARGUMENT', `${refusal} without confirmation: pass --yes`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

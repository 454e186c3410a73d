/**
 * A data directory of the recorded history: its database and the pid file of the one process that records into it
 * (`locklens serve`). Others (`locklens history`, the Lock History view, `unlock --force --data`) only read it or add
 * a force release in one short transaction, which SQLite's own lock keeps apart from the writer's.
 */
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LockLensError } from '../errors';

export const HISTORY_FILE = 'history.db';
const PID_FILE = 'serve.pid';

export const historyFile = (dir: string) => join(dir, HISTORY_FILE);

/** What the pid file says: a pid, and its start time where the system tells it (so a reused pid is not taken for it). */
interface Writer {
  readonly pid: number;
  readonly started?: string;
}

/** Who records into `dir`, and whether it runs; undefined when no recorder has claimed it. */
export function writerOf(dir: string): { readonly pid: number; readonly alive: boolean } | undefined {
  const writer = readWriter(join(dir, PID_FILE));
  return writer && { pid: writer.pid, alive: isRunning(writer) };
}

/**
 * Makes this process the one recorder of `dir` (created if missing): refused while another one runs; a pid file left
 * by one that died is taken over. Returns what gives the directory up again.
 */
export function claimDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const pidFile = join(dir, PID_FILE);
  const mine = JSON.stringify({ pid: process.pid, started: startTime(process.pid) } satisfies Writer);
  // Written aside, then linked into place: a link fails when the name exists, so of two starting at once one wins.
  const draft = `${pidFile}.${process.pid}`;
  writeFileSync(draft, mine);
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(draft, pidFile);
        return () => {
          if (readFileSync(pidFile, 'utf8') === mine) rmSync(pidFile, { force: true });
        };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const text = readText(pidFile);
      const writer = text === undefined ? undefined : parseWriter(text);
      if (writer && isRunning(writer)) {
        throw new LockLensError(
          'INVALID_ARGUMENT',
          `${dir} is recorded into by another locklens serve (pid ${writer.pid}): a data directory has one recorder; stop that one or give this one another directory`,
        );
      }
      if (text !== undefined) takeOver(pidFile, text);
    }
    throw new LockLensError('INVALID_ARGUMENT', `${dir}: another process keeps claiming ${PID_FILE} as this one starts; is a second locklens serve starting there?`);
  } finally {
    rmSync(draft, { force: true });
  }
}

/**
 * Moves a dead recorder's pid file out of the way, unless another starting process replaced it meanwhile (then that
 * one's is put back, and the next attempt finds it running).
 */
function takeOver(pidFile: string, stale: string): void {
  const aside = `${pidFile}.stale.${process.pid}`;
  try {
    renameSync(pidFile, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (readText(aside) !== stale) {
    try {
      linkSync(aside, pidFile);
    } catch {
      // A third process claimed it in between: its file stands.
    }
  }
  unlinkSync(aside);
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

function readWriter(file: string): Writer | undefined {
  const text = existsSync(file) ? readText(file) : undefined;
  return text === undefined ? undefined : parseWriter(text);
}

function parseWriter(text: string): Writer | undefined {
  try {
    const w = JSON.parse(text) as Partial<Writer>;
    return typeof w.pid === 'number' ? { pid: w.pid, started: typeof w.started === 'string' ? w.started : undefined } : undefined;
  } catch {
    return undefined;
  }
}

/** The pid runs, and it is the same process (same start time) where the system says when processes started. */
function isRunning(writer: Writer): boolean {
  try {
    process.kill(writer.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTime(writer.pid);
  return writer.started === undefined || now === undefined || now === writer.started;
}

/**
 * Linux's start time of a process (clock ticks since boot, /proc/PID/stat's 22nd field): a container restarted with
 * the same data volume gives its new recorder the old one's pid, often 1, and only this tells them apart.
 */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

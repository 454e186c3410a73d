import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { eventually } from './etcd';

/**
 * Runs the built `locklens` CLI (dist/locklens.js, from `node esbuild.mjs --production`) and other programs
 * (etcdctl, sh) as real processes for black-box tests. Every process started through a `Procs` is killed in its
 * `dispose`, and every process still running when the test process exits is SIGKILLed.
 */

/** tests compile to out/test/<dir>/, so the repository root is three levels up. */
export const CLI = resolve(__dirname, '../../../dist/locklens.js');

/** A hang guard only: how long a command that should end by itself may run before the test gives up on it. */
const HANG_GUARD_MS = 30_000;

export interface Result {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

const alive = new Set<ChildProcess>();
process.on('exit', () => alive.forEach((p) => killGroup(p)));

/**
 * Every process is spawned as the leader of its own process group, so that cleanup can kill what it started too
 * (the command locklens runs, etcdctl's child): a grandchild left behind would hold the output pipes open.
 * Signals a test sends on purpose (`Proc.signal`) go to the process alone.
 */
function killGroup(p: ChildProcess): void {
  try {
    process.kill(-p.pid!, 'SIGKILL');
  } catch {
    p.kill('SIGKILL');
  }
}

/** The environment without ETCDCTL_* / LOCKLENS_* settings of whoever runs the tests, so only the flags count. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(ETCDCTL_|LOCKLENS_|ETCD_LOCK_)/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

export class Proc {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  private result?: Result;
  /** The process itself ended (its output pipes may still be open in a grandchild). */
  private readonly exit: Promise<void>;
  readonly exited: Promise<Result>;

  constructor(
    readonly description: string,
    command: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv,
    cwd?: string,
  ) {
    // stdin is a pipe, never a TTY: as in scripts and CI.
    this.child = spawn(command, args, { env, cwd, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.exit = new Promise((done) => this.child.once('exit', () => done()));
    alive.add(this.child);
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.child.stdin!.on('error', () => undefined);
    this.exited = new Promise<Result>((done, fail) => {
      this.child.once('error', (e) => {
        alive.delete(this.child);
        fail(new Error(`${description}: ${e.message}`));
      });
      // 'close' comes after the output streams are drained.
      this.child.once('close', (code, signal) => {
        alive.delete(this.child);
        this.result = { code, signal, stdout: this.stdout, stderr: this.stderr };
        done(this.result);
      });
    });
    this.exited.catch(() => undefined);
  }

  get running(): boolean {
    return this.result === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Non-empty complete stdout lines so far (a line whose end has not arrived yet is not one). */
  get lines(): string[] {
    return this.stdout.slice(0, this.stdout.lastIndexOf('\n') + 1).split('\n').filter((l) => l.length > 0);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /** Waits for the process to end on its own (a hang guard, not a timing assertion). */
  async wait(guardMs = HANG_GUARD_MS): Promise<Result> {
    let timer: NodeJS.Timeout | undefined;
    const guard = new Promise<never>((_, fail) => {
      timer = setTimeout(() => {
        void this.kill();
        fail(new Error(`${this.description} did not exit within ${guardMs} ms (hang guard)\nstdout: ${this.stdout}\nstderr: ${this.stderr}`));
      }, guardMs);
    });
    try {
      return await Promise.race([this.exited, guard]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits until `check(this)` is truthy; fails with the output so far if it never is, or if the process ends first. */
  async until<T>(check: (p: this) => T | undefined | false, what: string, guardMs = HANG_GUARD_MS): Promise<T> {
    try {
      return await eventually(() => {
        const v = check(this);
        if (v !== undefined && v !== false) return v;
        if (!this.running) throw new Error(`${this.description} exited (${this.child.exitCode ?? this.child.signalCode})`);
        return undefined;
      }, guardMs, what);
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${this.description} stdout: ${this.stdout}\nstderr: ${this.stderr}`);
    }
  }

  /** SIGKILLs the process and its process group (whatever it started), and waits until it has ended. */
  async kill(): Promise<void> {
    if (this.result) return;
    if (this.child.pid !== undefined) killGroup(this.child);
    await this.exit;
    // A grandchild in another process group could still hold the pipes: do not wait for them to close.
    this.child.stdout!.destroy();
    this.child.stderr!.destroy();
    await this.exited.catch(() => undefined);
  }
}

/** The processes of one test: `dispose()` kills every one still running. */
export class Procs {
  private readonly procs: Proc[] = [];
  private readonly cleanups: (() => unknown)[] = [];

  constructor(readonly endpoint: string) {}

  spawn(command: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Proc {
    const p = new Proc(`${command} ${args.join(' ')}`, command, args, cleanEnv(options.env), options.cwd);
    this.procs.push(p);
    return p;
  }

  /** Starts `locklens ARGS...` (no endpoint is added: pass --endpoints yourself). */
  locklens(args: readonly string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Proc {
    return this.spawn(process.execPath, [CLI, ...args], options);
  }

  /** Runs `locklens ARGS...` to its end. */
  run(args: readonly string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<Result> {
    const p = this.locklens(args, options);
    p.child.stdin!.end(options.input ?? '');
    return p.wait();
  }

  /** Starts `etcdctl --endpoints=<this etcd> ARGS...`. */
  etcdctl(args: readonly string[]): Proc {
    return this.spawn('etcdctl', [`--endpoints=${this.endpoint}`, ...args], { env: { ETCDCTL_API: '3' } });
  }

  defer(cleanup: () => unknown): void {
    this.cleanups.push(cleanup);
  }

  async dispose(): Promise<void> {
    await Promise.all(this.procs.splice(0).map((p) => p.kill()));
    for (const c of this.cleanups.splice(0).reverse()) await c();
  }
}

/** `code`, `stdout` and `stderr` in one message, for assertion failures. */
export function show(r: Result): string {
  return `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
}

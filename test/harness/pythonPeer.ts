import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killOnExit } from './processes';

/**
 * Python for a peer's script to call where it would end (after its release): a peer started with `stay` keeps its
 * session or connection until `leave()`, so that a test sees a lock released by an owner that lives on.
 */
export const STAY_PY = String.raw`
def stay():
    import os, time
    leave = os.environ.get('LOCKLENS_PEER_LEAVE')
    while leave and not os.path.exists(leave):
        time.sleep(0.02)
`;

/**
 * A real client library run by Debian's /usr/bin/python3 (its python3-* packages are for that interpreter, not the
 * pyenv python3 on PATH) as an interop peer. The script reports what it did on stdout, one line each, and releases
 * only when its gate file appears, so tests order events by files and printed lines, not by sleeping. The gate's path
 * is the script's first argument.
 */
export class PythonPeer {
  private readonly proc: ChildProcess;
  private readonly gateDir = mkdtempSync(join(tmpdir(), 'locklens-pygate-'));
  private out = '';
  private err = '';
  readonly exited: Promise<number | null>;

  constructor(
    private readonly what: string,
    script: string,
    args: readonly string[],
    stay = false,
  ) {
    const env = stay ? { ...process.env, LOCKLENS_PEER_LEAVE: this.leaveFile } : process.env;
    this.proc = killOnExit(spawn('/usr/bin/python3', ['-c', script, this.gate, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env }));
    this.proc.stdout!.on('data', (d: Buffer) => (this.out += d.toString()));
    this.proc.stderr!.on('data', (d: Buffer) => (this.err += d.toString()));
    this.exited = new Promise((resolve) => this.proc.once('exit', (code) => resolve(code)));
  }

  protected get gate(): string {
    return join(this.gateDir, 'release');
  }

  /** Complete lines only: a line whose end has not arrived yet (stdout comes in chunks) would give a cut token. */
  get lines(): string[] {
    return this.out.slice(0, this.out.lastIndexOf('\n') + 1).split('\n').filter(Boolean);
  }

  /** Resolves with the line starting with one of `words` once printed; rejects if the peer exits first. */
  async until(words: readonly string[], timeoutMs = 15_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.find((l) => words.includes(l.split(' ')[0]));
      if (line) return line;
      if (this.proc.exitCode !== null) throw new Error(`${this.what} peer exited (${this.proc.exitCode}): ${this.out} ${this.err}`);
      if (Date.now() > deadline) throw new Error(`${this.what} peer did not say ${words.join('/')}: ${this.out} ${this.err}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Sends the peer's process a signal: SIGSTOP freezes a holder (its session and lock stay), SIGCONT wakes it. */
  signal(signal: NodeJS.Signals): void {
    this.proc.kill(signal);
  }

  private get leaveFile(): string {
    return join(this.gateDir, 'leave');
  }

  /** Lets a peer started with `stay` end (see STAY_PY). */
  leave(): void {
    if (!existsSync(this.leaveFile)) writeFileSync(this.leaveFile, '');
  }

  /** Tells the peer to release. */
  release(): void {
    if (!existsSync(this.gate)) writeFileSync(this.gate, '');
  }

  dispose(): void {
    this.proc.kill('SIGKILL');
    rmSync(this.gateDir, { recursive: true, force: true });
  }
}

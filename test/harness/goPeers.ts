import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { killOnExit } from './processes';

/**
 * Real Go programs as peers: test/peers/go/<name>/main.go, built offline with Debian's golang-go against the etcd
 * client sources of golang-etcd-server-dev (`go.etcd.io/etcd/clientv3/concurrency`, in /usr/share/gocode), in GOPATH
 * mode. A first build takes a minute; the build cache (test-output/go-cache, gitignored) makes later ones quick, so
 * build once per test file, in a `before`. Each program says what it did on stdout, one line each, and goes on at a
 * line on its stdin.
 */

/** tests compile to out/test/harness/, so the repository root is three levels up. */
const ROOT = resolve(__dirname, '../../..');
const OUTPUT = join(ROOT, 'test-output');

/** Builds the programs named (test/peers/go/<name>); resolves to each one's binary. */
export async function buildGoPeers(names: readonly string[]): Promise<Record<string, string>> {
  const bin = join(OUTPUT, 'go-peers');
  mkdirSync(bin, { recursive: true });
  const gopath = mkdtempSync(join(tmpdir(), 'locklens-gopath-'));
  const env = { ...process.env, GO111MODULE: 'off', GOPATH: `${gopath}:/usr/share/gocode`, GOCACHE: join(OUTPUT, 'go-cache'), GOFLAGS: '' };
  try {
    const built: Record<string, string> = {};
    for (const name of names) {
      const out = join(bin, name);
      await new Promise<void>((done, fail) =>
        execFile('go', ['build', '-o', out, '.'], { cwd: join(ROOT, 'test/peers/go', name), env, timeout: 10 * 60_000 }, (e, _stdout, stderr) =>
          e ? fail(new Error(`go build ${name}: ${stderr || e.message}`)) : done(),
        ),
      );
      built[name] = out;
    }
    return built;
  } finally {
    rmSync(gopath, { recursive: true, force: true });
  }
}

export class GoPeer {
  private readonly proc: ChildProcess;
  private out = '';
  private err = '';

  constructor(
    private readonly binary: string,
    args: readonly string[],
  ) {
    this.proc = killOnExit(spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] }));
    this.proc.stdout!.on('data', (d: Buffer) => (this.out += d.toString()));
    this.proc.stderr!.on('data', (d: Buffer) => (this.err += d.toString()));
    this.proc.stdin!.on('error', () => undefined);
  }

  get pid(): number {
    return this.proc.pid!;
  }

  /** Complete lines only. */
  get lines(): string[] {
    return this.out.slice(0, this.out.lastIndexOf('\n') + 1).split('\n').filter(Boolean);
  }

  /** The line starting with `words` (joined by spaces), once printed; rejects if the peer exits first. */
  async until(words: string, timeoutMs = 20_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.find((l) => l === words || l.startsWith(`${words} `));
      if (line) return line;
      if (this.proc.exitCode !== null) throw new Error(`${this.binary} exited (${this.proc.exitCode}): ${this.out} ${this.err}`);
      if (Date.now() > deadline) throw new Error(`${this.binary} did not say '${words}': ${this.out} ${this.err}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Lets it go on to its next step. */
  next(): void {
    this.proc.stdin!.write('\n');
  }

  /** Closes its stdin: a program that waits for a line then ends as it would at the end of its work. */
  finish(): void {
    this.proc.stdin!.end();
  }

  dispose(): void {
    this.proc.kill('SIGKILL');
  }
}

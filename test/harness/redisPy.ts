import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killOnExit } from './processes';

/**
 * redis-py's own `redis.lock.Lock` (Debian's python3-redis, for /usr/bin/python3: the pyenv python3 on PATH has no
 * redis module) as an interop peer. It reports what it did on stdout, one line each, and releases only when its gate
 * file appears, so tests order events by files, not by sleeping.
 */
const PEER = String.raw`
import os, sys, time, redis, redis.cluster
url, name, mode, gate, timeout = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
r = redis.cluster.RedisCluster.from_url(url) if sys.argv[6:] == ['cluster'] else redis.Redis.from_url(url)
lock = r.lock(name, timeout=(float(timeout) if timeout != 'none' else None), sleep=0.05)
def say(*words):
    print(*words, flush=True)
if mode == 'try':
    ok = lock.acquire(blocking=False)
else:
    say('waiting')
    ok = lock.acquire(blocking=True, blocking_timeout=60)
if not ok:
    say('busy')
    sys.exit(0)
say('acquired', lock.local.token.decode())
while not os.path.exists(gate):
    time.sleep(0.02)
try:
    lock.release()
    say('released')
except Exception as e:
    say('release-failed', type(e).__name__)
`;

const PYTHON = '/usr/bin/python3';

export class RedisPyLock {
  private readonly proc: ChildProcess;
  private readonly gateDir = mkdtempSync(join(tmpdir(), 'locklens-pygate-'));
  private out = '';
  private err = '';
  readonly exited: Promise<number | null>;

  /** `cluster`: through redis-py's RedisCluster (redis.cluster), url being any node of the cluster. */
  constructor(url: string, name: string, mode: 'hold' | 'try', timeoutSeconds: number | null, cluster = false) {
    const args = [url, name, mode, this.gate, timeoutSeconds === null ? 'none' : String(timeoutSeconds), ...(cluster ? ['cluster'] : [])];
    this.proc = killOnExit(spawn(PYTHON, ['-c', PEER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
    this.proc.stdout!.on('data', (d: Buffer) => (this.out += d.toString()));
    this.proc.stderr!.on('data', (d: Buffer) => (this.err += d.toString()));
    this.exited = new Promise((resolve) => this.proc.once('exit', (code) => resolve(code)));
  }

  private get gate(): string {
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
      if (this.proc.exitCode !== null) throw new Error(`redis-py peer exited (${this.proc.exitCode}): ${this.out} ${this.err}`);
      if (Date.now() > deadline) throw new Error(`redis-py peer did not say ${words.join('/')}: ${this.out} ${this.err}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Tells the peer to release (it prints `released`, or `release-failed` if its lock was gone). */
  release(): void {
    if (!existsSync(this.gate)) writeFileSync(this.gate, '');
  }

  dispose(): void {
    this.proc.kill('SIGKILL');
    rmSync(this.gateDir, { recursive: true, force: true });
  }
}

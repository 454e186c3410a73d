import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports';
import { killOnExit, startOrDispose } from './processes';

/**
 * Real etcd servers for tests: Debian's `etcd` (installed by scripts/setup.sh) on free loopback ports with temporary
 * data dirs, removed when stopped. Every process started here is killed when the test process exits.
 */

export interface EtcdTls {
  readonly certFile: string;
  readonly keyFile: string;
  /** With a CA, etcd requires and verifies client certificates (--client-cert-auth). */
  readonly clientCaFile?: string;
}

interface MemberSpec {
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly dataDir: string;
  readonly tls?: EtcdTls;
  readonly extraArgs: readonly string[];
}

export class EtcdMember {
  private proc?: ChildProcess;
  private output = '';

  constructor(
    private readonly spec: MemberSpec,
    private readonly initialCluster: string,
    private clusterState: 'new' | 'existing' = 'new',
  ) {}

  get name(): string {
    return this.spec.name;
  }
  get endpoint(): string {
    return `127.0.0.1:${this.spec.clientPort}`;
  }
  get url(): string {
    return `${this.spec.tls ? 'https' : 'http'}://${this.endpoint}`;
  }
  get dataDir(): string {
    return this.spec.dataDir;
  }
  get pid(): number | undefined {
    return this.proc?.pid;
  }
  get log(): string {
    return this.output;
  }

  /** Starts the process; `waitReady` resolves once it serves clients. */
  launch(): void {
    const { name, clientPort, peerPort, dataDir, tls, extraArgs } = this.spec;
    const scheme = tls ? 'https' : 'http';
    const args = [
      `--name=${name}`,
      `--data-dir=${dataDir}`,
      `--listen-client-urls=${scheme}://127.0.0.1:${clientPort}`,
      `--advertise-client-urls=${scheme}://127.0.0.1:${clientPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=${this.initialCluster}`,
      `--initial-cluster-state=${this.clusterState}`,
      '--initial-cluster-token=locklens-test',
      '--logger=zap',
      '--log-outputs=stderr',
      ...(tls ? [`--cert-file=${tls.certFile}`, `--key-file=${tls.keyFile}`] : []),
      ...(tls?.clientCaFile ? ['--client-cert-auth', `--trusted-ca-file=${tls.clientCaFile}`] : []),
      ...extraArgs,
    ];
    this.output = '';
    const proc = spawn('etcd', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    proc.stderr!.on('data', (d: Buffer) => (this.output = (this.output + d.toString()).slice(-200_000)));
    killOnExit(proc);
    this.proc = proc;
  }

  async waitReady(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!/serving client traffic|ready to serve client requests/.test(this.output)) {
      if (this.proc?.exitCode !== null) throw new Error(`etcd ${this.name} exited: ${this.output.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`etcd ${this.name} not ready in ${timeoutMs} ms: ${this.output.slice(-2000)}`);
      await sleep(25);
    }
  }

  async start(): Promise<void> {
    this.launch();
    await this.waitReady();
  }

  /** Stops the process (SIGTERM, then SIGKILL after 5 s), keeping the data dir. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }

  /** Restarts on the same ports; `wipe` empties the data dir first (a new cluster: every key is gone). */
  async restart(options: { wipe?: boolean } = {}): Promise<void> {
    await this.stop();
    if (options.wipe) {
      rmSync(this.spec.dataDir, { recursive: true, force: true });
      this.clusterState = 'new';
    } else {
      this.clusterState = 'existing';
    }
    await this.start();
  }

  pause(): void {
    this.proc?.kill('SIGSTOP');
  }

  resume(): void {
    this.proc?.kill('SIGCONT');
  }

  /** Runs etcdctl against this member. */
  etcdctl(args: readonly string[], options: { timeoutMs?: number } = {}): Promise<string> {
    return etcdctl([`--endpoints=${this.url}`, ...args], options);
  }
}

export class EtcdServer extends EtcdMember {
  async dispose(): Promise<void> {
    await this.stop('SIGKILL');
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

export interface StartOptions {
  readonly tls?: EtcdTls;
  readonly extraArgs?: readonly string[];
}

export async function startEtcd(options: StartOptions = {}): Promise<EtcdServer> {
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(tmpdir(), 'locklens-etcd-'));
  const spec = { name: 'solo', clientPort, peerPort, dataDir, tls: options.tls, extraArgs: options.extraArgs ?? [] };
  return startOrDispose(new EtcdServer(spec, `solo=http://127.0.0.1:${peerPort}`));
}

export class EtcdCluster {
  constructor(readonly members: readonly EtcdMember[]) {}

  get endpoints(): string[] {
    return this.members.map((m) => m.endpoint);
  }

  /** The member that is leader now, by asking etcd. */
  async leader(): Promise<EtcdMember> {
    for (const m of this.members) {
      try {
        const out = await m.etcdctl(['endpoint', 'status', '-w', 'json'], { timeoutMs: 3000 });
        const [status] = JSON.parse(out) as { Status: { header: { member_id: number }; leader: number } }[];
        if (status.Status.leader === status.Status.header.member_id) return m;
      } catch {
        // a stopped member; ask the next
      }
    }
    throw new Error('no leader');
  }

  async dispose(): Promise<void> {
    await Promise.all(this.members.map((m) => m.stop('SIGKILL')));
    for (const m of this.members) rmSync(m.dataDir, { recursive: true, force: true });
  }
}

export async function startCluster(size = 3): Promise<EtcdCluster> {
  const specs: MemberSpec[] = [];
  for (let i = 0; i < size; i++) {
    specs.push({ name: `m${i}`, clientPort: await freePort(), peerPort: await freePort(), dataDir: mkdtempSync(join(tmpdir(), 'locklens-etcd-')), extraArgs: [] });
  }
  const initial = specs.map((s) => `${s.name}=http://127.0.0.1:${s.peerPort}`).join(',');
  const cluster = new EtcdCluster(specs.map((s) => new EtcdMember(s, initial)));
  cluster.members.forEach((m) => m.launch());
  try {
    await Promise.all(cluster.members.map((m) => m.waitReady()));
  } catch (e) {
    await cluster.dispose();
    throw e;
  }
  return cluster;
}

export function etcdctl(args: readonly string[], options: { timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('etcdctl', args, { env: { ...process.env, ETCDCTL_API: '3' }, timeout: options.timeoutMs ?? 10_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`etcdctl ${args.join(' ')}: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns a value other than undefined/false, or throws after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) throw new Error(`${what} not reached in ${timeoutMs} ms${lastError ? `: ${String(lastError)}` : ''}`);
    await sleep(50);
  }
}

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LockState } from '../../src/core/lockState';
import { sleep } from '../../src/core/sleep';
import { answersHandshake, QUORUM_MAIN, STANDALONE_MAIN, zooKeeperCommand, zooKeeperConfig } from '../../demo/zookeeperJar';
import { freePort } from './ports';
import { killOnExit, startOrDispose, stopProcess } from './processes';

/**
 * Real ZooKeeper servers for tests: Debian's `zookeeper` package run from its jar (see demo/zookeeperJar.ts) on a free
 * loopback port with a temporary data dir.
 *
 * A short tick (250 ms) lets tests use short sessions: the server grants 2 to 20 ticks (0.5 s to 5 s).
 */

export const TICK_MS = 250;

export interface ZooKeeperPeerConfig {
  readonly id: number;
  readonly clientPort: number;
  readonly quorumPort: number;
  readonly electionPort: number;
}

export class ZooKeeperServer {
  private proc?: ChildProcess;
  private output = '';

  constructor(
    readonly port: number,
    readonly dir: string,
    /** The ensemble this server belongs to (its own entry included), or none for a standalone server. */
    private readonly ensemble?: { readonly self: ZooKeeperPeerConfig; readonly peers: readonly ZooKeeperPeerConfig[] },
    /** More zoo.cfg lines (see StandaloneOptions). */
    private readonly extraConfig: readonly string[] = [],
  ) {}

  get url(): string {
    return `zookeeper://127.0.0.1:${this.port}`;
  }

  get log(): string {
    return this.output;
  }

  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  private writeConfig(): string {
    const data = join(this.dir, 'data');
    mkdirSync(data, { recursive: true });
    const lines = [...zooKeeperConfig({ tickMs: TICK_MS, dataDir: data, port: this.port }), ...this.extraConfig];
    if (this.ensemble) {
      lines.push('initLimit=40', 'syncLimit=8');
      for (const p of this.ensemble.peers) lines.push(`server.${p.id}=127.0.0.1:${p.quorumPort}:${p.electionPort}`);
      writeFileSync(join(data, 'myid'), `${this.ensemble.self.id}\n`);
    }
    const file = join(this.dir, 'zoo.cfg');
    writeFileSync(file, lines.join('\n') + '\n');
    return file;
  }

  /** Starts the JVM; resolves when the server answers a client handshake (an ensemble member: once it has a quorum). */
  async start(timeoutMs = 30_000, waitUntilServing = true): Promise<void> {
    this.output = '';
    const { command, args } = zooKeeperCommand(this.ensemble ? QUORUM_MAIN : STANDALONE_MAIN, this.writeConfig());
    const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (d: Buffer) => (this.output = (this.output + d.toString()).slice(-100_000));
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    killOnExit(proc);
    this.proc = proc;
    if (waitUntilServing) await this.waitServing(timeoutMs);
  }

  async waitServing(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await answersHandshake(this.port, TICK_MS * 2))) {
      if (this.proc?.exitCode !== null) throw new Error(`zookeeper exited: ${this.output.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`zookeeper on ${this.port} not serving in ${timeoutMs} ms: ${this.output.slice(-2000)}`);
      await sleep(100);
    }
  }

  stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    return stopProcess(this.proc, signal);
  }

  /** Freezes the server (SIGSTOP): its sockets stay open and say nothing, as over a partition. */
  pause(): void {
    this.proc?.kill('SIGSTOP');
  }

  resume(): void {
    this.proc?.kill('SIGCONT');
  }

  /** Same port, same data (ZooKeeper persists its tree and sessions in its data dir). */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async dispose(): Promise<void> {
    this.resume();
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface StandaloneOptions {
  /** Four-letter words the server answers (`4lw.commands.whitelist`); by default only `srvr`, as ZooKeeper ships. */
  readonly fourLetterWords?: readonly string[];
  /** The longest session the server grants; by default 20 ticks (5 s). */
  readonly maxSessionTimeoutMs?: number;
}

export async function startZooKeeper(options: StandaloneOptions = {}): Promise<ZooKeeperServer> {
  const extra = [
    ...(options.fourLetterWords ? [`4lw.commands.whitelist=${options.fourLetterWords.join(',')}`] : []),
    ...(options.maxSessionTimeoutMs ? [`maxSessionTimeout=${options.maxSessionTimeoutMs}`] : []),
  ];
  return startOrDispose(new ZooKeeperServer(await freePort(), mkdtempSync(join(tmpdir(), 'locklens-zk-')), undefined, extra));
}

/** A quorum of `size` servers on loopback; resolves when every one serves clients. */
export class ZooKeeperEnsemble {
  constructor(readonly servers: readonly ZooKeeperServer[]) {}

  /** Every server, as one ZooKeeper URL. */
  get url(): string {
    return `zookeeper://${this.servers.map((s) => `127.0.0.1:${s.port}`).join(',')}`;
  }

  /** The index of the current leader (asked with the `srvr` four-letter word, which is allowed by default). */
  async leader(): Promise<number> {
    for (let i = 0; i < this.servers.length; i++) {
      if (this.servers[i].running && /Mode: leader/.test(await fourLetter(this.servers[i].port, 'srvr'))) return i;
    }
    return -1;
  }

  async dispose(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.dispose()));
  }
}

export async function startZooKeeperEnsemble(size = 3): Promise<ZooKeeperEnsemble> {
  const peers: ZooKeeperPeerConfig[] = [];
  for (let id = 1; id <= size; id++) peers.push({ id, clientPort: await freePort(), quorumPort: await freePort(), electionPort: await freePort() });
  const servers = peers.map((self) => new ZooKeeperServer(self.clientPort, mkdtempSync(join(tmpdir(), `locklens-zk${self.id}-`)), { self, peers }));
  const ensemble = new ZooKeeperEnsemble(servers);
  try {
    // All at once: none serves before a quorum is up.
    await Promise.all(servers.map((s) => s.start(60_000, false)));
    await Promise.all(servers.map((s) => s.waitServing(60_000)));
  } catch (e) {
    await ensemble.dispose();
    throw e;
  }
  return ensemble;
}

/** A four-letter word's answer ('' when refused or closed). */
export function fourLetter(port: number, word: string): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write(word));
    socket.setTimeout(2000, () => socket.destroy());
    socket.on('data', (d: Buffer) => (out += d.toString()));
    socket.once('error', () => undefined);
    socket.once('close', () => resolve(out));
  });
}

/** Every lock of a listing or a watch as views would draw it, in name order: equal lists draw the same. */
export function drawn(locks: readonly LockState[]): string[] {
  return [...locks].sort((x, y) => Buffer.compare(x.name, y.name)).map((l) => JSON.stringify(l, sortedFields));
}

/** Objects' fields in the order of their names: two reads may build a lock's fields in different orders. */
function sortedFields(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1)));
}

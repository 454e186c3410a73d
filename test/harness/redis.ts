import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { createServer } from 'node:net';
import { freePort } from './ports';
import { killOnExit, startOrDispose, stopProcess } from './processes';

/**
 * Real Redis servers for tests: Debian's `redis-server` (installed by scripts/setup.sh) on a free loopback port with a
 * temporary dir, no persistence. Every process started here is killed when the test process exits.
 */

export interface RedisTls {
  readonly certFile: string;
  readonly keyFile: string;
  /** Verifies client certificates against this CA when given (tls-auth-clients yes). */
  readonly clientCaFile?: string;
}

export interface RedisStartOptions {
  /** requirepass: the default user's password. */
  readonly password?: string;
  /** ACL rules, one user each, e.g. `alice on >secret ~* &* +@all`. */
  readonly users?: readonly string[];
  /** The port then speaks TLS only. */
  readonly tls?: RedisTls;
  /** notify-keyspace-events, e.g. 'KEA'. */
  readonly notify?: string;
  /** Commands renamed away (`rename-command NAME ""`), as managed services do with CONFIG. */
  readonly disabledCommands?: readonly string[];
  /** A Redis Cluster node (its nodes.conf in the server's dir); see startRedisCluster. */
  readonly cluster?: boolean;
  /** How long a cluster node may be silent before it is failed over (cluster-node-timeout; default 5 s). */
  readonly clusterNodeTimeoutMs?: number;
}

export class RedisServer {
  private proc?: ChildProcess;
  private output = '';

  constructor(
    readonly port: number,
    readonly dir: string,
    private readonly options: RedisStartOptions,
  ) {}

  get url(): string {
    return `${this.options.tls ? 'rediss' : 'redis'}://127.0.0.1:${this.port}`;
  }
  get log(): string {
    return this.output;
  }

  private args(): string[] {
    const o = this.options;
    const args = ['--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--appendonly', 'no', '--logfile', '', '--daemonize', 'no'];
    if (o.tls) {
      args.push('--port', '0', '--tls-port', String(this.port), '--tls-cert-file', o.tls.certFile, '--tls-key-file', o.tls.keyFile);
      if (o.tls.clientCaFile) args.push('--tls-ca-cert-file', o.tls.clientCaFile, '--tls-auth-clients', 'yes');
      else args.push('--tls-auth-clients', 'no');
    } else {
      args.push('--port', String(this.port));
    }
    if (o.password) args.push('--requirepass', o.password);
    // redis-server joins the words after --user into one ACL rule; a single quoted argument is taken as the user name.
    for (const u of o.users ?? []) args.push('--user', ...u.split(' '));
    if (o.notify) args.push('--notify-keyspace-events', o.notify);
    for (const command of o.disabledCommands ?? []) args.push('--rename-command', command, '');
    if (o.cluster) args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(this.dir, 'nodes.conf'), '--cluster-node-timeout', String(o.clusterNodeTimeoutMs ?? 5000));
    return args;
  }

  async start(timeoutMs = 10_000): Promise<void> {
    this.output = '';
    const proc = spawn('redis-server', this.args(), { stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (d: Buffer) => (this.output = (this.output + d.toString()).slice(-100_000));
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    killOnExit(proc);
    this.proc = proc;
    const deadline = Date.now() + timeoutMs;
    while (!/Ready to accept connections/.test(this.output)) {
      if (proc.exitCode !== null) throw new Error(`redis-server exited: ${this.output.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`redis-server not ready in ${timeoutMs} ms: ${this.output.slice(-2000)}`);
      await sleep(20);
    }
  }

  stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    return stopProcess(this.proc, signal);
  }

  /** Same port, empty dataset (nothing is persisted). */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** redis-cli against this server (plain servers only), with the default user's password if any. */
  cli(args: readonly string[]): Promise<string> {
    const auth = this.options.password ? ['--no-auth-warning', '-a', this.options.password] : [];
    return new Promise((resolve, reject) => {
      execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), ...auth, ...args], { timeout: 10_000 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`redis-cli ${args.join(' ')}: ${stderr || err.message}`));
        else resolve(stdout.trim());
      });
    });
  }
}

export async function startRedis(options: RedisStartOptions = {}): Promise<RedisServer> {
  const port = options.cluster ? await freeClusterPort() : await freePort();
  return startOrDispose(new RedisServer(port, mkdtempSync(join(tmpdir(), 'locklens-redis-')), options));
}

/**
 * A free port for a cluster node: its bus listens on port + 10000 (redis-server refuses a port above 55535), and that
 * one must be free too. Linux hands out ports up to 60999, so a plain free port failed the cluster's start now and then.
 */
async function freeClusterPort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = await freePort();
    if (port <= 55535 && (await canListen(port + 10000))) return port;
  }
  throw new Error('no free port pair (port, port + 10000) for a cluster node');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Independent redis-servers, as a redlock client uses them, each with a raw client for the test's own reads and writes. */
export interface RedisInstances {
  readonly servers: readonly RedisServer[];
  /**
   * One client per server, in the same order. It gives up on a command at once while its server is down (no retries,
   * errors not thrown as events), so a test can stop an instance and still talk to the others.
   */
  readonly raws: readonly Redis[];
  readonly urls: string[];
  /** Disconnects the clients and disposes of the servers. */
  dispose(): Promise<void>;
}

export async function startRedisInstances(count = 3): Promise<RedisInstances> {
  const servers: RedisServer[] = [];
  const raws: Redis[] = [];
  const instances: RedisInstances = {
    servers,
    raws,
    get urls() {
      return servers.map((s) => s.url);
    },
    async dispose() {
      raws.forEach((r) => r.disconnect());
      for (const s of servers) await s.dispose();
    },
  };
  try {
    for (let i = 0; i < count; i++) servers.push(await startRedis());
    for (const s of servers) {
      const r = new Redis(s.url, { protocol: 2, maxRetriesPerRequest: 0 });
      r.on('error', () => undefined);
      raws.push(r);
    }
  } catch (e) {
    await instances.dispose();
    throw e;
  }
  return instances;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it holds; bounded. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/**
 * A real Redis Cluster of `masters` masters, each with `replicas` replicas (servers: the masters first, then the
 * replicas), its slots spread by `redis-cli --cluster create`.
 */
export class RedisCluster {
  constructor(readonly servers: readonly RedisServer[]) {}

  /** One node's URL: LockLens detects the cluster from it. */
  get url(): string {
    return this.servers[0].url;
  }

  /** redis-cli -c (follows MOVED) against the first node. */
  cli(args: readonly string[]): Promise<string> {
    return this.servers[0].cli(['-c', ...args]);
  }

  /** The node (by index) that serves `key`'s slot. */
  async nodeOf(key: string): Promise<number> {
    const client = new Redis(this.servers[0].port, '127.0.0.1', { protocol: 2, lazyConnect: true });
    try {
      await client.connect();
      const slot = (await client.cluster('KEYSLOT', key)) as number;
      const ranges = (await client.cluster('SLOTS')) as unknown as [number, number, [string, number, string]][];
      const range = ranges.find(([start, end]) => start <= slot && slot <= end);
      const index = this.servers.findIndex((s) => s.port === range?.[2][1]);
      if (index < 0) throw new Error(`no node serves slot ${slot}`);
      return index;
    } finally {
      client.disconnect();
    }
  }

  async dispose(): Promise<void> {
    for (const s of this.servers) await s.dispose();
  }
}

export async function startRedisCluster(masters = 3, options: RedisStartOptions = {}, replicas = 0): Promise<RedisCluster> {
  const servers: RedisServer[] = [];
  const cluster = new RedisCluster(servers);
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) servers.push(await startRedis({ ...options, cluster: true }));
    await new Promise<void>((resolve, reject) => {
      execFile(
        'redis-cli',
        ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
        { timeout: 30_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`redis-cli --cluster create: ${stderr || stdout || err.message}`)) : resolve()),
      );
    });
    for (const s of servers) {
      await eventually(async () => /cluster_state:ok/.test(await s.cli(['CLUSTER', 'INFO'])), 20_000, `cluster_state:ok on ${s.port}`);
      // A replica syncs from its master after the cluster is formed: until its link is up, a write's WAIT counts no
      // replica (a fresh clone's failover test saw WAIT 1 5000 answer 0).
      await eventually(
        async () => {
          const replication = await s.cli(['INFO', 'replication']);
          return !/^role:slave/m.test(replication) || /^master_link_status:up/m.test(replication);
        },
        20_000,
        `the replica on ${s.port} in sync with its master`,
      );
    }
    return cluster;
  } catch (e) {
    await cluster.dispose();
    throw e;
  }
}

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { sleep } from '../../src/core/sleep';
import { dataDir, initCluster, PG_BIN, serverUser, SUPERUSER } from '../../demo/postgres';
import type { TestCerts } from './certs';
import { freePort } from './ports';
import { killOnExit, startOrDispose, stopProcess } from './processes';

/**
 * A real PostgreSQL 15 for tests: Debian's binaries, a cluster made by the demo's initCluster in a temporary dir, run
 * as the `postgres` OS user when we are root (the server refuses root: the process gets that user's uid and gid but
 * stays our child, so that it can be stopped) on a free loopback port. Every role logs in with a SCRAM password: the
 * superuser `postgres` and, made after start, the plain role `plain` (no pg_read_all_stats, no pg_signal_backend).
 *
 * TLS: 'off' (ssl = off), 'on' (offered, not required), 'required' (pg_hba.conf accepts only hostssl).
 */

export { PG_BIN, SUPERUSER };
export const SUPERUSER_PASSWORD = 'super secret';
export const PLAIN_USER = 'plain';
export const PLAIN_PASSWORD = 'plain secret';

export type PostgresTls = 'off' | 'on' | 'required';

export class PostgresServer {
  private proc?: ChildProcess;
  private output = '';
  /** The server's OS user when we are root (see demo/postgres.ts); undefined: it runs as us. */
  private ids?: { uid: number; gid: number };

  constructor(
    readonly port: number,
    readonly dir: string,
    private readonly tls: PostgresTls,
    private readonly certs?: TestCerts,
    /** More `-c` settings (a preloaded library, say). */
    private readonly settings: readonly string[] = [],
  ) {}

  /** A postgres:// URL for LockLens (no password: that goes in the profile). */
  url(user = SUPERUSER, database = 'postgres', query = ''): string {
    return `postgres://${user}@127.0.0.1:${this.port}/${database}${query}`;
  }

  /** A libpq connection string for psycopg2 and psql. */
  dsn(user = SUPERUSER, password = SUPERUSER_PASSWORD, database = 'postgres'): string {
    return `host=127.0.0.1 port=${this.port} dbname=${database} user=${user} password='${password}' sslmode=${this.tls === 'off' ? 'disable' : 'require'}`;
  }

  get log(): string {
    return this.output;
  }

  private get data(): string {
    return dataDir(this.dir);
  }

  private async initCluster(): Promise<void> {
    const hostType = this.tls === 'required' ? 'hostssl' : 'host';
    await initCluster(this.dir, { password: SUPERUSER_PASSWORD, hba: [`${hostType} all all 127.0.0.1/32 scram-sha-256`] });
    chmodSync(this.dir, 0o755);
    if (this.tls !== 'off') {
      if (!this.certs) throw new Error('a TLS PostgreSQL needs the test certificates');
      for (const [from, to] of [[this.certs.serverCert, 'server.crt'], [this.certs.serverKey, 'server.key']]) {
        const path = join(this.data, to);
        copyFileSync(from, path);
        if (this.ids) chownSync(path, this.ids.uid, this.ids.gid);
        chmodSync(path, 0o600);
      }
    }
  }

  async start(): Promise<void> {
    this.ids = await serverUser();
    await this.initCluster();
    const settings = [
      `port=${this.port}`,
      'listen_addresses=127.0.0.1',
      `unix_socket_directories=${this.dir}`,
      `ssl=${this.tls === 'off' ? 'off' : 'on'}`,
      'fsync=off',
      'max_connections=60',
      'log_min_messages=warning',
      ...this.settings,
    ];
    const proc = spawn(join(PG_BIN, 'postgres'), ['-D', this.data, ...settings.flatMap((s) => ['-c', s])], {
      ...this.ids,
      cwd: this.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const collect = (d: Buffer) => (this.output = (this.output + d.toString()).slice(-100_000));
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    killOnExit(proc);
    this.proc = proc;
    await this.waitReady();
    await this.superuserQuery(`CREATE ROLE ${PLAIN_USER} LOGIN PASSWORD '${PLAIN_PASSWORD}'`);
  }

  private async waitReady(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        execFileSync(join(PG_BIN, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(this.port), '-t', '1'], { stdio: 'ignore' });
        return;
      } catch {
        if (this.proc?.exitCode !== null) throw new Error(`postgres exited: ${this.output.slice(-2000)}`);
        if (Date.now() > deadline) throw new Error(`postgres on ${this.port} not ready in ${timeoutMs} ms: ${this.output.slice(-2000)}`);
        await sleep(100);
      }
    }
  }

  /** A superuser connection of the test's own (pg, not LockLens): the caller ends it. */
  async superuser(database = 'postgres'): Promise<Client> {
    const client = new Client({
      host: '127.0.0.1',
      port: this.port,
      user: SUPERUSER,
      password: SUPERUSER_PASSWORD,
      database,
      ssl: this.tls === 'off' ? false : { rejectUnauthorized: false },
    });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  }

  async superuserQuery(sql: string, database = 'postgres'): Promise<Record<string, unknown>[]> {
    const client = await this.superuser(database);
    try {
      return (await client.query(sql)).rows as Record<string, unknown>[];
    } finally {
      await client.end();
    }
  }

  /** Immediate shutdown (SIGQUIT: the postmaster ends its backends too), then SIGKILL if it lingers. */
  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGQUIT');
    if ((await Promise.race([exited.then(() => true), sleep(10_000, undefined, { unref: true }).then(() => false)])) === false) await stopProcess(proc, 'SIGKILL');
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export async function startPostgres(options: { tls?: PostgresTls; certs?: TestCerts; settings?: readonly string[] } = {}): Promise<PostgresServer> {
  const dir = mkdtempSync(join(tmpdir(), 'locklens-pg-'));
  return startOrDispose(new PostgresServer(await freePort(), dir, options.tls ?? 'off', options.certs, options.settings));
}

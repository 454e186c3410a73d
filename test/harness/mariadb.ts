import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sleep } from '../../src/core/sleep';
import type { TestCerts } from './certs';
import { freePort } from './ports';
import { killOnExit, startOrDispose, stopProcess } from './processes';

const run = promisify(execFile);

/**
 * A real MariaDB (Debian's 10.11, /usr/sbin/mariadbd) for tests: a data dir made by mariadb-install-db in a temporary
 * directory, a free loopback port, a socket in that directory, run as the `mysql` user when the tests run as root
 * (mariadbd refuses root). Root has no password and is reached over the socket only (`sql`); the tests connect over
 * TCP as the users made here:
 *   locklens / secret : every privilege (PROCESS, CONNECTION ADMIN, SUPER), the database `app`
 *   plain / plain     : only the database `app` (no PROCESS: sees its own connections only; cannot kill others')
 */
export const ADMIN = { user: 'locklens', password: 'secret' };
export const PLAIN = { user: 'plain', password: 'plain' };
export const DATABASE = 'app';

export interface MariaDbOptions {
  /** INSTALL SONAME 'metadata_lock_info' (default true): without it held locks nobody waits for are invisible. */
  readonly metadataLockInfo?: boolean;
  /** Serve TLS with these certificates (the CA's server certificate), and refuse plain connections. */
  readonly tls?: TestCerts;
}

export class MariaDbServer {
  private proc?: ChildProcess;
  private output = '';

  constructor(
    readonly port: number,
    readonly dir: string,
    private readonly options: MariaDbOptions,
  ) {}

  get socket(): string {
    return join(this.dir, 'mysqld.sock');
  }

  /** mysql://user@127.0.0.1:port/app (database '' for none). */
  url(user = ADMIN.user, database = DATABASE, query = ''): string {
    return `mysql://${user}@127.0.0.1:${this.port}/${database}${query}`;
  }

  async start(): Promise<void> {
    const asRoot = process.getuid?.() === 0;
    const data = join(this.dir, 'data');
    if (asRoot) execFileSync('chown', ['mysql:mysql', this.dir]);
    const user = asRoot ? ['--user=mysql'] : [];
    // Its temporary tables in its own dir, as the server's below: /tmp is swept by other tests.
    await run('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, `--tmpdir=${this.dir}`, ...user, '--auth-root-authentication-method=normal', '--skip-test-db']);
    const tls = this.options.tls;
    const tlsArgs = tls ? [`--ssl-ca=${tls.caFile}`, `--ssl-cert=${tls.serverCert}`, `--ssl-key=${tls.serverKey}`, '--require-secure-transport=ON'] : ['--skip-ssl'];
    if (tls && asRoot) execFileSync('chmod', ['-R', 'a+rX', tls.dir]);
    const proc = spawn(
      '/usr/sbin/mariadbd',
      ['--no-defaults', `--datadir=${data}`, `--port=${this.port}`, '--bind-address=127.0.0.1', `--socket=${this.socket}`, `--pid-file=${join(this.dir, 'mysqld.pid')}`,
        // Its temporary tables in its own dir: /tmp is swept by other tests (a run lost one mid-statement).
        `--tmpdir=${this.dir}`,
        ...user, '--skip-name-resolve', '--innodb-buffer-pool-size=16M', '--skip-log-bin', ...tlsArgs],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const collect = (d: Buffer) => (this.output = (this.output + d.toString()).slice(-100_000));
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    this.proc = killOnExit(proc);
    const deadline = Date.now() + 30_000;
    while (!this.output.includes('ready for connections')) {
      if (proc.exitCode !== null) throw new Error(`mariadbd exited: ${this.output.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`mariadbd not ready in 30 s: ${this.output.slice(-2000)}`);
      await sleep(50);
    }
    await this.sql(
      `CREATE DATABASE ${DATABASE};` +
        `CREATE USER '${ADMIN.user}'@'%' IDENTIFIED BY '${ADMIN.password}'; GRANT ALL ON *.* TO '${ADMIN.user}'@'%';` +
        `CREATE USER '${PLAIN.user}'@'%' IDENTIFIED BY '${PLAIN.password}'; GRANT ALL ON ${DATABASE}.* TO '${PLAIN.user}'@'%';` +
        (this.options.metadataLockInfo === false ? '' : "INSTALL SONAME 'metadata_lock_info';"),
    );
  }

  /** Runs statements as root over the socket; resolves with the output (tab-separated, no column names). */
  async sql(statements: string): Promise<string> {
    const { stdout } = await run('mariadb', ['--no-defaults', `--socket=${this.socket}`, '-uroot', '--batch', '--skip-column-names', '-e', statements]);
    return stdout;
  }

  get log(): string {
    return this.output;
  }

  async dispose(): Promise<void> {
    await stopProcess(this.proc);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export async function startMariaDb(options: MariaDbOptions = {}): Promise<MariaDbServer> {
  return startOrDispose(new MariaDbServer(await freePort(), mkdtempSync(join(tmpdir(), 'locklens-mariadb-')), options));
}

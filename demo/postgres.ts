import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sleep } from '../src/core/sleep';
import { freePort } from './ports';
import { Group } from './processes';

/**
 * PostgreSQL 15 from Debian's binaries, a cluster of its own in a dir the caller owns: `initCluster` makes it,
 * `startCluster` runs its server in a Group on a loopback port. When we are root the server runs as the `postgres` OS
 * user (it refuses root): initdb gets that user's uid and gid, and the server is started through `setpriv`, so that
 * the Group's watchdog stays ours (as another user it could not see whether we are still alive).
 *
 * `startPostgres` is the demo's own server: see below.
 */

export const PG_BIN = '/usr/lib/postgresql/15/bin';
export const SUPERUSER = 'postgres';

const run = promisify(execFile);

export function postgresInstalled(): boolean {
  return ['initdb', 'postgres', 'createdb'].every((b) => existsSync(join(PG_BIN, b)));
}

/** The uid and gid the server runs as: the `postgres` OS user when we are root, else undefined (we run it). */
export async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const [uid, gid] = await Promise.all(['-u', '-g'].map(async (flag) => Number((await run('id', [flag, SUPERUSER])).stdout.trim())));
  return { uid, gid };
}

export interface ClusterOptions {
  /** The superuser's password, stored as a SCRAM verifier. Without one, loopback connections are trusted. */
  readonly password?: string;
  /** pg_hba.conf in full; by default every user and database from 127.0.0.1, by password (or trusted without one). */
  readonly hba?: readonly string[];
}

/** The cluster's data dir inside `dir`. */
export const dataDir = (dir: string): string => join(dir, 'data');

/**
 * initdb: a cluster in `dir`/data (`dir` is made if missing, and given to the server's user), superuser `postgres`,
 * UTF-8, C locale.
 */
export async function initCluster(dir: string, options: ClusterOptions = {}): Promise<void> {
  const user = await serverUser();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (user) chownSync(dir, user.uid, user.gid);
  const auth = options.password === undefined ? 'trust' : 'scram-sha-256';
  const args = ['-D', dataDir(dir), '-U', SUPERUSER, `--auth=${auth}`, '--no-sync', '-E', 'UTF8', '--locale=C'];
  const pwfile = join(dir, 'pwfile');
  if (options.password !== undefined) {
    writeFileSync(pwfile, `${options.password}\n`, { mode: 0o600 });
    if (user) chownSync(pwfile, user.uid, user.gid);
    args.push(`--pwfile=${pwfile}`);
  }
  try {
    await run(join(PG_BIN, 'initdb'), args, { ...user, cwd: dir });
  } catch (e) {
    throw new Error(`initdb failed: ${(e as { stderr?: string }).stderr?.trim() || String(e)}`);
  } finally {
    rmSync(pwfile, { force: true });
  }
  const hba = options.hba ?? [`host all all 127.0.0.1/32 ${auth}`];
  writeFileSync(join(dataDir(dir), 'pg_hba.conf'), hba.join('\n') + '\n');
}

export interface ServerOptions {
  readonly port: number;
  /** The demo's run id (see processes.ts). */
  readonly runId: string;
  /** More server settings, `name=value` (ssl=on, max_connections=60, …). */
  readonly settings?: readonly string[];
  /** Removed by the Group's watchdog if we die without stopping the server. */
  readonly tmpDir?: string;
}

/** Why a server did not start: `portTaken` when another process had its port (worth another port). */
export class ServerDidNotStart extends Error {
  constructor(
    message: string,
    readonly portTaken: boolean,
  ) {
    super(message);
  }
}

/**
 * Runs the server of the cluster in `dir` on 127.0.0.1:port; resolves with its Group once it accepts connections.
 * Stop it with `group.stop()`: SIGTERM reaches every process of the group, the backends end, and the server shuts
 * down (a fast shutdown, nothing to flush with fsync off).
 */
export async function startCluster(dir: string, options: ServerOptions): Promise<Group> {
  const user = await serverUser();
  const settings = [`port=${options.port}`, 'listen_addresses=127.0.0.1', `unix_socket_directories=${dir}`, 'fsync=off', ...(options.settings ?? [])];
  const postgres = [join(PG_BIN, 'postgres'), '-D', dataDir(dir), ...settings.flatMap((s) => ['-c', s])];
  const [command, ...args] = user ? ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--init-groups', '--', ...postgres] : postgres;
  const group = new Group('postgres', command, args, options.runId, { cwd: dir, tmpDir: options.tmpDir });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (/ready to accept connections/.test(group.output)) return group;
    if (!group.running || Date.now() > deadline) break;
    await sleep(25);
  }
  const timedOut = Date.now() > deadline;
  await group.stop(1000);
  throw new ServerDidNotStart(`PostgreSQL did not start${timedOut ? ' in 30 s' : ''}:\n${group.output.slice(-3000)}`, /Address already in use/i.test(group.output));
}

/** CREATE DATABASE `name` on the server at 127.0.0.1:port, as the superuser. */
export async function createDatabase(port: number, name: string, password?: string): Promise<void> {
  const env = { ...process.env, PGPASSWORD: password, PGCONNECT_TIMEOUT: '10' };
  if (password === undefined) delete env.PGPASSWORD;
  await run(join(PG_BIN, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', SUPERUSER, name], { env });
}

/**
 * The demo's own PostgreSQL: a cluster under the demo's temp dir, on a free loopback port, with a database `app` for
 * the workload. Loopback connections are trusted, in the demo only: the demo writes VS Code's settings but cannot put
 * a password in its SecretStorage, and a password in settings is what LockLens refuses.
 */
export interface DemoPostgres {
  /** postgres://postgres@127.0.0.1:PORT/app */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly group: Group;
}

export const DEMO_DATABASE = 'app';

export async function startPostgres(root: string, runId: string): Promise<DemoPostgres> {
  const dir = join(root, 'postgres');
  const user = await serverUser();
  if (user) {
    // The server's user must reach its dir through the demo's temp dir (0700, ours): its group may pass, not list.
    chownSync(root, statSync(root).uid, user.gid);
    chmodSync(root, 0o710);
  }
  await initCluster(dir);
  // A port found free can be taken before the server binds it: try again with another.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      const group = await startCluster(dir, { port, runId, tmpDir: root });
      try {
        await createDatabase(port, DEMO_DATABASE);
      } catch (e) {
        await group.stop(1000);
        throw e;
      }
      return { url: `postgres://${SUPERUSER}@127.0.0.1:${port}/${DEMO_DATABASE}`, port, dataDir: dataDir(dir), group };
    } catch (e) {
      if (!(e instanceof ServerDidNotStart && e.portTaken) || attempt >= 3) throw e;
    }
  }
}

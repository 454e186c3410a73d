import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseSettings, checkInstalled, copyExtension, repoRoot, startCodeServer, type CodeServer } from './codeServer';
import { demoConnections } from './connections';
import { INCIDENT_HOLDER, INCIDENT_WAITERS, LIQUIBASE_LOCKED_BY, POSTGRES_LOCKS } from './postgresWorkload';
import { Group, RUN_VAR } from './processes';
import { REDIS_LOCKS, REDIS_PREFIX, REDIS_SEMAPHORE_PREFIX, REDISSON_KEYS, THUMBNAIL_PERMITS } from './redisWorkload';
import { LOCKS } from './workload';
import { ZOOKEEPER_LOCKS, ZOOKEEPER_PREFIX } from './zookeeperWorkload';

/**
 * VS Code with LockLens installed and connected to the demo's etcd (and its Redis, ZooKeeper and PostgreSQL): desktop
 * VS Code when `code` is on PATH and there is a display, else code-server on 127.0.0.1 (the same one the UI tests use)
 * in the browser. Either way it gets temporary user-data and extensions dirs (your own VS Code profile is not touched),
 * the built extension copied in, and a settings.json with the `demo` connection (and `demo-redis`, `demo-zookeeper`,
 * `demo-postgres`).
 */

export interface Editor {
  /** What to tell the user: the URL to open, or that a window opened. */
  readonly description: string;
  readonly url?: string;
  stop(): Promise<void>;
}

export interface EditorOptions {
  readonly endpoints: readonly string[];
  /** redis://127.0.0.1:PORT of the demo's Redis, when it runs one. */
  readonly redisUrl?: string;
  /** zookeeper://127.0.0.1:PORT of the demo's ZooKeeper, when it runs one. */
  readonly zookeeperUrl?: string;
  /** postgres://postgres@127.0.0.1:PORT/app of the demo's PostgreSQL, when it runs one. */
  readonly postgresUrl?: string;
  /** The demo's temp dir: the workspace folder and the desktop profile go under it. */
  readonly root: string;
  readonly runId: string;
  /** Use code-server even where desktop VS Code exists. */
  readonly forceCodeServer: boolean;
  readonly log: (message: string) => void;
}

/** The settings that connect LockLens to the demo: its connections, and a long hold flagged sooner. */
export function demoSettings(endpoints: readonly string[], redisUrl?: string, zookeeperUrl?: string, postgresUrl?: string): Record<string, unknown> {
  return {
    'locklens.connections': demoConnections(endpoints, redisUrl, zookeeperUrl, postgresUrl),
    // The stuck holder is flagged after a minute, not the default five.
    'locklens.longHoldSeconds': 60,
    'locklens.leaseSampleSeconds': 1,
    // The workspace's README.md (what the demo runs and what to try) opens at start.
    'workbench.startupEditor': 'readme',
  };
}

export function desktopCodeAvailable(): boolean {
  const hasDisplay = process.platform === 'darwin' || !!process.env.DISPLAY || !!process.env.WAYLAND_DISPLAY;
  return hasDisplay && spawnSync('sh', ['-c', 'command -v code'], { stdio: 'ignore' }).status === 0;
}

export async function openEditor(options: EditorOptions): Promise<Editor> {
  const workspace = join(options.root, 'workspace');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, 'README.md'), workspaceReadme(options));
  const settings = { ...baseSettings, ...demoSettings(options.endpoints, options.redisUrl, options.zookeeperUrl, options.postgresUrl) };

  if (!options.forceCodeServer && desktopCodeAvailable()) {
    const userData = join(options.root, 'vscode-user-data');
    const extensions = join(options.root, 'vscode-extensions');
    mkdirSync(join(userData, 'User'), { recursive: true });
    mkdirSync(extensions, { recursive: true });
    writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
    copyExtension(repoRoot, extensions);
    // --wait keeps the `code` launcher running while the window is open. The window's own processes leave this group
    // (Electron starts detached), but they carry the demo's run id in their environment: the demo's straggler sweep
    // closes them at the end.
    const group = new Group('vscode', 'code', ['--new-window', '--wait', '--user-data-dir', userData, '--extensions-dir', extensions, '--disable-workspace-trust', workspace], options.runId);
    void group.exited.then(() => options.log('the VS Code window was closed; the workload keeps running (Ctrl-C stops it)'));
    return {
      description: 'desktop VS Code (a new window with its own temporary profile)',
      stop: () => group.stop(2000),
    };
  }

  checkInstalled();
  const server: CodeServer = await startCodeServer({
    installExtensionFrom: repoRoot,
    extraSettings: demoSettings(options.endpoints, options.redisUrl, options.zookeeperUrl, options.postgresUrl),
    env: { [RUN_VAR]: options.runId },
  });
  const url = `${server.url}/?folder=${encodeURIComponent(workspace)}`;
  return {
    description: 'code-server (VS Code in the browser)',
    url,
    stop: () => server.stop(),
  };
}

function workspaceReadme({ endpoints, redisUrl, zookeeperUrl, postgresUrl }: EditorOptions): string {
  return `# LockLens demo

A local etcd (\`${endpoints.join(',')}\`) with simulated services fighting over locks. Open the **LockLens** view in
the activity bar (the padlock): the \`demo\` connection watches \`/locks/\` and \`/election/\`.

| lock | who | what to look at |
| --- | --- | --- |
| \`${LOCKS.billing}\` | three services using LockLens's Go-compatible Mutex | a holder and a queue that moves every few seconds |
| \`${LOCKS.report}\` | two \`etcdctl lock\` loops and a Mutex service | etcdctl and Go-style clients queue together |
| \`${LOCKS.migration}\` | two long migrations | sometimes free, sometimes contended |
| \`${LOCKS.payments}\` | **stuck**: its holder keeps its lease alive and never releases | the incident |
| \`${LOCKS.cron}\` | two cron jobs using a single-key try-lock | one row: the key itself |
| \`${LOCKS.election}\` | \`etcdctl elect\` node-a and node-b | the leader and the candidate |

Things to try:

1. **Fix the incident.** Expand \`reconcile\`: the holder has held for minutes (flagged after 60 s) while
   two waiters queue. Right-click the holder → **Revoke Lease…**: the confirmation lists the key it deletes and who
   holds next. The stuck service queues again 30 s later, so you can do it again.
2. **Take a lock yourself.** **LockLens: Acquire Lock…** on \`${LOCKS.billing}\`: you join the same queue as the Go
   services, see your position, then hold it (status bar) until you click it to release.
3. **Watch it live.** **LockLens: Open Lock Timeline** shows every hold and wait as bars over time.

${redisUrl ? redisReadme(redisUrl) : ''}${zookeeperUrl ? zooKeeperReadme(zookeeperUrl) : ''}${postgresUrl ? postgresReadme(postgresUrl) : ''}
Ctrl-C in the terminal that runs \`npm run demo\` stops everything the demo started.
`;
}

function redisReadme(url: string): string {
  return `
## Redis

A local Redis (\`${url}\`, keyspace notifications on) with real clients' lock layouts: the \`demo-redis\` connection
watches \`${REDIS_PREFIX}\` and \`${REDIS_SEMAPHORE_PREFIX}\`.

| lock | who | what to look at |
| --- | --- | --- |
| \`${REDIS_LOCKS.billing}\` | two services using a Redisson \`RLock\` (its own Lua), re-entrant | a holder field \`<uuid>:<thread>\` holding it twice, its TTL renewed every 10 s; it changes hands every 10-25 s |
| \`${REDIS_LOCKS.report}\` | a Redisson \`RFairLock\` | a holder and two waiters in \`${REDISSON_KEYS.queue}\`, deadlines in \`${REDISSON_KEYS.timeout}\` |
| \`${REDIS_LOCKS.export}\` | three redis-py \`Lock(timeout=8)\` processes | a token that changes every few seconds |
| \`${REDIS_LOCKS.stuck}\` | **stuck**: a redis-py token with no expiry, its process gone | held forever: nothing will ever release it |
| \`${REDIS_LOCKS.thumbnails}\` | five workers using npm redis-semaphore's \`Semaphore\` (its own Lua), ${THUMBNAIL_PERMITS} permits | a semaphore: ${THUMBNAIL_PERMITS}/${THUMBNAIL_PERMITS} permits held, each holder with its own age and TTL; the two left over poll, unseen |

4. **Force-release the stuck token.** Right-click the holder of \`${REDIS_LOCKS.stuck}\` → **Force Release…**: it
   deletes the key only if it still holds the token you saw. The job crashes holding it again 30 s later.
5. **Force-release the fair lock.** The head of its queue takes it and a new waiter joins the tail.
6. **Take a permit.** **LockLens: Acquire Lock…** on \`${REDIS_LOCKS.thumbnails}\` asks for its limit (${THUMBNAIL_PERMITS}: the
   store does not keep it), then waits, as the workers do, until one gives a permit back.
`;
}

function zooKeeperReadme(url: string): string {
  return `
## ZooKeeper

A local ZooKeeper (\`${url}\`) with kazoo clients, each with a session of its own: the \`demo-zookeeper\` connection
watches \`${ZOOKEEPER_PREFIX}\`. A member's owner is its session, its fencing token the node's creation zxid, and its data
says who it is (kazoo's identifier, Curator's IP).

| lock | who | what to look at |
| --- | --- | --- |
| \`${ZOOKEEPER_LOCKS.report}\` | three kazoo \`Lock\` processes | a holder and waiters in sequence order, changing every few seconds |
| \`${ZOOKEEPER_LOCKS.catalog}\` | kazoo \`ReadLock\` ×2 and \`WriteLock\` | readers holding together, the writer waiting for both |
| \`${ZOOKEEPER_LOCKS.slots}\` | four kazoo \`Semaphore\` exporters, 2 permits | a semaphore: two permit holders, the others waiting in its Lock's order |
| \`${ZOOKEEPER_LOCKS.stuck}\` | **stuck**: a node in Curator's layout whose service keeps its session alive and never releases; a kazoo standby waits behind it | the incident |

6. **Force-release the stuck node.** Right-click the holder of \`${ZOOKEEPER_LOCKS.stuck}\` → **Force Release…**: it
   deletes that node only if it is still the one shown, and the standby takes the lock. The confirmation says it: the
   stuck service is not told, and may still believe it holds the lock. It hangs holding it again 30 s later.
`;
}

function postgresReadme(url: string): string {
  return `
## PostgreSQL

A local PostgreSQL 15 (\`${url}\`, loopback connections trusted: the demo cannot put a password in VS Code's secret
storage) with psycopg2 sessions on database \`app\`: the \`demo-postgres\` connection watches every lock in it (an
empty prefix). A member's owner is its session: the backend pid, shown with its \`application_name\`, user and client.

| lock | who | what to look at |
| --- | --- | --- |
| \`${POSTGRES_LOCKS.incident}\` | **stuck**: \`${INCIDENT_HOLDER}\` holds \`pg_advisory_lock(42)\` for minutes, its session idle; ${INCIDENT_WAITERS.map((w) => `\`${w}\``).join(' and ')} wait behind it | the incident: a holder and two waiters in queue order |
| \`${POSTGRES_LOCKS.contended}\` | three \`sync-worker\` sessions in \`pg_advisory_lock(7, 1)\` (an int pair) | a holder that changes every few seconds |
| \`${POSTGRES_LOCKS.liquibase}\` | **stuck**: Liquibase's lock row, locked by \`${LIQUIBASE_LOCKED_BY}\`, a migration that was killed | locked forever: no session holds it, nothing will unlock it |
| \`${POSTGRES_LOCKS.shedlock}\` | a ShedLock job, locked for 20 s every 30 s | each run a hold of its own until its \`lock_until\`, then free until the next |

7. **Release the stuck Liquibase lock.** Right-click the holder of \`${POSTGRES_LOCKS.liquibase}\` → **Force Release…**:
   Liquibase's own release (LOCKED false), only if the row still says what you saw. A migration crashes holding it
   again 30 s later.
8. **Force-release \`${POSTGRES_LOCKS.incident}\`.** It terminates ${INCIDENT_HOLDER}'s session: \`${INCIDENT_WAITERS[0]}\` holds next,
   and ${INCIDENT_HOLDER} connects again and queues, so it holds for minutes again soon after.
`;
}

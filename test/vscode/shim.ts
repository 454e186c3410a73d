import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startCodeServer, type CodeServer } from '../harness/codeServer';
import { openWorkbench, type Workbench } from '../harness/workbench';

/**
 * A stand-in for the `code` executable that @vscode/test-electron's runTests spawns (see code-server-shim, its
 * executable wrapper): it takes the flags runTests passes (--extensionDevelopmentPath=, --extensionTestsPath=,
 * --user-data-dir=, --extensions-dir=, a folder to open; everything else is ignored), starts code-server in
 * smoke-test-driver mode, opens headless Chromium on the workbench with those paths in the `payload` URL parameter,
 * forwards the browser console (the extension host's and mocha's output) to stdout, and exits with the code the
 * workbench reports through window.codeAutomationExit.
 *
 * The workbench reports 0 also when the extension host crashed, so when LOCKLENS_TEST_RESULT names a result file
 * (written by test/vscode/suite/index.ts) the run passes only if that file exists with failed = 0 and passed > 0.
 * LOCKLENS_VSCODE_TIMEOUT_MS (default 8 min) bounds the whole run; a hung run exits 124.
 */

interface Args {
  extensionDevelopmentPath: string[];
  extensionTestsPath?: string;
  userDataDir?: string;
  extensionsDir?: string;
  folder?: string;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { extensionDevelopmentPath: [] };
  const withValue = new Set(['extensionDevelopmentPath', 'extensionTestsPath', 'user-data-dir', 'extensions-dir']);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    let key: string | undefined;
    let value: string | undefined;
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(a);
    if (m) {
      key = m[1];
      value = m[2];
      if (value === undefined && withValue.has(key)) value = argv[++i];
    } else {
      args.folder = resolve(a);
      continue;
    }
    if (value === undefined) continue;
    if (key === 'extensionDevelopmentPath') args.extensionDevelopmentPath.push(resolve(value));
    else if (key === 'extensionTestsPath') args.extensionTestsPath = resolve(value);
    else if (key === 'user-data-dir') args.userDataDir = resolve(value);
    else if (key === 'extensions-dir') args.extensionsDir = resolve(value);
  }
  return args;
}

interface Result {
  passed: number;
  failed: number;
}

function log(line: string): void {
  process.stdout.write(`[code-server-shim] ${line}\n`);
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (!args.extensionTestsPath || args.extensionDevelopmentPath.length === 0) {
    log('usage: code-server-shim --extensionDevelopmentPath=<dir> --extensionTestsPath=<file> [--user-data-dir=<dir>] [--extensions-dir=<dir>] [folder]');
    return 2;
  }
  const resultFile = process.env.LOCKLENS_TEST_RESULT;
  if (resultFile) rmSync(resultFile, { force: true });
  const timeoutMs = Number(process.env.LOCKLENS_VSCODE_TIMEOUT_MS ?? 8 * 60_000);

  let server: CodeServer | undefined;
  let workbench: Workbench | undefined;
  let emptyFolder: string | undefined;
  let stopped: Promise<void> | undefined;
  // Called from the signal handlers and at the end: both wait for the same cleanup.
  const cleanup = () =>
    (stopped ??= (async () => {
      await workbench?.close();
      await server?.stop();
      if (emptyFolder) rmSync(emptyFolder, { recursive: true, force: true });
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    const started = Date.now();
    // Everything the test runner put in the environment (LOCKLENS_*) also goes to the extension host explicitly.
    const extensionEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('LOCKLENS_'))) as Record<string, string>;
    server = await startCodeServer({
      smokeTestDriver: true,
      userDataDir: args.userDataDir,
      extensionsDir: args.extensionsDir,
      env: extensionEnv,
      logFile: process.env.LOCKLENS_CODE_SERVER_LOG,
    });
    log(`code-server ${server.url} ready in ${Date.now() - started} ms`);
    const folder = args.folder ?? (emptyFolder = mkdtempSync(join(tmpdir(), 'locklens-workspace-')));
    const payload: [string, string][] = [
      ...args.extensionDevelopmentPath.map((p): [string, string] => ['extensionDevelopmentPath', server!.remoteUri(p)]),
      ['extensionTestsPath', server.remoteUri(args.extensionTestsPath)],
      ['extensionEnvironment', JSON.stringify(extensionEnv)],
    ];

    let exited!: (code: number) => void;
    const exitCode = new Promise<number>((r) => (exited = r));
    const s = server;
    const serverWatch = setInterval(() => {
      if (!s.isRunning) exited(-1);
    }, 500);
    const timer = setTimeout(() => {
      log(`no result in ${timeoutMs} ms: giving up`);
      exited(124);
    }, timeoutMs);
    try {
      workbench = await openWorkbench(server, {
        folder,
        payload,
        waitReady: false,
        expose: { codeAutomationExit: (code: number) => exited(typeof code === 'number' ? code : 1) },
        onConsole: (line) => process.stdout.write(`${line}\n`),
      });
      workbench.page.on('crash', () => {
        log('the browser page crashed');
        exited(-2);
      });
      const code = await exitCode;
      log(`workbench reported exit code ${code} after ${Date.now() - started} ms`);
      if (code === -1) log(`code-server exited early:\n${server.log.slice(-3000)}`);
      if (code !== 0) return code < 0 ? 1 : code;
    } finally {
      clearTimeout(timer);
      clearInterval(serverWatch);
    }
    if (!resultFile) return 0;
    if (!existsSync(resultFile)) {
      log(`no result file ${resultFile}: the extension host crashed or the suite never ran`);
      return 1;
    }
    const result = JSON.parse(readFileSync(resultFile, 'utf8')) as Result;
    log(`result: ${result.passed} passed, ${result.failed} failed`);
    return result.failed === 0 && result.passed > 0 ? 0 : 1;
  } catch (e) {
    log(`failed: ${e instanceof Error ? e.stack : String(e)}`);
    return 1;
  } finally {
    await cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    log(String(e));
    process.exit(1);
  },
);

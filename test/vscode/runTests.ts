import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runTests } from '@vscode/test-electron';
import { repoRoot } from '../harness/codeServer';
import type { SuiteResult } from './suite/result';

/**
 * Runs the mocha suites of test/vscode/suite inside a real VS Code extension host, through @vscode/test-electron's
 * runTests: `node out/test/vscode/runTests.js` (after npm run build and npm run compile).
 *
 * Here (offline) VS Code is code-server: runTests gets test/vscode/code-server-shim as its `code` executable. With
 * LOCKLENS_VSCODE=desktop the shim is left out and runTests downloads desktop VS Code as usual (needs the internet,
 * and a display or xvfb-run on Linux).
 *
 * Environment: LOCKLENS_TEST_RESULT (the result file; a temporary one by default), LOCKLENS_TEST_GREP (run only the
 * tests whose full title matches), LOCKLENS_VSCODE_RUN_TIMEOUT_MS (hard limit for the whole run, default 10 min).
 * Exit code 0 only when VS Code exited 0 and the result file says failed = 0 and passed > 0.
 */

export const shimPath = join(repoRoot, 'test/vscode/code-server-shim');
export const suiteIndex = join(repoRoot, 'out/test/vscode/suite/index.js');

export interface RunResult {
  /** VS Code's exit code (or the shim's), or 124 when the hard timeout hit. */
  readonly exitCode: number;
  /** The result file's content, when the suite wrote one. */
  readonly result?: SuiteResult;
  /** Whether the run counts as a pass. */
  readonly ok: boolean;
}

export async function runExtensionTests(options: { resultFile?: string; grep?: string } = {}): Promise<RunResult> {
  const desktop = process.env.LOCKLENS_VSCODE === 'desktop';
  if (!existsSync(join(repoRoot, 'dist/extension.js'))) throw new Error('dist/extension.js is missing: run npm run build first');
  if (!existsSync(suiteIndex)) throw new Error(`${suiteIndex} is missing: run npm run compile first`);
  const tmp = mkdtempSync(join(tmpdir(), 'locklens-vscode-run-'));
  const resultFile = options.resultFile ?? process.env.LOCKLENS_TEST_RESULT ?? join(tmp, 'result.json');
  mkdirSync(dirname(resultFile), { recursive: true });
  rmSync(resultFile, { force: true });
  const workspace = join(tmp, 'workspace');
  mkdirSync(workspace);
  const grep = options.grep ?? process.env.LOCKLENS_TEST_GREP;
  let exitCode: number;
  try {
    exitCode = await runTests({
      extensionDevelopmentPath: repoRoot,
      extensionTestsPath: suiteIndex,
      vscodeExecutablePath: desktop ? undefined : shimPath,
      launchArgs: [
        workspace,
        `--user-data-dir=${join(tmp, 'user-data')}`,
        `--extensions-dir=${join(tmp, 'extensions')}`,
        ...(desktop ? ['--disable-extensions'] : []),
      ],
      extensionTestsEnv: {
        LOCKLENS_TEST_RESULT: resultFile,
        ...(grep ? { LOCKLENS_TEST_GREP: grep } : {}),
      },
    });
  } catch (e) {
    // runTests rejects with TestRunFailedError when VS Code exits non-zero.
    const code = (e as { code?: number }).code;
    console.error(String(e));
    exitCode = typeof code === 'number' && code !== 0 ? code : 1;
  }
  const result = existsSync(resultFile) ? (JSON.parse(readFileSync(resultFile, 'utf8')) as SuiteResult) : undefined;
  rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
  const ok = exitCode === 0 && !!result && result.failed === 0 && result.passed > 0;
  return { exitCode, result, ok };
}

if (require.main === module) {
  const limitMs = Number(process.env.LOCKLENS_VSCODE_RUN_TIMEOUT_MS ?? 10 * 60_000);
  const hardLimit = setTimeout(() => {
    console.error(`runTests: no end in ${limitMs} ms: stopping VS Code`);
    // Only our own children (the shim or VS Code): they clean up after themselves on SIGTERM.
    spawnSync('pkill', ['-TERM', '-P', String(process.pid)]);
    setTimeout(() => process.exit(124), 10_000).unref();
  }, limitMs);
  hardLimit.unref();
  runExtensionTests().then(
    ({ exitCode, result, ok }) => {
      clearTimeout(hardLimit);
      console.log(result ? `extension host: ${result.passed} passed, ${result.failed} failed` : 'extension host: no result file (crashed or never ran)');
      if (exitCode !== 0) console.log(`VS Code exit code ${exitCode}`);
      process.exit(ok ? 0 : 1);
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}

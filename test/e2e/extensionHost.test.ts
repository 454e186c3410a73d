import { test } from 'node:test';
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, repoRoot, testOutput } from '../harness/codeServer';
import type { SuiteResult } from '../vscode/suite/result';

/**
 * The mocha suites of test/vscode/suite, run inside a real VS Code extension host (code-server) through
 * @vscode/test-electron's runTests (`node out/test/vscode/runTests.js`); each mocha test becomes a subtest here so the
 * runner's total counts every one of them. A run that crashes, hangs or writes no result file is a failure.
 * Output: test-output/logs/extension-host.log.
 */

const RUN_LIMIT_MS = 10 * 60_000;

test('VS Code extension host (mocha suites in code-server)', { timeout: RUN_LIMIT_MS + 60_000 }, async (t) => {
  const logDir = join(testOutput, 'logs');
  mkdirSync(logDir, { recursive: true });
  const logFile = join(logDir, 'extension-host.log');
  // A result file of this run's own (another run in the same checkout must not hand us its result).
  const tmp = mkdtempSync(join(tmpdir(), 'locklens-e2e-'));
  t.after(() => rmSync(tmp, { recursive: true, force: true }));
  const resultFile = join(tmp, 'result.json');

  const run = await runDetached(process.execPath, [join(repoRoot, 'out/test/vscode/runTests.js')], {
    env: cleanEnv({ LOCKLENS_TEST_RESULT: resultFile, LOCKLENS_VSCODE_RUN_TIMEOUT_MS: String(RUN_LIMIT_MS - 30_000) }),
    logFile,
    limitMs: RUN_LIMIT_MS,
  });
  const tail = () => readFileSync(logFile, 'utf8').split('\n').slice(-60).join('\n');
  if (!existsSync(resultFile)) {
    throw new Error(`no result file (exit ${run.code ?? run.signal}${run.timedOut ? ', timed out' : ''}): the extension host crashed or never ran the suites\n${tail()}`);
  }
  const result = JSON.parse(readFileSync(resultFile, 'utf8')) as SuiteResult;
  for (const r of result.tests) {
    await t.test(r.fullTitle, { skip: r.state === 'pending' }, () => {
      if (r.state === 'failed') throw new Error(r.error ?? 'failed');
    });
  }
  if (result.passed === 0) throw new Error(`no mocha test passed\n${tail()}`);
  // A failed mocha test makes the run exit 1 too; that is counted above. Otherwise a bad exit is a failure of its own.
  if (run.code !== 0 && result.failed === 0) throw new Error(`the run exited ${run.code ?? run.signal}${run.timedOut ? ' (timed out)' : ''} although its tests were reported\n${tail()}`);
});

interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
}

/** Runs a command in its own process group, output to `logFile`; past `limitMs` the group gets SIGTERM, then SIGKILL. */
async function runDetached(cmd: string, args: string[], options: { env: NodeJS.ProcessEnv; logFile: string; limitMs: number }): Promise<Exit> {
  const log = createWriteStream(options.logFile);
  const child = spawn(cmd, args, { cwd: repoRoot, env: options.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // gone
    }
  };
  const onExit = () => killGroup('SIGKILL');
  process.on('exit', onExit);
  let timedOut = false;
  let hardKill: NodeJS.Timeout | undefined;
  const limit = setTimeout(() => {
    timedOut = true;
    killGroup('SIGTERM');
    hardKill = setTimeout(() => killGroup('SIGKILL'), 15_000);
  }, options.limitMs);
  try {
    const [code, signal] = (await new Promise((resolve) => child.once('close', (c, s) => resolve([c, s])))) as [number | null, NodeJS.Signals | null];
    return { code, signal, timedOut };
  } finally {
    clearTimeout(limit);
    clearTimeout(hardKill);
    process.off('exit', onExit);
    await new Promise((r) => log.end(r));
  }
}

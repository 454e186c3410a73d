import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Mocha from 'mocha';
import type { SuiteResult, TestResult } from './result';

/**
 * The extensionTestsPath module: VS Code's extension host calls `run()` once the extension under development is
 * loaded. Runs every *.test.js next to this file (and below) with mocha (bdd, 60 s per test), prints the spec report
 * (it reaches the test runner as console output) and writes the result to the file named by LOCKLENS_TEST_RESULT,
 * which is how the runner tells a finished run from a crashed extension host. LOCKLENS_TEST_GREP filters tests.
 */
export async function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'bdd', timeout: 60_000, color: false, reporter: 'spec' });
  if (process.env.LOCKLENS_TEST_GREP) mocha.grep(process.env.LOCKLENS_TEST_GREP);
  for (const file of testFiles(__dirname)) mocha.addFile(file);

  const tests: TestResult[] = [];
  const resultFile = process.env.LOCKLENS_TEST_RESULT;
  const write = () => {
    const result: SuiteResult = {
      passed: tests.filter((t) => t.state === 'passed').length,
      failed: tests.filter((t) => t.state === 'failed').length,
      pending: tests.filter((t) => t.state === 'pending').length,
      tests,
    };
    if (resultFile) writeFileSync(resultFile, JSON.stringify(result, null, 2));
    return result;
  };

  const failures = await new Promise<number>((resolve) => {
    let runner: Mocha.Runner;
    try {
      runner = mocha.run((n) => resolve(n));
    } catch (e) {
      // A test file that throws while loading.
      tests.push({ title: 'load test files', fullTitle: 'load test files', state: 'failed', error: errorText(e), durationMs: 0 });
      resolve(1);
      return;
    }
    runner.on('pass', (t) => tests.push({ title: t.title, fullTitle: t.fullTitle(), state: 'passed', durationMs: t.duration ?? 0 }));
    runner.on('pending', (t) => tests.push({ title: t.title, fullTitle: t.fullTitle(), state: 'pending', durationMs: 0 }));
    // Hooks fail here too ("before all" hook for ...), so a broken setup is a failure even though its tests never ran.
    runner.on('fail', (t, err) => tests.push({ title: t.title, fullTitle: t.fullTitle(), state: 'failed', error: errorText(err), durationMs: t.duration ?? 0 }));
  });
  const result = write();
  console.log(`mocha: ${result.passed} passed, ${result.failed} failed${result.pending ? `, ${result.pending} pending` : ''}`);
  if (failures > 0 || result.failed > 0) throw new Error(`${Math.max(failures, result.failed)} extension test(s) failed`);
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.js') ? [join(dir, e.name)] : []))
    .sort();
}

function errorText(e: unknown): string {
  return e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : String(e);
}

// Runs every compiled test file with node's test runner, prints the spec report, then one honest total for the
// whole run as a plain `N passed, N failed` line. Exit code 1 when anything failed or no test ran.
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

// By default everything; the slow files in a real VS Code (e2e, ui) first, so the many short ones fill the other slot.
const defaultRoots = ['out/test/e2e', 'out/test/ui', 'out/test/unit', 'out/test/integration'];
const roots = process.argv.slice(2).length ? process.argv.slice(2) : defaultRoots;

function testFiles(path) {
  if (statSync(path).isFile()) return [path];
  return readdirSync(path, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? testFiles(join(path, e.name)) : e.name.endsWith('.test.js') ? [join(path, e.name)] : []))
    .sort();
}

const files = roots.flatMap(testFiles);
// The totals are the runner's own, the ones the spec report prints as `ℹ pass 12`: counting results here lost some
// when two files reported at once. Node 20 has no 'test:summary' event (later versions added it); its root sends the
// whole run's counts as diagnostics, the only ones without a file.
const counts = {};
// Any failure fails the run, also a hook's outside every test (an `after`, say), which the counts leave out.
let anyFailed = false;

// Every test file's process compiles with TurboFan on its main thread. Node 20 can deadlock as a process exits when a
// concurrent TurboFan job waits for a collection the main thread, waiting for that job, never starts (nodejs/node#54918;
// seen here, with gdb: a file whose tests had all passed hung until the runner's timeout). A mitigation: other
// background jobs of V8 can meet the same end, more rarely, and the runner's timeout still ends such a file. The
// runner passes its own process.execArgv to each file's process; Node 20's run() has no execArgv option.
process.execArgv.push('--no-concurrent-recompilation');
const stream = run({ files, concurrency: 2, timeout: 10 * 60_000 });
stream.on('test:diagnostic', (e) => {
  const total = e.file === undefined && /^(\w+) (\d+)$/.exec(e.message);
  if (total) counts[total[1]] = Number(total[2]);
});
stream.on('test:fail', (e) => {
  if (!e.todo) anyFailed = true;
});

stream.compose(spec).pipe(process.stdout);
stream.on('end', () => {
  const passed = counts.pass ?? 0;
  const failed = (counts.fail ?? 0) + (counts.cancelled ?? 0);
  const skipped = (counts.skipped ?? 0) + (counts.todo ?? 0);
  const total = `${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : '');
  // Let the reporter drain before the closing line.
  setImmediate(() => {
    console.log(total);
    process.exitCode = failed > 0 || anyFailed || passed === 0 ? 1 : 0;
  });
});

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
let passed = 0;
let failed = 0;
let skipped = 0;
// A result is a leaf (a test, not a suite or a file) when no result one level deeper arrived since its siblings.
const childSeen = [];
const childFailed = [];

const stream = run({ files, concurrency: 2, timeout: 10 * 60_000 });
stream.on('test:pass', (e) => count(e, false));
stream.on('test:fail', (e) => count(e, true));
function count(event, didFail) {
  const n = event.nesting;
  const leaf = !childSeen[n + 1];
  const aChildFailed = childFailed[n + 1];
  childSeen[n + 1] = childFailed[n + 1] = false;
  childSeen[n] = true;
  if (didFail) childFailed[n] = true;
  if (!leaf) {
    // A suite or file that failed outside its tests (a hook, say) counts once, unless its failed tests already did.
    if (didFail && !aChildFailed && event.details?.error?.failureType !== 'subtestsFailed') failed++;
    return;
  }
  if (event.skip || event.todo) skipped++;
  else if (didFail) failed++;
  else passed++;
}

stream.compose(spec).pipe(process.stdout);
stream.on('end', () => {
  const total = `${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : '');
  // Let the reporter drain before the closing line.
  setImmediate(() => {
    console.log(total);
    process.exitCode = failed > 0 || passed === 0 ? 1 : 0;
  });
});

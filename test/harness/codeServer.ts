import { join } from 'node:path';
import { repoRoot } from '../../demo/codeServer';

/**
 * A real VS Code for tests: code-server under Node 24, on a free loopback port, with temporary dirs, in its own process
 * group. The implementation is shared with the demo (`npm run demo` opens the same code-server), so it lives in
 * demo/codeServer.ts; tests import it from here.
 */
export * from '../../demo/codeServer';

/** Where tests leave screenshots, logs and result files (git-ignored). */
export const testOutput = join(repoRoot, 'test-output');

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { ROOT } from './paths';

/**
 * What a user downloads: the packages `npm run package` makes from the current build (scripts/package.mjs), packed.
 * LockLens's own package is what an etcd-only user downloads; each store package is what using that store adds.
 */
export function download(): Record<string, number> {
  const out = mkdtempSync(join(tmpdir(), 'locklens-bench-package-'));
  try {
    const files = execFileSync(process.execPath, [join(ROOT, 'scripts/package.mjs'), '--out', out], { encoding: 'utf8' }).trim().split('\n');
    const figures: Record<string, number> = {};
    for (const file of files) {
      // locklens-0.2.0.vsix → locklens_vsix_bytes; locklens-redis-0.2.0.vsix → redis_vsix_bytes
      const store = /^locklens-([a-z]+)-\d/.exec(basename(file))?.[1];
      figures[`${store ?? 'locklens'}_vsix_bytes`] = statSync(file).size;
    }
    return figures;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * package.json's version, written into dist/locklens.js by esbuild.mjs (`define`), so that the bundle knows it wherever
 * it is copied or installed. The copy tsc compiles for the tests (out/src/cli/) has no build step to write it and reads
 * the manifest at the repository's root instead. Importing package.json (resolveJsonModule) would serve both, but tsc
 * then emits out/package.json, which passes for the repository's root (demo/codeServer.ts finds the root by it).
 */
declare const LOCKLENS_VERSION: string | undefined;

export function version(): string {
  return typeof LOCKLENS_VERSION === 'string' ? LOCKLENS_VERSION : (JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as { version: string }).version;
}

/** What `locklens --version` prints. */
export function versionLine(): string {
  return `locklens ${version()}`;
}

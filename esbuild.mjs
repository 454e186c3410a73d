// Bundles the extension host (CommonJS, `vscode` left external), the `locklens` CLI, and the webview (browser IIFE).
// `node esbuild.mjs` builds for development (source maps, not minified); `--production` minifies;
// `--watch` rebuilds on change.
import * as esbuild from 'esbuild';
import { existsSync } from 'node:fs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const common = {
  bundle: true,
  minify: production,
  sourcemap: production ? 'linked' : 'inline',
  sourcesContent: !production,
  logLevel: 'info',
  legalComments: 'linked',
};

/** @type {esbuild.BuildOptions[]} */
const builds = [
  {
    ...common,
    entryPoints: { extension: 'src/extension/extension.ts' },
    outdir: 'dist',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['vscode'],
  },
  {
    ...common,
    entryPoints: { locklens: 'src/cli/main.ts' },
    outdir: 'dist',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    banner: { js: '#!/usr/bin/env node' },
  },
];

// The timeline webview (its own issue) lives in webview/; it is bundled for the browser once its entry exists.
if (existsSync('webview/timeline/main.ts')) {
  builds.push({
    ...common,
    entryPoints: { timeline: 'webview/timeline/main.ts' },
    outdir: 'dist/webview',
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
  });
}

if (watch) {
  const contexts = await Promise.all(builds.map((b) => esbuild.context(b)));
  await Promise.all(contexts.map((c) => c.watch()));
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}

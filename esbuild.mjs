// Bundles the extension host (CommonJS, `vscode` left external), the `locklens` CLI, the demo, and the webview
// (browser IIFE).
// `node esbuild.mjs` builds for development (source maps, not minified); `--production` minifies;
// `--watch` rebuilds on change.
import * as esbuild from 'esbuild';
import { cpSync, existsSync, readFileSync } from 'node:fs';

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

/**
 * etcd3 reads its .proto files at run time from `${__dirname}/../proto`. In a bundle __dirname is dist/, so point it
 * at dist/proto and copy the three files there.
 */
const etcd3Protos = {
  name: 'etcd3-protos',
  setup(build) {
    build.onLoad({ filter: /etcd3[\\/]lib[\\/]connection-pool\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const patched = source.replace('`${__dirname}/../proto/rpc.proto`', '`${__dirname}/proto/rpc.proto`');
      if (patched === source) throw new Error('etcd3-protos: proto path not found in etcd3; update the plugin for this etcd3 version');
      return { contents: patched, loader: 'js' };
    });
    build.onEnd(() => cpSync('node_modules/etcd3/proto', 'dist/proto', { recursive: true }));
  },
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
    plugins: [etcd3Protos],
  },
  {
    ...common,
    entryPoints: { locklens: 'src/cli/main.ts' },
    outdir: 'dist',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    banner: { js: '#!/usr/bin/env node' },
    plugins: [etcd3Protos],
  },
  {
    // `npm run demo` (demo/): the core engine in one file like the CLI, with etcd3's protos beside it in dist/proto.
    // Kept out of the .vsix by .vscodeignore.
    ...common,
    entryPoints: { demo: 'demo/main.ts' },
    outdir: 'dist',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    plugins: [etcd3Protos],
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

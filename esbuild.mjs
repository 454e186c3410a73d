// Bundles the extension host (CommonJS, `vscode` left external), the `locklens` CLI, the demo, each store's backend
// with its client library (dist/stores/<store>.js), and the webview (browser IIFE).
// `node esbuild.mjs` builds for development (source maps, not minified); `--production` minifies;
// `--watch` rebuilds on change.
//
// Stores are separate bundles so that nothing loads a store's client (etcd3 + gRPC + protobufjs, ioredis, …) until a
// connection of that kind is first opened: activation stays flat however many stores exist, and each store's code is
// downloaded once (not once per host bundle), and only by those who use that store: the extension's package carries
// etcd's, and every other store's bundle is packaged as its own extension (src/core/<store>/package/, scripts/package.mjs).
// A store bundle does not carry its own copy of the store-neutral core (src/ outside src/core/<store>/): it uses the
// loading bundle's modules, handed over by `openBackend`'s loader, so `instanceof LockLensError` and module state work
// across the two files and the core is not duplicated.
import * as esbuild from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const ROOT = dirname(new URL(import.meta.url).pathname);
const SRC = join(ROOT, 'src') + sep;

const common = {
  bundle: true,
  minify: production,
  sourcemap: production ? 'linked' : 'inline',
  sourcesContent: !production,
  logLevel: 'info',
  legalComments: 'linked',
};

/**
 * Every store: a folder of src/core with a descriptor.ts (see src/core/stores.ts). Its backend module,
 * `<store>Backend.ts`, is what the descriptor's `open` requires and the bundle it becomes; its `bundle.mjs`, where
 * there is one, names the client libraries that must stay out of host bundles and the esbuild plugins its bundle needs.
 */
const STORES = await Promise.all(
  readdirSync(join(ROOT, 'src/core'), { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(ROOT, 'src/core', e.name, 'descriptor.ts')))
    .map(async ({ name: store }) => {
      const dir = `src/core/${store}/`;
      const own = existsSync(join(ROOT, dir, 'bundle.mjs')) ? await import(join(ROOT, dir, 'bundle.mjs')) : {};
      return { store, dir, entry: `${dir}${store}Backend.ts`, clients: own.clients ?? [], plugins: own.plugins ?? [] };
    }),
);
/** Client libraries that belong in a store bundle, never in a host bundle (checked after each host build). */
const STORE_CLIENTS = new RegExp(`node_modules[\\\\/](${STORES.flatMap((s) => s.clients).join('|')})[\\\\/]`);

const key = (path) => relative(ROOT, path).split(sep).join('/');

/**
 * In a store bundle: every import of a file under src/ outside the store's own directory is the loading bundle's
 * module, read from the table the loader passes to `load` (see `hostStores`). The entry exports `load(core)`, which
 * returns the store's backend module.
 */
function storeBundle({ store, entry, dir }) {
  const ownDir = join(ROOT, dir);
  const shared = new Set();
  return {
    shared,
    plugin: {
      name: `store-${store}`,
      setup(build) {
        build.onStart(() => shared.clear());
        build.onResolve({ filter: /^locklens:store-entry$/ }, () => ({ path: 'entry', namespace: 'locklens-store' }));
        build.onResolve({ filter: /^locklens:core-table$/ }, () => ({ path: 'table', namespace: 'locklens-store' }));
        build.onResolve({ filter: /^\./ }, async (args) => {
          if (args.namespace !== 'file' || args.pluginData?.inner) return undefined;
          const resolved = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: { inner: true } });
          if (resolved.errors.length || !resolved.path.startsWith(SRC) || resolved.path.startsWith(ownDir)) return resolved;
          shared.add(key(resolved.path));
          return { path: key(resolved.path), namespace: 'locklens-core' };
        });
        build.onLoad({ filter: /.*/, namespace: 'locklens-core' }, (args) => ({
          contents: `module.exports = require('locklens:core-table').core[${JSON.stringify(args.path)}];`,
          loader: 'js',
          resolveDir: ROOT,
        }));
        build.onLoad({ filter: /^table$/, namespace: 'locklens-store' }, () => ({ contents: 'module.exports = { core: undefined };', loader: 'js' }));
        build.onLoad({ filter: /^entry$/, namespace: 'locklens-store' }, () => ({
          contents: `exports.load = (core) => { require('locklens:core-table').core = core; return require(${JSON.stringify(join(ROOT, entry))}); };`,
          loader: 'js',
          resolveDir: ROOT,
        }));
      },
    },
  };
}

/**
 * In a host bundle (extension, CLI, demo): `require('./<store>Backend')` in a store's descriptor.ts becomes a
 * runtime load of the store's bundle (dist/stores/<store>.js beside it, else the store package's copy: see
 * src/core/storeBundles.ts), handed this bundle's copies of the core modules the store bundles use.
 * Host code that imports a store's modules directly (pure helpers) gets them without their side effects, and the build
 * fails if a store's client library still ends up in the host bundle.
 */
function hostStores(sharedCore, { storeClientsAllowed = false } = {}) {
  return {
    name: 'host-stores',
    setup(build) {
      for (const { store, dir } of STORES) {
        const descriptor = join(ROOT, dir, 'descriptor.ts');
        build.onResolve({ filter: new RegExp(`^\\./${store}Backend$`) }, (args) =>
          args.importer === descriptor ? { path: store, namespace: 'locklens-store-loader' } : undefined,
        );
      }
      // A load that throws (NOT_INSTALLED: the store's package is missing) is tried again on the next connection:
      // esbuild's lazy CommonJS wrapper forgets a module whose body threw, so installing the package later works.
      build.onLoad({ filter: /.*/, namespace: 'locklens-store-loader' }, (args) => ({
        contents: `module.exports = require(${JSON.stringify(join(ROOT, 'src/core/storeBundles.ts'))}).loadStoreBundle(${JSON.stringify(args.path)}, __dirname, require('locklens:core'));`,
        loader: 'js',
        resolveDir: ROOT,
      }));
      build.onResolve({ filter: /^locklens:core$/ }, () => ({ path: 'core', namespace: 'locklens-core-host' }));
      build.onLoad({ filter: /.*/, namespace: 'locklens-core-host' }, () => ({
        // Getters: a module is initialised when the store first uses it, as it would be inside one bundle.
        contents: `module.exports = {\n${[...sharedCore()].sort().map((k) => `  get ${JSON.stringify(k)}() { return require(${JSON.stringify(join(ROOT, k))}); },`).join('\n')}\n};`,
        loader: 'js',
        resolveDir: ROOT,
      }));
      // A store's own modules imported by host code: drop them unless something is used (no side effects).
      build.onResolve({ filter: /^\./ }, async (args) => {
        if (args.pluginData?.inner || args.namespace !== 'file') return undefined;
        const resolved = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: { inner: true } });
        if (resolved.errors.length) return resolved;
        return STORES.some((s) => resolved.path.startsWith(join(ROOT, s.dir))) ? { ...resolved, sideEffects: false } : resolved;
      });
      build.onEnd((result) => {
        if (!result.metafile || storeClientsAllowed) return;
        const leaked = Object.keys(result.metafile.inputs).filter((p) => STORE_CLIENTS.test(p));
        if (leaked.length) {
          result.errors.push({ text: `a store's client library is in the host bundle ${Object.keys(result.metafile.outputs)[0]}: ${leaked.slice(0, 3).join(', ')}…; a host module imports a store module that needs it` });
        }
      });
    },
  };
}

const stores = STORES.filter((s) => existsSync(join(ROOT, s.entry))).map((s) => ({ ...s, ...storeBundle(s) }));
const sharedCore = () => new Set(stores.flatMap((s) => [...s.shared]));

/** @type {esbuild.BuildOptions[]} */
const storeBuilds = stores.map((s) => ({
  ...common,
  entryPoints: { [s.store]: 'locklens:store-entry' },
  outdir: 'dist/stores',
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  plugins: [s.plugin, ...s.plugins],
}));

const host = { ...common, platform: 'node', target: 'node20', format: 'cjs', outdir: 'dist', metafile: true, plugins: [hostStores(sharedCore)] };

/** @type {esbuild.BuildOptions[]} */
const hostBuilds = [
  { ...host, entryPoints: { extension: 'src/extension/extension.ts' }, external: ['vscode'] },
  // `locklens --version` (src/cli/version.ts): the manifest's version, so the bundle needs no package.json beside it.
  { ...host, entryPoints: { locklens: 'src/cli/main.ts' }, banner: { js: '#!/usr/bin/env node' }, define: { LOCKLENS_VERSION: JSON.stringify(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version) } },
  // `npm run demo` (demo/): its own engine imports etcd directly, so etcd3 is in it as well (with its protos in
  // dist/proto). Kept out of the .vsix by .vscodeignore.
  { ...host, entryPoints: { demo: 'demo/main.ts' }, plugins: [...STORES.find((s) => s.store === 'etcd').plugins, hostStores(sharedCore, { storeClientsAllowed: true })] },
];

/** @type {esbuild.BuildOptions[]} */
const otherBuilds = [];
// The timeline webview (its own issue) lives in webview/; it is bundled for the browser once its entry exists.
if (existsSync('webview/timeline/main.ts')) {
  otherBuilds.push({
    ...common,
    entryPoints: { timeline: 'webview/timeline/main.ts' },
    outdir: 'dist/webview',
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
  });
}

// The recorded history's SQLite (node-sqlite3-wasm, bundled into the extension and the CLI) loads its WebAssembly from
// beside the bundle that requires it: dist/.
mkdirSync('dist', { recursive: true });
copyFileSync(join(ROOT, 'node_modules/node-sqlite3-wasm/dist/node-sqlite3-wasm.wasm'), join(ROOT, 'dist/node-sqlite3-wasm.wasm'));

if (watch) {
  // The store bundles first: the host bundles hand over the core modules those import.
  const storeContexts = await Promise.all(storeBuilds.map((b) => esbuild.context(b)));
  await Promise.all(storeContexts.map((c) => c.rebuild()));
  const contexts = [...storeContexts, ...(await Promise.all([...hostBuilds, ...otherBuilds].map((b) => esbuild.context(b))))];
  await Promise.all(contexts.map((c) => c.watch()));
} else {
  const build = async (options) => {
    const result = await esbuild.build({ ...options, metafile: true });
    // A bundle with no legal comments any more (the host bundles, since the store clients moved out) leaves no
    // .LEGAL.txt: remove the one an earlier build left, so the package does not ship a stale one.
    for (const name of Object.keys(options.entryPoints)) {
      const legal = join(options.outdir, `${name}.js.LEGAL.txt`);
      if (!Object.keys(result.metafile.outputs).some((o) => resolve(o) === resolve(legal))) rmSync(legal, { force: true });
    }
  };
  await Promise.all(storeBuilds.map(build));
  await Promise.all([...hostBuilds, ...otherBuilds].map(build));
}

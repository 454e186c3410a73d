// `npm run package`, after the build: packages LockLens as .vsix files with vsce. The extension's package carries
// etcd's store (see .vscodeignore); each other store is its own small extension, `locklens-<store>`, made from
// src/core/<store>/package/ (its manifest and README) plus the store's bundle, the licence and the icon, staged in a temporary
// directory so that nothing built is copied into the source tree. A store package's version must be the extension's:
// its bundle runs on the extension's core modules.
//
// usage: node scripts/package.mjs [--out DIR]   (default: the repository root); prints each .vsix path.
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outAt = process.argv.indexOf('--out');
const out = resolve(outAt > 0 ? process.argv[outAt + 1] : root);
const vsce = join(root, 'node_modules/@vscode/vsce/vsce');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

function pack(dir, name) {
  const file = join(out, `${name}-${manifest.version}.vsix`);
  try {
    execFileSync(process.execPath, [vsce, 'package', '--no-dependencies', '--out', file], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  } catch {
    fail(`vsce could not package ${name} (its message is above)`);
  }
  console.log(file);
}

/** A failure said plainly (vsce has printed its own reason), not with a stack trace. */
class PackageError extends Error {}
function fail(message) {
  throw new PackageError(message);
}

try {
  mkdirSync(out, { recursive: true });
  pack(root, manifest.name);

  const stores = readdirSync(join(root, 'src/core'), { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(root, 'src/core', e.name, 'package', 'package.json')))
    .map((e) => e.name)
    .sort();
  for (const store of stores) {
    const source = join(root, 'src/core', store, 'package');
    const storeManifest = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'));
    if (storeManifest.version !== manifest.version) {
      fail(`src/core/${store}/package/package.json has version ${storeManifest.version}, the extension ${manifest.version}: they must match`);
    }
    const bundle = join(root, 'dist/stores', `${store}.js`);
    if (!existsSync(bundle)) fail(`${bundle} is missing: run npm run build first`);
    const stage = mkdtempSync(join(tmpdir(), `locklens-package-${store}-`));
    try {
      cpSync(source, stage, { recursive: true });
      mkdirSync(join(stage, 'dist/stores'), { recursive: true });
      for (const file of [`${store}.js`, `${store}.js.LEGAL.txt`]) {
        if (existsSync(join(root, 'dist/stores', file))) copyFileSync(join(root, 'dist/stores', file), join(stage, 'dist/stores', file));
      }
      mkdirSync(join(stage, 'media'));
      copyFileSync(join(root, 'media/icon.png'), join(stage, 'media/icon.png'));
      copyFileSync(join(root, 'LICENSE'), join(stage, 'LICENSE'));
      pack(stage, storeManifest.name);
    } finally {
      rmSync(stage, { recursive: true, force: true });
    }
  }
} catch (e) {
  if (!(e instanceof PackageError)) throw e;
  console.error(`package: ${e.message}`);
  process.exitCode = 1;
}

import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Disposable } from '../../src/core/emitter';
import { isLockLensError } from '../../src/core/errors';
import { addStoreSource, findStoreBundle, loadStoreBundle } from '../../src/core/storeBundles';
import { repoRoot } from '../harness/codeServer';

describe('store bundles: beside the loading bundle, else from a store package', () => {
  const dirs: string[] = [];
  const sources: Disposable[] = [];
  afterEach(() => {
    sources.splice(0).forEach((s) => s.dispose());
    dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
  });
  /** A dist/ directory with the given store bundles, each exporting `load(core)` that returns what it was given and its origin. */
  const dist = (stores: string[], origin: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'locklens-stores-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'stores'));
    for (const s of stores) writeFileSync(join(dir, 'stores', `${s}.js`), `exports.load = (core) => ({ core, origin: ${JSON.stringify(origin)} });`);
    return dir;
  };

  test('a full build loads its own bundle, handing it the core modules', () => {
    const own = dist(['redis'], 'own');
    sources.push(addStoreSource({ locate: () => join(dist(['redis'], 'package'), 'stores', 'redis.js'), missing: () => 'install it' }));
    const core = { 'src/core/errors.ts': {} };
    assert.deepEqual(loadStoreBundle('redis', own, core), { core, origin: 'own' });
  });

  test('a package without the store finds it where a source says, and not a path that does not exist', () => {
    const own = dist(['etcd'], 'own');
    const pkg = dist(['redis'], 'package');
    sources.push(addStoreSource({ locate: () => join(own, 'nowhere', 'redis.js'), missing: () => 'first' }));
    sources.push(addStoreSource({ locate: (store) => (store === 'redis' ? join(pkg, 'stores', 'redis.js') : undefined), missing: () => 'second' }));
    assert.equal(findStoreBundle('redis', own), join(pkg, 'stores', 'redis.js'));
    assert.deepEqual(loadStoreBundle('redis', own, {}), { core: {}, origin: 'package' });
  });

  test('missing everywhere: NOT_INSTALLED with what the first source says to do; with no source, the path that is missing', () => {
    const own = dist(['etcd'], 'own');
    assert.throws(
      () => loadStoreBundle('redis', own, {}),
      (e) => isLockLensError(e, 'NOT_INSTALLED') && e.message.includes(join(own, 'stores', 'redis.js')),
    );
    sources.push(addStoreSource({ locate: () => undefined, missing: (store) => `install locklens-${store}` }));
    assert.throws(
      () => loadStoreBundle('redis', own, {}),
      (e) => isLockLensError(e, 'NOT_INSTALLED') && e.message === 'install locklens-redis',
    );
  });

  test('a disposed source is no longer asked', () => {
    const own = dist([], 'own');
    const pkg = dist(['redis'], 'package');
    const source = addStoreSource({ locate: () => join(pkg, 'stores', 'redis.js'), missing: () => '' });
    assert.ok(findStoreBundle('redis', own));
    source.dispose();
    source.dispose();
    assert.equal(findStoreBundle('redis', own), undefined);
  });

  test('every store package has the extension\'s version and depends on it, and is named after its store', () => {
    const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { name: string; publisher: string; version: string; extensionKind: string[]; engines: { vscode: string } };
    const packages = readdirSync(join(repoRoot, 'src/core')).filter((store) => existsSync(join(repoRoot, 'src/core', store, 'package', 'package.json')));
    assert.ok(packages.includes('redis'));
    for (const store of packages) {
      const pkg = JSON.parse(readFileSync(join(repoRoot, 'src/core', store, 'package', 'package.json'), 'utf8')) as Record<string, unknown>;
      assert.equal(pkg.name, `${manifest.name}-${store}`);
      assert.equal(pkg.publisher, manifest.publisher);
      assert.equal(pkg.version, manifest.version, `src/core/${store}/package: bump it with the extension`);
      assert.deepEqual(pkg.extensionDependencies, [`${manifest.publisher}.${manifest.name}`]);
      // Installed in the extension host LockLens runs in, or LockLens could not see it there.
      assert.deepEqual(pkg.extensionKind, manifest.extensionKind);
      assert.equal((pkg.engines as { vscode: string }).vscode, manifest.engines.vscode);
    }
  });
});

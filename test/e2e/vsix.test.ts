import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { cleanEnv, codeServerEntry, checkInstalled, node24, node24Dir, repoRoot, startCodeServer, type CodeServer } from '../harness/codeServer';
import { Redis } from 'ioredis';
import { eventually, startEtcd, type EtcdServer } from '../harness/etcd';
import { startRedis, type RedisServer } from '../harness/redis';
import { localizedManifest } from '../harness/manifest';
import { openViewContainer, openWorkbench, runCommand, screenshot, viewHelpers, type Workbench } from '../harness/workbench';

/**
 * The .vsix files a desktop user installs: packaged by scripts/package.mjs (what `npm run package` runs after its
 * build; here the script alone, since npm test has just built dist/ and other test files read it while this one runs)
 * from the built bundles: the extension with etcd's store, and LockLens for Redis with Redis's. Each holds only its
 * allowed files within a bounded size. The extension is installed into code-server with `--install-extension` (the
 * same install path as desktop VS Code) and seen working from there: listed as installed, its Locks view showing a lock
 * from a real etcd (which needs the extension bundle and etcd3's .proto files from the package, nothing else), and a
 * Redis connection saying that Redis support is not installed, with an action to install it. Then the Redis package
 * is installed beside it while the window runs, and that connection shows a lock from a real redis-server.
 */

/** What may be in the packages: each one's files, under `extension/`, plus vsce's two manifest files. */
const PACKAGE_FILES = [/^extension\.vsixmanifest$/, /^\[Content_Types\]\.xml$/, /^extension\/(package\.json|readme\.md|LICENSE\.txt)$/];
const ALLOWED = [
  ...PACKAGE_FILES,
  /^extension\/(package\.nls(\.[a-z-]+)?\.json|changelog\.md)$/,
  /^extension\/dist\/extension\.js(\.LEGAL\.txt)?$/,
  /^extension\/dist\/node-sqlite3-wasm\.wasm$/,
  /^extension\/dist\/stores\/etcd\.js(\.LEGAL\.txt)?$/,
  /^extension\/dist\/proto\/[a-z]+\.proto$/,
  /^extension\/dist\/webview\/[^/]+\.(js|css|LEGAL\.txt)$/,
  /^extension\/l10n\/bundle\.l10n(\.[a-z-]+)?\.json$/,
  /^extension\/media\/[\w/-]+\.(svg|png|md)$/,
];
/** What may be in a store's own package (LockLens for Redis, LockLens for ZooKeeper): its bundle, the icon, the rest. */
const storeAllowed = (store: string) => [...PACKAGE_FILES, new RegExp(`^extension/dist/stores/${store}\\.js(\\.LEGAL\\.txt)?$`), /^extension\/media\/icon\.png$/];
/**
 * The extension's package is about 850 KB: SQLite's WebAssembly (1.2 MB, 520 KB packed; the Lock History view reads
 * locklens serve's recorded history with it) and etcd's client are most of it. Room to grow, not to double.
 */
const MAX_VSIX_BYTES = 1100 * 1024;
const MAX_UNPACKED_BYTES = 3 * 1024 * 1024;
/**
 * The store packages: about 50 to 90 KB each (ioredis, node-zookeeper-client, pg), and 300 KB for MySQL's (mysql2 with
 * iconv-lite's character sets, which decode what non-UTF-8 columns hold).
 */
const STORE_PACKAGES = ['mysql', 'postgres', 'redis', 'zookeeper'] as const;
const MAX_STORE_VSIX_BYTES = 400 * 1024;

interface Manifest {
  publisher: string;
  name: string;
  version: string;
  displayName: string;
  main: string;
  icon?: string;
  contributes: {
    viewsContainers: { activitybar: { icon: string }[] };
    walkthroughs?: { steps: { media: { markdown?: string; image?: string } }[] }[];
  };
}

describe('the .vsix package (vsce) installed into code-server', { timeout: 6 * 60_000 }, () => {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Manifest;
  let tmp: string;
  let vsix: string;
  let entries: ZipEntry[];
  const storeVsix = (store: string) => join(tmp, `${manifest.name}-${store}-${manifest.version}.vsix`);
  const storeEntries = new Map<string, ZipEntry[]>();
  let etcd: EtcdServer | undefined;
  let redis: RedisServer | undefined;
  let server: CodeServer | undefined;
  let workbench: Workbench | undefined;

  before(async () => {
    checkInstalled();
    tmp = mkdtempSync(join(tmpdir(), 'locklens-vsix-'));
    const packaged = await run(process.execPath, [join(repoRoot, 'scripts/package.mjs'), '--out', tmp], repoRoot, 120_000);
    vsix = join(tmp, `${manifest.name}-${manifest.version}.vsix`);
    assert.deepEqual(packaged.trim().split('\n'), [vsix, ...STORE_PACKAGES.map(storeVsix)], 'the packages the script made');
    entries = readZip(readFileSync(vsix));
    for (const store of STORE_PACKAGES) storeEntries.set(store, readZip(readFileSync(storeVsix(store))));
  });

  after(async () => {
    await workbench?.close();
    await server?.stop();
    await etcd?.dispose();
    await redis?.dispose();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('it holds only the bundles, protos, webview, media, l10n, manifest, README, CHANGELOG and LICENSE', () => {
    const names = entries.map((e) => e.name);
    const unexpected = names.filter((n) => !ALLOWED.some((re) => re.test(n)));
    assert.deepEqual(unexpected, [], `files that must not be in the .vsix:\n${unexpected.join('\n')}`);
    for (const store of STORE_PACKAGES) assert.ok(!names.includes(`extension/dist/stores/${store}.js`), `${store} comes in its own package`);
    for (const forbidden of [/\.map$/, /\.ts$/, /dist\/(locklens|demo)\.js/, /node_modules\//, /^extension\/(src|test|demo|docs|scripts|out)\//]) {
      assert.ok(!names.some((n) => forbidden.test(n)), `nothing matching ${forbidden}`);
    }
    // Everything the manifest points at is there.
    const referenced = [
      manifest.main,
      manifest.icon,
      ...manifest.contributes.viewsContainers.activitybar.map((c) => c.icon),
      ...(manifest.contributes.walkthroughs ?? []).flatMap((w) => w.steps.map((s) => s.media.markdown ?? s.media.image)),
      'dist/stores/etcd.js',
      'dist/node-sqlite3-wasm.wasm',
      'dist/proto/rpc.proto',
      'dist/proto/kv.proto',
      'dist/proto/auth.proto',
      'package.nls.json',
      'package.nls.zh-cn.json',
      'l10n/bundle.l10n.zh-cn.json',
      'readme.md',
      'changelog.md',
      'LICENSE.txt',
    ].filter((f): f is string => !!f);
    const missing = referenced.map((f) => `extension/${f.replace(/^\.\//, '')}`).filter((f) => !names.includes(f));
    assert.deepEqual(missing, [], 'files the manifest needs');
  });

  for (const store of STORE_PACKAGES) {
    test(`LockLens for ${store} holds its manifest, README, licence, icon and the ${store} store bundle; same version, depends on LockLens`, () => {
      const packaged = storeEntries.get(store)!;
      const names = packaged.map((e) => e.name);
      const unexpected = names.filter((n) => !storeAllowed(store).some((re) => re.test(n)));
      assert.deepEqual(unexpected, [], `files that must not be in the ${store} .vsix:\n${unexpected.join('\n')}`);
      for (const needed of [`extension/dist/stores/${store}.js`, 'extension/package.json', 'extension/readme.md', 'extension/LICENSE.txt', 'extension/media/icon.png']) {
        assert.ok(names.includes(needed), needed);
      }
      const storeManifest = JSON.parse(packaged.find((e) => e.name === 'extension/package.json')!.text()) as Manifest & { extensionDependencies: string[]; main?: string };
      assert.equal(storeManifest.name, `${manifest.name}-${store}`);
      assert.equal(storeManifest.version, manifest.version);
      assert.deepEqual(storeManifest.extensionDependencies, [`${manifest.publisher}.${manifest.name}`]);
      assert.equal(storeManifest.main, undefined, 'no code of its own: LockLens loads its bundle');
    });
  }

  test(`their sizes are bounded (${MAX_VSIX_BYTES / 1024} KB packed, ${MAX_UNPACKED_BYTES / 1024} KB unpacked; each store ${MAX_STORE_VSIX_BYTES / 1024} KB)`, () => {
    const packed = statSync(vsix).size;
    const unpacked = entries.reduce((n, e) => n + e.size, 0);
    assert.ok(packed <= MAX_VSIX_BYTES, `${packed} bytes packed`);
    assert.ok(unpacked <= MAX_UNPACKED_BYTES, `${unpacked} bytes unpacked`);
    for (const store of STORE_PACKAGES) assert.ok(statSync(storeVsix(store)).size <= MAX_STORE_VSIX_BYTES, `${statSync(storeVsix(store)).size} bytes packed (${store})`);
  });

  test('the packaged README links images by absolute https URLs (vsce rewrites relative ones from `repository`)', () => {
    const readme = entries.find((e) => e.name === 'extension/readme.md')!.text();
    const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)\s]+)/g)].map((m) => m[1]);
    const bad = images.filter((src) => !src.startsWith('https://'));
    assert.deepEqual(bad, [], 'images a marketplace page could not show');
  });

  test('code-server --install-extension installs it; the extension is listed and its Locks view works from it', async () => {
    const userData = join(tmp, 'user-data');
    const extensions = join(tmp, 'extensions');
    mkdirSync(userData, { recursive: true });
    mkdirSync(extensions, { recursive: true });
    await installExtension(vsix, extensions, userData);
    // Installed from the package: exactly its files, unpacked.
    const installed = join(extensions, `${manifest.publisher}.${manifest.name}-${manifest.version}`);
    const files = listFiles(installed).sort();
    const packaged = entries.filter((e) => e.name.startsWith('extension/')).map((e) => e.name.slice('extension/'.length)).sort();
    assert.deepEqual(files.filter((f) => f !== '.vsixmanifest'), packaged);

    etcd = await startEtcd();
    await etcd.etcdctl(['put', '/locks/from-the-vsix', 'held']);
    redis = await startRedis();
    const client = new Redis(redis.url);
    await client.set('lock:redis-from-the-vsix', 'a-token', 'PX', 600_000);
    client.disconnect();
    server = await startCodeServer({
      userDataDir: userData,
      extensionsDir: extensions,
      extraSettings: {
        'locklens.connections': [
          { name: 'vsix', endpoints: [etcd.endpoint], prefixes: ['/locks/'] },
          { name: 'vsix-redis', store: 'redis', endpoints: [redis.url], prefixes: ['lock:'] },
        ],
      },
    });
    const folder = join(tmp, 'workspace');
    mkdirSync(folder, { recursive: true });
    workbench = await openWorkbench(server, { folder });
    const { page } = workbench;

    const displayName = (localizedManifest(repoRoot) as Manifest).displayName;
    await runCommand(page, 'Extensions: Show Installed Extensions');
    await page.locator(`.extensions-viewlet .monaco-list-row[aria-label*="${displayName}"]`).first().waitFor({ state: 'visible', timeout: 30_000 });

    // The Locks view shows the lock: the bundle ran, connected over gRPC with the packaged protos, and read etcd.
    await openViewContainer(page, 'LockLens');
    const row = page.locator('.part.sidebar .monaco-list-row').filter({ has: page.locator('.label-name', { hasText: /^from-the-vsix$/ }) }).first();
    await row.waitFor({ state: 'visible', timeout: 60_000 }).catch(async (e) => {
      await screenshot(page, 'vsix-failed');
      throw e;
    });
    await eventually(async () => /held [^·]+ \(single key\)/.test((await row.locator('.label-description').first().textContent()) ?? ''), 20_000, 'the lock row describes its holder');
    await screenshot(page, 'vsix-installed');
  });

  test('a Redis connection says Redis support is not installed and offers to install it; installing LockLens for Redis beside it makes it connect', async () => {
    const { page } = workbench!;
    const { rowLabelled, description } = viewHelpers(() => page);
    const dialog = page.locator('.monaco-dialog-box');
    const connection = rowLabelled('vsix-redis');
    await eventually(async () => /Redis support is not installed: install the extension locklens\.locklens-redis/.test(await description(connection)), 30_000, 'the Redis connection says what is missing');
    await connection.hover();
    await connection.locator('.action-label[aria-label="Install Store Support"]').waitFor({ state: 'visible', timeout: 10_000 });
    await screenshot(page, 'vsix-redis-missing');
    // Adding a Redis connection offers the package before asking anything else; declining ends the flow.
    await runCommand(page, 'LockLens: Add Connection…');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Redis' }).first().click();
    await dialog.waitFor({ state: 'visible', timeout: 20_000 });
    assert.match((await dialog.textContent()) ?? '', /Redis support is not installed\. Install the extension locklens\.locklens-redis\?/);
    await dialog.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
    await dialog.waitFor({ state: 'hidden', timeout: 10_000 });
    // No endpoint step after declining: the quick input closes.
    await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 });
    // Its Install Store Support action asks, then tries the Marketplace; there is none here, so the install fails and
    // LockLens says so, offering the .vsix way instead.
    await connection.hover();
    await connection.locator('.action-label[aria-label="Install Store Support"]').click();
    await dialog.waitFor({ state: 'visible', timeout: 20_000 });
    assert.match((await dialog.textContent()) ?? '', /Install the extension locklens\.locklens-redis\?/);
    await dialog.locator('.monaco-button', { hasText: /^Install$/ }).first().click();
    const failed = page.locator('.notification-toast').filter({ hasText: /Could not install locklens\.locklens-redis/ }).first();
    await failed.waitFor({ state: 'visible', timeout: 90_000 });
    await failed.locator('.monaco-button', { hasText: 'Install from VSIX…' }).waitFor({ state: 'visible', timeout: 5000 });
    await screenshot(page, 'vsix-redis-install-failed');
    await runCommand(page, 'Notifications: Clear All Notifications');
    // Installed from outside the window, as `code --install-extension` or the Marketplace would: the window picks it up
    // without a reload, and the connection that was missing it connects.
    await installExtension(storeVsix('redis'), join(tmp, 'extensions'), join(tmp, 'user-data'));
    await eventually(async () => /^connected/.test(await description(connection)), 90_000, 'the Redis connection connects once LockLens for Redis is installed');
    await rowLabelled('redis-from-the-vsix').waitFor({ state: 'visible', timeout: 30_000 });
    await screenshot(page, 'vsix-redis-installed');
  });

  test('its Getting started walkthrough opens with its four steps and their pages', async () => {
    const { page } = workbench!;
    const walkthrough = (localizedManifest(repoRoot) as Manifest & { contributes: { walkthroughs: { title: string; steps: { title: string }[] }[] } }).contributes.walkthroughs[0];
    const input = page.locator('.quick-input-widget input');
    await runCommand(page, 'Welcome: Open Walkthrough');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: walkthrough.title }).first().waitFor({ state: 'visible', timeout: 20_000 });
    await input.fill(walkthrough.title);
    // Chosen by keyboard, once it is the focused row: its hover (the walkthrough's description, shown over the row when
    // the pointer rests there) once took every click for 30 s.
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: walkthrough.title }).first().waitFor({ state: 'visible', timeout: 20_000 });
    await input.press('Enter');
    const steps = page.locator('.getting-started-step');
    await page.locator('.gettingStartedSlide', { hasText: walkthrough.title }).first().waitFor({ state: 'visible', timeout: 30_000 });
    for (const step of walkthrough.steps) await steps.filter({ hasText: step.title }).first().waitFor({ state: 'visible', timeout: 10_000 });
    // A step's markdown page comes from the package's media/walkthrough/.
    await steps.filter({ hasText: walkthrough.steps[2].title }).first().click();
    const media = page.frameLocator('.getting-started-media iframe.webview').frameLocator('iframe#active-frame');
    await media.locator('h1', { hasText: 'Acquire a lock' }).waitFor({ state: 'visible', timeout: 30_000 });
    await screenshot(page, 'vsix-walkthrough');
  });
});

/** `code-server --install-extension`, the same install path as desktop VS Code's `code --install-extension`. */
function installExtension(file: string, extensionsDir: string, userDataDir: string): Promise<string> {
  return run(node24, [codeServerEntry, '--install-extension', file, '--extensions-dir', extensionsDir, '--user-data-dir', userDataDir], tmpdir(), 120_000, {
    PATH: `${join(node24Dir, 'bin')}:${process.env.PATH ?? ''}`,
    XDG_CONFIG_HOME: join(extensionsDir, '..', 'config'),
    XDG_DATA_HOME: join(extensionsDir, '..', 'data'),
  });
}

function run(command: string, args: readonly string[], cwd: string, timeout: number, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, timeout, env: cleanEnv(env), maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')}: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

function listFiles(dir: string, root = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? listFiles(join(dir, e.name), root) : [relative(root, join(dir, e.name))]));
}

interface ZipEntry {
  readonly name: string;
  /** Uncompressed size. */
  readonly size: number;
  text(): string;
}

/** The entries of a zip file (a .vsix), from its central directory; stored and deflated entries can be read. */
function readZip(zip: Buffer): ZipEntry[] {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(end >= 0, 'a zip file (end of central directory found)');
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    assert.equal(zip.readUInt32LE(at), 0x02014b50, 'a central directory entry');
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    entries.push({
      name,
      size,
      text() {
        const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
        const data = zip.subarray(start, start + compressed);
        return (method === 0 ? data : inflateRawSync(data)).toString('utf8');
      },
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isLockLensError } from '../../src/core/errors';
import { DEFAULT_STORE, STORE_KINDS, STORES, checkEndpoints, conventionLabel, storeOf, storeOfUrl } from '../../src/core/stores';

// The registry is the one list of stores: these keep it, the store folders and the manifest in agreement, so that a
// store is added by its folder and its registry entry, and a forgotten piece fails here rather than in a user's hands.

const root = join(__dirname, '..', '..', '..');
const core = join(root, 'src', 'core');

describe('the store registry', () => {
  test('every folder with a descriptor is registered under its own name, with a backend module beside it', () => {
    const folders = readdirSync(core, { withFileTypes: true })
      .filter((e) => e.isDirectory() && existsSync(join(core, e.name, 'descriptor.ts')))
      .map((e) => e.name)
      .sort();
    assert.deepEqual([...STORE_KINDS].sort(), folders);
    for (const kind of STORE_KINDS) {
      assert.equal(STORES[kind].kind, kind);
      assert.ok(existsSync(join(core, kind, `${kind}Backend.ts`)), `src/core/${kind}/${kind}Backend.ts: what its descriptor's open requires and esbuild bundles`);
    }
  });

  test("the settings schema's store enum is the registry's list (a manifest cannot read it)", () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    const store = manifest.contributes.configuration.properties['locklens.connections'].items.properties.store;
    assert.deepEqual(store.enum, STORE_KINDS);
    assert.equal(store.default, DEFAULT_STORE);
  });

  test('each scheme names one store, and a URL is given to the store whose scheme it has', () => {
    const schemes = STORE_KINDS.flatMap((kind) => STORES[kind].schemes);
    assert.equal(new Set(schemes).size, schemes.length, `a scheme claimed twice: ${schemes.join(', ')}`);
    for (const kind of STORE_KINDS) for (const scheme of STORES[kind].schemes) assert.equal(storeOfUrl(`${scheme}://h:1`), kind);
    assert.equal(storeOfUrl('127.0.0.1:2379'), undefined, 'a plain host:port is the default store');
    assert.throws(() => storeOfUrl('mongodb://h:27017'), (e) => isLockLensError(e, 'INVALID_ARGUMENT') && e.message.includes("unknown scheme 'mongodb://'"));
  });

  test("each store accepts its own example endpoint and refuses another store's", () => {
    for (const kind of STORE_KINDS) {
      const { form } = STORES[kind];
      assert.doesNotThrow(() => checkEndpoints(kind, [form.endpointsExample]), kind);
      assert.equal(STORES[kind].endpointsAskTls([form.endpointsExample]), false, `${kind}: the example asks for no TLS`);
      for (const other of STORE_KINDS.filter((k) => k !== kind && STORES[k].schemes.length && !STORES[k].schemes.includes('http'))) {
        assert.throws(() => checkEndpoints(kind, [STORES[other].form.endpointsExample]), (e) => isLockLensError(e, 'INVALID_ARGUMENT'), `${kind} refuses ${other}'s URL`);
      }
    }
  });

  test('a Redis endpoint is checked by the parser that connects: a bare host:port is accepted, a password never echoed', () => {
    assert.doesNotThrow(() => checkEndpoints('redis', ['127.0.0.1:6379']));
    assert.throws(
      () => checkEndpoints('redis', ['redis://u:hunter2@h:99999']),
      (e) => isLockLensError(e, 'INVALID_ARGUMENT') && !e.message.includes('hunter2') && e.message.includes('***'),
    );
    assert.throws(() => checkEndpoints('redis', []), /no Redis URL given/);
  });

  test('an unknown store in settings is a clear error, not another store', () => {
    assert.equal(storeOf(undefined).kind, DEFAULT_STORE);
    assert.throws(() => storeOf('mongodb'), (e) => isLockLensError(e, 'INVALID_ARGUMENT') && e.message === "unknown store 'mongodb'");
  });

  test('every descriptor has its words: the connection flow, the CLI help, and a label for each layout', () => {
    for (const kind of STORE_KINDS) {
      const { form, cli, conventions, displayName } = STORES[kind];
      for (const text of [form.libraries(), form.endpointsPrompt(), form.authLabel(), form.userPrompt(), form.watchPrompt(), form.firstPrefixPrompt(), cli.url, cli.acquire, cli.severalNames, cli.unlock]) {
        assert.ok(text.trim().length > 0, `${kind}: an empty text`);
      }
      assert.ok(cli.url.startsWith(`${displayName}:`), `${kind}: --url help names the store`);
      assert.ok(cli.severalNames.startsWith(`${displayName}:`), `${kind}: acquire's help on several NAMEs names the store`);
      for (const [convention, label] of Object.entries(conventions)) assert.equal(conventionLabel(convention), label);
    }
    assert.equal(conventionLabel('not-a-layout'), 'not-a-layout');
  });

  test('a store with a package of its own is named after its store', () => {
    for (const kind of STORE_KINDS) {
      const manifest = join(core, kind, 'package', 'package.json');
      if (!existsSync(manifest)) continue;
      assert.equal(JSON.parse(readFileSync(manifest, 'utf8')).name, `locklens-${kind}`);
      assert.ok(existsSync(join(core, kind, 'package', 'README.md')), `${kind}: its package's README`);
    }
  });
});

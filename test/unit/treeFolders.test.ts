import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { groupByFolder, type Grouped } from '../../src/extension/tree/folders';

/** What the Locks tree shows below a prefix: each entry a name on its own, or a folder with the names in it. */
function shown(names: (string | Buffer)[], path: string, sep = '/'): (string | { [folder: string]: string[] })[] {
  const items = names.map((n) => (typeof n === 'string' ? Buffer.from(n) : n));
  return groupByFolder(items, (b) => b, path, sep).map((g: Grouped<Buffer>) =>
    'folder' in g ? { [g.folder.path]: g.folder.items.map((b) => b.toString('latin1')) } : g.item.toString('latin1'),
  );
}

describe('folders of lock names in the Locks tree', () => {
  test('names with a directory below the prefix share its folder; names without stay on their own, in order', () => {
    assert.deepEqual(shown(['/locks/jobs', '/locks/a/x', '/locks/b/y', '/locks/a/z'], '/locks/'), [
      '/locks/jobs',
      { '/locks/a/': ['/locks/a/x', '/locks/a/z'] },
      { '/locks/b/': ['/locks/b/y'] },
    ]);
  });

  test('a ZooKeeper prefix written without its last slash, and lock tables named <table>/<row>', () => {
    assert.deepEqual(shown(['/app/locks/catalog', '/app/locks/nightly'], '/app'), [{ '/app/locks/': ['/app/locks/catalog', '/app/locks/nightly'] }]);
    assert.deepEqual(shown(['42', '7:1', 'databasechangeloglock/1', 'shedlock/report'], ''), [
      '42',
      '7:1',
      { 'databasechangeloglock/': ['databasechangeloglock/1'] },
      { 'shedlock/': ['shedlock/report'] },
    ]);
  });

  test('a chain of folders with one folder inside is one row, as far as every name in it goes', () => {
    assert.deepEqual(shown(['/l/svc/eu/a', '/l/svc/eu/b'], '/l/'), [{ '/l/svc/eu/': ['/l/svc/eu/a', '/l/svc/eu/b'] }]);
    assert.deepEqual(shown(['/l/svc/eu/a', '/l/svc/us/b'], '/l/'), [{ '/l/svc/': ['/l/svc/eu/a', '/l/svc/us/b'] }]);
    // A name that is the folder's deeper directory itself stops the compaction: it stays visible by its name.
    assert.deepEqual(shown(['/l/svc/eu/a', '/l/svc/x'], '/l/'), [{ '/l/svc/': ['/l/svc/eu/a', '/l/svc/x'] }]);
  });

  test('Redis keys by colons; a name ending with the separator, one outside the prefix, or a non-text directory has no folder', () => {
    assert.deepEqual(shown(['app:orders:1', 'app:orders:2', 'app:billing'], 'app:', ':'), [{ 'app:orders:': ['app:orders:1', 'app:orders:2'] }, 'app:billing']);
    assert.deepEqual(shown(['/locks/jobs/', '/other/x/y', '/locks/jobs'], '/locks/'), ['/locks/jobs/', '/other/x/y', '/locks/jobs']);
    const binary = Buffer.concat([Buffer.from('/locks/'), Buffer.from([0xff, 0xfe]), Buffer.from('/x')]);
    assert.deepEqual(shown([binary], '/locks/'), [binary.toString('latin1')]);
  });

  test('markup in a folder name is only text to the tree', () => {
    assert.deepEqual(shown(['/locks/<img src=x>/a'], '/locks/'), [{ '/locks/<img src=x>/': ['/locks/<img src=x>/a'] }]);
  });
});

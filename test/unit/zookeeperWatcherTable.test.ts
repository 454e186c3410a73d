import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as zookeeper from 'node-zookeeper-client';
import { WatcherTable } from '../../src/core/zookeeper/watcherTable';
import { mulberry32 } from '../harness/random';

type Watcher = (event: zookeeper.Event) => void;

/** The library's own table, which WatcherTable stands in for. */
interface LibraryTable {
  registerDataWatcher(path: string, w: Watcher): void;
  registerChildWatcher(path: string, w: Watcher): void;
  registerExistenceWatcher(path: string, w: Watcher): void;
  getDataWatcherPaths(): string[];
  getChildWatcherPaths(): string[];
  getExistenceWatcherPaths(): string[];
  isEmpty(): boolean;
  emit(notification: { type: number; path: string }): void;
}
const LibraryWatcherManager = require('node-zookeeper-client/lib/WatcherManager.js') as new () => LibraryTable;

const TYPES = [zookeeper.Event.NODE_CREATED, zookeeper.Event.NODE_DELETED, zookeeper.Event.NODE_DATA_CHANGED, zookeeper.Event.NODE_CHILDREN_CHANGED];

describe("ZooKeeper's watcher table", () => {
  test('does what the library does: a seeded random run of registrations and events, both tables, the same calls and paths', () => {
    const seed = Number(process.env.LOCKLENS_SEED ?? Date.now() % 100_000);
    const random = mulberry32(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
    const paths = ['/a', '/a/b', '/a/b/_c_1-lock-0000000001', '/x', '/locks/ü'];
    const tables = { library: new LibraryWatcherManager(), ours: new WatcherTable() };
    const heard = { library: [] as string[], ours: [] as string[] };
    // Three watchers per table, as callers hold them: the same function registered again is one registration.
    const watchersOf = (side: 'library' | 'ours'): Watcher[] => [0, 1, 2].map((i) => (e) => void heard[side].push(`${i} ${e.toString()} ${e.getType()} ${e.getPath()}`));
    const watchers = { library: watchersOf('library'), ours: watchersOf('ours') };
    for (let step = 0; step < 2000; step++) {
      const path = pick(paths);
      const r = random();
      for (const side of ['library', 'ours'] as const) {
        const table = tables[side];
        const w = watchers[side][Math.floor(r * 1000) % 3];
        if (r < 0.2) table.registerDataWatcher(path, w);
        else if (r < 0.4) table.registerChildWatcher(path, w);
        else if (r < 0.5) table.registerExistenceWatcher(path, w);
        else table.emit({ type: TYPES[Math.floor(r * 1000) % 4], path });
      }
      const state = (t: LibraryTable | WatcherTable) => JSON.stringify([t.getDataWatcherPaths().sort(), t.getChildWatcherPaths().sort(), t.getExistenceWatcherPaths().sort(), t.isEmpty()]);
      assert.equal(state(tables.ours), state(tables.library), `step ${step} (LOCKLENS_SEED=${seed})`);
      assert.deepEqual(heard.ours, heard.library, `step ${step} (LOCKLENS_SEED=${seed})`);
    }
    assert.ok(heard.ours.length > 100);
  });

  test('one-shot, once per watcher and path; a deletion fires the data and child watchers, a creation the existence ones', () => {
    const table = new WatcherTable();
    const heard: string[] = [];
    const tree = (e: zookeeper.Event) => heard.push(`tree ${e.getName()} ${e.getPath()}`);
    const acquire = (e: zookeeper.Event) => heard.push(`acquire ${e.getName()} ${e.getPath()}`);
    table.registerDataWatcher('/l/n1', tree);
    table.registerDataWatcher('/l/n1', tree);
    table.registerDataWatcher('/l/n1', acquire);
    table.registerChildWatcher('/l/n1', tree);
    table.registerExistenceWatcher('/l/n2', acquire);
    table.emit({ type: zookeeper.Event.NODE_DELETED, path: '/l/n1' });
    table.emit({ type: zookeeper.Event.NODE_DELETED, path: '/l/n1' });
    assert.deepEqual(heard, ['tree NODE_DELETED /l/n1', 'acquire NODE_DELETED /l/n1', 'tree NODE_DELETED /l/n1']);
    assert.deepEqual(table.getExistenceWatcherPaths(), ['/l/n2']);
    table.emit({ type: zookeeper.Event.NODE_CREATED, path: '/l/n2' });
    assert.equal(heard.at(-1), 'acquire NODE_CREATED /l/n2');
    assert.ok(table.isEmpty());
    assert.throws(() => table.emit({ type: 99, path: '/l' }), /Unknown event type: 99/);
  });
});

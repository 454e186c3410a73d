/**
 * node-zookeeper-client's table of watchers, kept smaller. The library gives every watched path an EventEmitter and a
 * `once` wrapper, about 450 bytes a path: 1.9 MB of serve's heap for a watch of 2,000 ZooKeeper locks
 * (docs/BENCHMARKS.md, serve, the ninth round), where the watch registers one function for every path. Here a path
 * keeps its watcher itself, or an array when several differ (an acquire's wait registers a new one at each turn).
 * The library's contract is kept: watches are one-shot, a watcher is registered once per path, the paths are listed
 * for SetWatches when a session reconnects, and an event fires the watchers its type fires in the library.
 */
import * as zookeeper from 'node-zookeeper-client';

/** Hears a watched node's next change (one-shot, as ZooKeeper's watches are). */
export type Watcher = (event: zookeeper.Event) => void;

type Registered = Watcher | Watcher[];

const { NODE_CREATED, NODE_DELETED, NODE_DATA_CHANGED, NODE_CHILDREN_CHANGED } = zookeeper.Event;
const EVENT_NAMES = new Map([
  [NODE_CREATED, 'NODE_CREATED'],
  [NODE_DELETED, 'NODE_DELETED'],
  [NODE_DATA_CHANGED, 'NODE_DATA_CHANGED'],
  [NODE_CHILDREN_CHANGED, 'NODE_CHILDREN_CHANGED'],
]);

/** What the library's connection manager calls on its `watcherManager`. */
export class WatcherTable {
  private readonly data = new Map<string, Registered>();
  private readonly child = new Map<string, Registered>();
  private readonly existence = new Map<string, Registered>();

  registerDataWatcher(path: string, watcher: Watcher): void {
    register(this.data, path, watcher);
  }

  registerChildWatcher(path: string, watcher: Watcher): void {
    register(this.child, path, watcher);
  }

  registerExistenceWatcher(path: string, watcher: Watcher): void {
    register(this.existence, path, watcher);
  }

  getDataWatcherPaths(): string[] {
    return [...this.data.keys()];
  }

  getChildWatcherPaths(): string[] {
    return [...this.child.keys()];
  }

  getExistenceWatcherPaths(): string[] {
    return [...this.existence.keys()];
  }

  isEmpty(): boolean {
    return this.data.size === 0 && this.child.size === 0 && this.existence.size === 0;
  }

  /** A notification from the server (the library's WatcherEvent: its type and path, the chroot taken off). */
  emit(notification: { type: number; path: string }): void {
    const { type, path } = notification;
    const name = EVENT_NAMES.get(type);
    if (name === undefined) throw new Error(`Unknown event type: ${type}`);
    const fired: Registered[] = [];
    const take = (table: Map<string, Registered>) => {
      const registered = table.get(path);
      if (registered === undefined) return;
      table.delete(path);
      fired.push(registered);
    };
    if (type === NODE_CHILDREN_CHANGED) take(this.child);
    else take(this.data);
    if (type === NODE_CREATED || type === NODE_DATA_CHANGED) take(this.existence);
    if (type === NODE_DELETED) take(this.child);
    if (fired.length === 0) return;
    const event = new zookeeper.Event(type, name, path);
    for (const registered of fired) {
      if (typeof registered === 'function') registered(event);
      else for (const watcher of registered) watcher(event);
    }
  }
}

function register(table: Map<string, Registered>, path: string, watcher: Watcher): void {
  const registered = table.get(path);
  if (registered === undefined) table.set(path, watcher);
  else if (typeof registered === 'function') {
    if (registered !== watcher) table.set(path, [registered, watcher]);
  } else if (!registered.includes(watcher)) registered.push(watcher);
}

/**
 * Lock names below a watched prefix, grouped by directory as a file explorer groups paths: `locks/ledger-migration`
 * under `/app` shows as `ledger-migration` in a folder `locks/`. A row at VS Code's default sidebar width has room for
 * about 30 characters at a lock's depth, and what matters in an incident (the state, its age) comes after the name:
 * a long hierarchical name would push it out of sight. Chains of folders with one folder inside are one row
 * (`svc/region/`), as the Explorer's compact folders are. No vscode import: the unit tests call it.
 */
import { isUtf8 } from '../../core/keys';

export interface Folder<T> {
  /** The folder's whole name, ending with the separator (`/app/locks/`). */
  readonly path: string;
  readonly items: T[];
}

/** An item shown on its own (`name`) or in a folder, in the order the items came. */
export type Grouped<T> = { readonly folder: Folder<T> } | { readonly item: T };

/**
 * Groups `items` named below `path` by their first directory there (`sep`: `/` for paths, `:` for Redis keys). An item
 * whose name is not below `path` (an etcd prefix inside one lock's queue) or has no directory stays on its own; so does
 * one whose directory is not text, which a folder's name must be.
 */
export function groupByFolder<T>(items: readonly T[], nameOf: (item: T) => Buffer, path: string, sep: string): Grouped<T>[] {
  const base = Buffer.from(path);
  const out: Grouped<T>[] = [];
  const folders = new Map<string, Folder<T>>();
  for (const item of items) {
    const dir = firstDirectory(nameOf(item), base, sep);
    if (dir === undefined) {
      out.push({ item });
      continue;
    }
    let folder = folders.get(dir);
    if (!folder) {
      folders.set(dir, (folder = { path: dir, items: [] }));
      out.push({ folder });
    }
    folder.items.push(item);
  }
  return out.map((g) => ('folder' in g ? { folder: compact(g.folder, nameOf, sep) } : g));
}

/** `base` and the name's first directory below it (`/app` and `/app/locks/x` give `/app/locks/`), if it has one. */
function firstDirectory(name: Buffer, base: Buffer, sep: string): string | undefined {
  if (name.length <= base.length || !name.subarray(0, base.length).equals(base)) return undefined;
  const s = sep.charCodeAt(0);
  // A prefix written without its last separator (a ZooKeeper path, /app): the rest starts with one.
  let start = base.length;
  while (start < name.length && name[start] === s) start++;
  const end = name.indexOf(s, start);
  // A directory has a name, and something after it (a name ending with the separator is not in a folder of its own).
  if (end <= start || end === name.length - 1) return undefined;
  const dir = name.subarray(0, end + 1);
  return isUtf8(dir) ? dir.toString('utf8') : undefined;
}

/** The folder widened to the deepest directory all its items share, while each of them stays below it. */
function compact<T>(folder: Folder<T>, nameOf: (item: T) => Buffer, sep: string): Folder<T> {
  let path = folder.path;
  for (;;) {
    const base = Buffer.from(path);
    const dirs = new Set(folder.items.map((item) => firstDirectory(nameOf(item), base, sep)));
    const [only] = dirs;
    if (dirs.size !== 1 || only === undefined) return { path, items: folder.items };
    path = only;
  }
}

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

// Keeps the arrows between the parts the way the README draws them, read from the source files: stores in their own
// folders under src/core/, the views (extension, CLI, timeline protocol and webview) on the store-neutral core only,
// the timeline protocol and the core apart (the protocol is bundled for the browser), no cycles, no long files, and no
// view asking which store it shows. `import type` counts as an import: a type-only cycle or reach still ties the
// modules together, and the next change makes it a value import without anyone noticing.

const root = join(__dirname, '..', '..', '..');

/** The files under `dir`, as paths from the root with '/', sorted. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(posix.join(dir, e.name)) : [posix.join(dir, e.name)]))
    .sort();
}

const sources = [...filesUnder('src'), ...filesUnder('webview')].filter((f) => /\.(ts|css)$/.test(f));
const tsSources = sources.filter((f) => f.endsWith('.ts'));
const textOf = new Map(sources.map((f) => [f, readFileSync(join(root, f), 'utf8')]));

/** Store kinds, and any folder of src/core that describes a store (a `descriptor.ts`) is one too. */
const described = sources.filter((f) => /^src\/core\/[^/]+\/descriptor\.ts$/.test(f)).map((f) => f.split('/')[2]);
const STORES = [...new Set(['etcd', 'redis', 'zookeeper', 'postgres', 'mysql', ...described])];
/** Folders whose code belongs to stores: each store's, and the SQL stores' shared one. */
const STORE_FOLDERS = new Set([...STORES, 'sql']);
const STORE_REGISTRY = 'src/core/stores.ts';

const storeFolderOf = (file: string): string | undefined => {
  const folder = /^src\/core\/([^/]+)\//.exec(file)?.[1];
  return folder && STORE_FOLDERS.has(folder) ? folder : undefined;
};
const isUnder = (file: string, dir: string) => file.startsWith(`${dir}/`);

/** `text` with its comments blanked (newlines kept, so line numbers hold); strings, templates and regexes kept. */
function withoutComments(text: string): string {
  const out = text.split('');
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  const templates: number[] = []; // the brace depth of each open `${`
  let depth = 0;
  let operand = false; // whether the last token ends an operand, so that a `/` divides instead of starting a regex
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '/' && (next === '/' || next === '*')) {
      const end = next === '/' ? text.indexOf('\n', i) : text.indexOf('*/', i + 2) + 2;
      const to = end < i ? text.length : end;
      blank(i, to);
      i = to;
    } else if (c === "'" || c === '"') {
      i = skip(text, i + 1, (k) => text[k] === c);
      operand = true;
    } else if (c === '`' || (c === '}' && templates.at(-1) === depth)) {
      if (c === '}') templates.pop();
      i = skip(text, i + 1, (k) => text[k] === '`' || (text[k] === '$' && text[k + 1] === '{'));
      if (text[i - 1] === '$') i++;
      if (text[i - 1] === '{') templates.push(depth);
      operand = text[i - 1] === '`';
    } else if (c === '/' && !operand) {
      let inClass = false;
      const end = skip(text, i + 1, (k) => {
        if (text[k] === '[') inClass = true;
        else if (text[k] === ']') inClass = false;
        return (text[k] === '/' && !inClass) || text[k] === '\n';
      });
      i = text[end - 1] === '/' ? end : i + 1;
      operand = true;
    } else {
      if (c === '{') depth++;
      else if (c === '}') depth--;
      if (!/\s/.test(c)) operand = /[\w$)\]]/.test(c) && !/\b(return|typeof|case|in|of|void|await|yield|else|do)$/.test(text.slice(Math.max(0, i - 6), i + 1));
      i++;
    }
  }
  return out.join('');
}

/** The index just past the first character from `i` on (escapes skipped) for which `isEnd` holds. */
function skip(text: string, i: number, isEnd: (k: number) => boolean): number {
  while (i < text.length && !isEnd(i)) i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

const codeOf = new Map(tsSources.map((f) => [f, withoutComments(textOf.get(f)!)]));

/** Static imports and re-exports (type-only too), side-effect imports, require() and import() of a literal. */
const IMPORTS = [
  /^[ \t]*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/gm,
  /^[ \t]*import\s*['"]([^'"]+)['"]/gm,
  /\b(?:require|import)\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
];

interface Import {
  readonly from: string;
  readonly specifier: string;
  /** The file a relative import names, from the root; undefined for a package (or when nothing matches). */
  readonly target?: string;
}

/** As TypeScript resolves it: `x.ts` before a folder `x/` (whose index.ts it would be), and only files. */
function resolve(from: string, specifier: string): string | undefined {
  const base = posix.join(posix.dirname(from), specifier);
  return [`${base}.ts`, `${base}.d.ts`, `${base}/index.ts`, base.replace(/\.js$/, '.ts'), base].find((f) => textOf.has(f) || isFile(join(root, f)));
}

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}

const imports: Import[] = tsSources.flatMap((from) => {
  const specifiers = new Set(IMPORTS.flatMap((re) => [...codeOf.get(from)!.matchAll(re)].map((m) => m[1])));
  return [...specifiers].map((specifier) => ({ from, specifier, target: specifier.startsWith('.') ? resolve(from, specifier) : undefined }));
});

const arrow = (i: Import) => `${i.from} → ${i.target ?? i.specifier}`;
/** Fails with the whole list when there is anything on it. */
const none = (what: string, items: readonly string[]) => assert.ok(items.length === 0, `${what} (${items.length}):\n  ${items.join('\n  ')}`);

/** Each set of files that import one another in a ring, as one shortest ring through its first file and its size. */
function cycles(files: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[] {
  // Tarjan's strongly connected components.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (edges.get(v) ?? []).includes(v)) components.push(component.sort());
    }
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return components.map((component) => {
    const start = component[0];
    const inside = new Set(component);
    // Breadth first from `start` back to it, within the component.
    const cameFrom = new Map<string, string>();
    const queue = [start];
    for (let k = 0; k < queue.length && !cameFrom.has(start); k++) {
      for (const w of edges.get(queue[k]) ?? []) {
        if (inside.has(w) && !cameFrom.has(w)) {
          cameFrom.set(w, queue[k]);
          queue.push(w);
        }
      }
    }
    const ring = [start];
    for (let v = cameFrom.get(start)!; v !== start; v = cameFrom.get(v)!) ring.unshift(v);
    return `${[start, ...ring].join(' → ')}${component.length > ring.length ? `  (${component.length} files in this knot: ${component.join(', ')})` : ''}`;
  });
}

describe('architecture: the arrows between src/ and webview/', () => {
  test('every relative import names a file (so that the checks below see every arrow)', () => {
    assert.ok(imports.length > 100, `only ${imports.length} imports found: the scan is broken`);
    const unresolved = imports.filter((i) => i.specifier.startsWith('.') && !i.target).map((i) => `${i.from}: '${i.specifier}'`);
    none('relative imports naming no file', unresolved);
  });

  test('no import cycles', () => {
    const edges = new Map<string, string[]>();
    for (const i of imports) if (i.target && textOf.has(i.target)) edges.set(i.from, [...(edges.get(i.from) ?? []), i.target]);
    const found = cycles(tsSources, edges);
    none('import cycles', found);
  });

  test('the timeline protocol and the core do not import each other; src/shared, which both use, imports only itself', () => {
    const across = (from: string, to: string, a: string, b: string) => (isUnder(from, a) && isUnder(to, b)) || (isUnder(from, b) && isUnder(to, a));
    const wrong = imports
      .filter(({ from, target }) => target && (across(from, target, 'src/protocol', 'src/core') || (isUnder(from, 'src/shared') && !isUnder(target, 'src/shared'))))
      .map(arrow);
    none('imports between the protocol and the core, or out of src/shared', wrong);
  });

  test('the core does not import vscode', () => {
    const wrong = imports.filter((i) => isUnder(i.from, 'src/core') && (i.specifier === 'vscode' || i.specifier.startsWith('vscode/'))).map(arrow);
    none('core files importing vscode', wrong);
  });

  test('the extension, the CLI, the protocol and the webview import no store folder (they see stores through the core)', () => {
    const views = ['src/extension', 'src/cli', 'src/protocol', 'webview'];
    const wrong = imports.filter((i) => i.target && storeFolderOf(i.target) && views.some((v) => isUnder(i.from, v))).map(arrow);
    none(`views importing a store folder (src/core/{${[...STORE_FOLDERS].join(',')}})`, wrong);
  });

  /** Longer files allowed, each a table read by looking a row up, not code read top to bottom: the reason. */
  const LONG_TABLES: ReadonlyMap<string, string> = new Map([]);
  const MAX_LINES = 450;
  test(`no source file over ${MAX_LINES} lines (but the tables allowed)`, () => {
    const lines = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    const long = sources.filter((f) => !LONG_TABLES.has(f) && lines(textOf.get(f)!) > MAX_LINES).map((f) => `${f}: ${lines(textOf.get(f)!)} lines`);
    none(`files over ${MAX_LINES} lines: split them by what they hold`, long);
  });

  test("outside a store's folder and the registry, no kind is compared with a literal, and no store with its name", () => {
    // A store check belongs to the store (let it say what it has: Capabilities, its descriptor). A lock's, a row's or an
    // outcome's kind is told by a class, an exhaustive switch or a table over every kind, so that a new kind has to say
    // where it stands: `git grep "kind === '"` finds only the stores and the registry. Code only: a comment may name
    // the pattern to warn against it.
    const check = new RegExp(`\\bkind\\s*[!=]==\\s*'|\\bstore\\s*[!=]==\\s*'(${STORES.join('|')})'`);
    const wrong = tsSources
      .filter((f) => !storeFolderOf(f) && f !== STORE_REGISTRY)
      .flatMap((f) => {
        const lines = textOf.get(f)!.split('\n');
        return codeOf.get(f)!.split('\n').flatMap((code, n) => (check.test(code) ? [`${f}:${n + 1}: ${lines[n].trim()}`] : []));
      });
    none('kind tests outside the stores', wrong);
  });
});

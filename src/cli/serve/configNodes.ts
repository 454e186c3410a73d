/**
 * Reading serve's config file (YAML, or JSON, which YAML reads too) field by field with each field's place in the
 * file, so that every mistake is reported as `FILE:LINE:COLUMN: path: what is wrong: what to write`, and nothing in
 * the file is taken unless it was expected: a field LockLens does not know is a typo until shown otherwise.
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import { LockLensError } from '../../core/errors';

/** Where a node is, for messages. */
export class ConfigSource {
  constructor(
    readonly file: string,
    private readonly lines: LineCounter,
  ) {}

  /** `file:line:column` of the node, or of the file's start without one. */
  where(node: Node | null | undefined): string {
    const offset = node?.range?.[0];
    if (offset === undefined) return `${this.file}:1:1`;
    const { line, col } = this.lines.linePos(offset);
    return `${this.file}:${line}:${col}`;
  }

  fail(node: Node | null | undefined, path: string, message: string): never {
    throw new LockLensError('INVALID_ARGUMENT', `${this.where(node)}: ${path ? `${path}: ` : ''}${message}`);
  }
}

/** The file's one document as a map of fields; a syntax error names its line and column. */
export function parseConfig(file: string, text: string): ConfigMap {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const source = new ConfigSource(file, lines);
  const [error] = doc.errors;
  if (error) {
    const { line, col } = lines.linePos(error.pos[0]);
    throw new LockLensError('INVALID_ARGUMENT', `${file}:${line}:${col}: not valid YAML or JSON: ${error.message}`);
  }
  const root = doc.contents as Node | null;
  if (!isMap(root)) return source.fail(root, '', 'the config is a map of fields (listen, connections, …): see `locklens serve --help`');
  return new ConfigMap(source, root, '', ROOT_FIELDS);
}

const ROOT_FIELDS = ['listen', 'data', 'maxLocks', 'history', 'metrics', 'lockNames', 'lockTables', 'connections'];

/** One map of the file: its fields are checked against those it may have when it is made. */
export class ConfigMap {
  private readonly fields = new Map<string, { key: Node; value: Node | null }>();

  constructor(
    readonly source: ConfigSource,
    readonly node: Node,
    readonly path: string,
    known: readonly string[],
    /** Fields refused with their own message (a password written in the file). */
    refused: Readonly<Record<string, string>> = {},
  ) {
    if (!isMap(node)) source.fail(node, path, `must be a map of fields (${known.join(', ')})`);
    for (const pair of node.items) {
      const key = pair.key as Node;
      const name = isScalar(key) ? String(key.value) : '';
      if (Object.hasOwn(refused, name)) source.fail(key, this.at(name), refused[name]);
      if (!known.includes(name)) source.fail(key, this.at(name), `unknown field: write one of ${known.join(', ')}`);
      this.fields.set(name, { key, value: pair.value as Node | null });
    }
  }

  /** The path of one of its fields, for messages. */
  at(name: string): string {
    return this.path ? `${this.path}.${name}` : name;
  }

  has(name: string): boolean {
    return this.fields.has(name);
  }

  /** The node of a field (its key's, if it has no value), for messages about it. */
  nodeOf(name: string): Node | null {
    const f = this.fields.get(name);
    return f ? (f.value ?? f.key) : this.node;
  }

  fail(name: string, message: string): never {
    return this.source.fail(this.nodeOf(name), this.at(name), message);
  }

  text(name: string, example: string): string | undefined {
    const node = this.fields.get(name)?.value;
    if (!this.has(name)) return undefined;
    if (!isScalar(node) || typeof node.value !== 'string') this.fail(name, `must be text, e.g. ${name}: ${example}`);
    return node.value;
  }

  requiredText(name: string, example: string): string {
    const value = this.text(name, example);
    if (value === undefined) this.fail(name, `missing: write ${name}: ${example}`);
    return value;
  }

  texts(name: string, example: string): string[] | undefined {
    if (!this.has(name)) return undefined;
    const node = this.fields.get(name)!.value;
    const items = isSeq(node) ? (node.items as Node[]) : undefined;
    if (!items || !items.every((i) => isScalar(i) && typeof i.value === 'string')) this.fail(name, `must be a list of texts, e.g. ${name}: ${example}`);
    return items.map((i) => String((i as { value: string }).value));
  }

  /** A whole number of at least `min` (a number, or text of one: JSON configs often quote them). */
  int(name: string, min: number, example: string): number | undefined {
    if (!this.has(name)) return undefined;
    const node = this.fields.get(name)!.value;
    const n = isScalar(node) ? Number(node.value) : NaN;
    if (!Number.isInteger(n) || n < min) this.fail(name, `must be a whole number ≥ ${min}, e.g. ${name}: ${example}`);
    return n;
  }

  bool(name: string): boolean | undefined {
    if (!this.has(name)) return undefined;
    const node = this.fields.get(name)!.value;
    if (!isScalar(node) || typeof node.value !== 'boolean') this.fail(name, `must be true or false`);
    return node.value;
  }

  map(name: string, known: readonly string[], refused: Readonly<Record<string, string>> = {}): ConfigMap | undefined {
    return this.has(name) ? new ConfigMap(this.source, this.nodeOf(name)!, this.at(name), known, refused) : undefined;
  }

  /** A list of maps, each with the fields `known`. */
  maps(name: string, known: readonly string[], refused: Readonly<Record<string, string>> = {}): ConfigMap[] {
    if (!this.has(name)) return [];
    const node = this.nodeOf(name);
    if (!isSeq(node)) this.fail(name, `must be a list (each item starting with '- ')`);
    return (node.items as Node[]).map((item, i) => new ConfigMap(this.source, item, `${this.at(name)}[${i}]`, known, refused));
  }
}

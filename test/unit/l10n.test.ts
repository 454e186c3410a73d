import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { getL10nJson, type l10nJsonFormat } from '@vscode/l10n-dev';

// Keeps the Simplified Chinese localisation complete: the English bundle matches the source, every string and every
// package.nls key has a translation, and translations keep their placeholders and command links.

const root = join(__dirname, '..', '..', '..');
const L10N = 'l10n/bundle.l10n.json';
const L10N_ZH = 'l10n/bundle.l10n.zh-cn.json';
const NLS = 'package.nls.json';
const NLS_ZH = 'package.nls.zh-cn.json';

const readJson = (path: string): unknown => JSON.parse(readFileSync(join(root, path), 'utf8'));

/** A bundle's messages as plain strings (an exported message with comments is `{ message, comment }`). */
function messages(bundle: l10nJsonFormat): Map<string, string> {
  return new Map(Object.entries(bundle).map(([k, v]) => [k, typeof v === 'string' ? v : v.message]));
}

function readMessages(path: string): Map<string, string> {
  return messages(readJson(path) as l10nJsonFormat);
}

/** The files `vscode-l10n-dev export ./src` reads. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sourceFiles(join(dir, e.name)) : /\.(ts|tsx|js|jsx)$/.test(e.name) ? [join(dir, e.name)] : []))
    .sort();
}

const list = (keys: readonly string[]) => keys.map((k) => `\n  ${JSON.stringify(k)}`).join('');

/** Complaints about `actual`'s keys compared to `expected`'s, naming every missing and extra key. */
function keyProblems(expected: Iterable<string>, actual: Iterable<string>, what: { missing: string; extra: string }): string[] {
  const want = new Set(expected);
  const have = new Set(actual);
  const missing = [...want].filter((k) => !have.has(k));
  const extra = [...have].filter((k) => !want.has(k));
  return [
    ...(missing.length ? [`${what.missing} (${missing.length}):${list(missing)}`] : []),
    ...(extra.length ? [`${what.extra} (${extra.length}):${list(extra)}`] : []),
  ];
}

const placeholders = (text: string) => [...new Set(text.match(/\{\d+\}/g) ?? [])].sort();
const commandLinks = (text: string) => [...text.matchAll(/\]\((command:[^)\s]*)\)/g)].map((m) => m[1]).sort();
const lineCount = (text: string) => text.split('\n').length;

test('l10n/bundle.l10n.json is what the l10n-dev export of src/ gives now', async () => {
  const files = sourceFiles(join(root, 'src')).map((f) => ({ extension: extname(f), contents: readFileSync(f, 'utf8') }));
  assert.ok(files.length > 0, 'no source files found under src/');
  const exported = messages(await getL10nJson(files));
  const committed = readMessages(L10N);
  const problems = keyProblems(exported.keys(), committed.keys(), {
    missing: `strings in src/ missing from ${L10N}`,
    extra: `strings in ${L10N} no longer in src/`,
  });
  const changed = [...exported].filter(([k, v]) => committed.has(k) && committed.get(k) !== v).map(([k]) => k);
  if (changed.length) problems.push(`messages that differ from the export (${changed.length}):${list(changed)}`);
  assert.ok(exported.size > 0, 'the export found no vscode.l10n.t strings in src/');
  assert.equal(problems.length, 0, `${L10N} is out of date: run \`npm run l10n:export\`, then translate in ${L10N_ZH}.\n${problems.join('\n')}`);
});

test('every string of the English bundle has a zh-cn translation, and zh-cn has no stale keys', () => {
  const english = readMessages(L10N);
  const chinese = readMessages(L10N_ZH);
  const problems = keyProblems(english.keys(), chinese.keys(), {
    missing: `untranslated strings: add them to ${L10N_ZH}`,
    extra: `stale keys in ${L10N_ZH} (not in ${L10N}): remove or re-key them`,
  });
  const empty = [...chinese].filter(([, v]) => typeof v !== 'string' || !v.trim()).map(([k]) => k);
  if (empty.length) problems.push(`empty translations in ${L10N_ZH} (${empty.length}):${list(empty)}`);
  assert.equal(problems.length, 0, problems.join('\n'));
});

test('every zh-cn translation keeps exactly the {N} placeholders of its English string', () => {
  const english = readMessages(L10N);
  const chinese = readMessages(L10N_ZH);
  const wrong = [...english]
    .filter(([k]) => chinese.has(k))
    .filter(([k, en]) => placeholders(en).join() !== placeholders(chinese.get(k)!).join())
    .map(([k, en]) => `\n  ${JSON.stringify(k)}: English has [${placeholders(en)}], zh-cn has [${placeholders(chinese.get(k)!)}]`);
  assert.equal(wrong.length, 0, `placeholders differ in ${L10N_ZH} (${wrong.length}):${wrong.join('')}`);
});

test('package.nls.zh-cn.json translates exactly the keys of package.nls.json, keeping links, placeholders and lines', () => {
  const english = readJson(NLS) as Record<string, string>;
  const chinese = readJson(NLS_ZH) as Record<string, unknown>;
  const problems = keyProblems(Object.keys(english), Object.keys(chinese), {
    missing: `keys of ${NLS} missing from ${NLS_ZH}`,
    extra: `keys of ${NLS_ZH} not in ${NLS}`,
  });
  for (const [key, en] of Object.entries(english)) {
    const zh = chinese[key];
    if (!(key in chinese)) continue;
    if (typeof zh !== 'string' || !zh.trim()) {
      problems.push(`${NLS_ZH}: ${JSON.stringify(key)} is empty`);
      continue;
    }
    if (commandLinks(en).join() !== commandLinks(zh).join()) {
      problems.push(`${NLS_ZH}: ${JSON.stringify(key)} must keep the links [${commandLinks(en)}], has [${commandLinks(zh)}]`);
    }
    if (placeholders(en).join() !== placeholders(zh).join()) {
      problems.push(`${NLS_ZH}: ${JSON.stringify(key)} must keep the placeholders [${placeholders(en)}], has [${placeholders(zh)}]`);
    }
    if (lineCount(en) !== lineCount(zh)) {
      problems.push(`${NLS_ZH}: ${JSON.stringify(key)} has ${lineCount(zh)} lines (\\n), English has ${lineCount(en)}`);
    }
  }
  assert.equal(problems.length, 0, problems.join('\n'));
});

test('every %key% used in package.json exists in package.nls.json', () => {
  const english = readJson(NLS) as Record<string, string>;
  const used: { key: string; at: string }[] = [];
  const walk = (value: unknown, at: string): void => {
    if (typeof value === 'string') {
      const m = /^%(.+)%$/.exec(value);
      if (m) used.push({ key: m[1], at });
    } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${at}[${i}]`));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, `${at}.${k}`);
  };
  walk(readJson('package.json'), 'package.json');
  assert.ok(used.length > 0, 'package.json uses no %key% at all');
  const missing = used.filter((u) => !(u.key in english)).map((u) => `\n  %${u.key}% (at ${u.at})`);
  assert.equal(missing.length, 0, `keys used in package.json but missing from ${NLS} (${missing.length}):${missing.join('')}`);
});

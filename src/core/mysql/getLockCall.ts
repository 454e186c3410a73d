/**
 * The lock a waiting connection waits for, read from its statement: MariaDB's processlist shows a thread in the
 * "User lock" state and its statement, not the name (its metadata_lock_info lists granted locks only). The statement
 * comes as bytes (INFO_BINARY), one char per byte here, so that a name in any encoding comes back byte for byte.
 *
 * Understood: GET_LOCK('name', t) with single or double quotes, backslash escapes (PyMySQL's, the default sql_mode),
 * doubled quotes, a charset introducer (_utf8mb4'…', N'…'), adjacent literals ('a' 'b'), hex literals (X'…', 0x…),
 * and comments before the name. A name that is no literal (a variable, a prepared statement's `?`) cannot be read.
 */

const ESCAPES: Record<string, string> = { '0': '\0', b: '\b', n: '\n', r: '\r', t: '\t', Z: '\x1a' };

/** Skips spaces and comments from `i`. */
function skipBlank(s: string, i: number): number {
  for (;;) {
    while (i < s.length && /\s/.test(s[i])) i++;
    if (s.startsWith('/*', i)) {
      const end = s.indexOf('*/', i + 2);
      if (end < 0) return s.length;
      i = end + 2;
    } else if (s.startsWith('#', i) || s.startsWith('-- ', i)) {
      const end = s.indexOf('\n', i);
      if (end < 0) return s.length;
      i = end + 1;
    } else {
      return i;
    }
  }
}

/** A quoted literal starting at s[i] (a quote), unescaped: [its text, the index after it]. */
function quoted(s: string, i: number): [string, number] | undefined {
  const quote = s[i];
  let out = '';
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j];
    if (c === '\\' && j + 1 < s.length) {
      const next = s[++j];
      // MySQL keeps the backslash of \% and \_ (they matter to LIKE only).
      out += next === '%' || next === '_' ? `\\${next}` : (ESCAPES[next] ?? next);
    } else if (c === quote) {
      if (s[j + 1] === quote) {
        out += quote;
        j++;
      } else {
        return [out, j + 1];
      }
    } else {
      out += c;
    }
  }
  return undefined;
}

/** A hex literal (X'4142' or 0x4142) at s[i]: [its bytes, one char each, the index after it]. */
function hex(s: string, i: number): [string, number] | undefined {
  const m = /^(?:[xX]'([0-9a-fA-F]*)'|0x([0-9a-fA-F]+))/.exec(s.slice(i));
  if (!m) return undefined;
  const digits = m[1] ?? m[2];
  if (digits.length % 2) return undefined;
  return [Buffer.from(digits, 'hex').toString('latin1'), i + m[0].length];
}

/** The string argument at `i`: literals, each after an optional introducer, adjacent ones joined. */
function stringArgument(s: string, i: number): string | undefined {
  let text: string | undefined;
  for (;;) {
    i = skipBlank(s, i);
    const introducer = /^(?:_[a-zA-Z0-9]+\s*|[nN](?='))/.exec(s.slice(i));
    const at = introducer ? skipBlank(s, i + introducer[0].length) : i;
    const literal = s[at] === "'" || s[at] === '"' ? quoted(s, at) : hex(s, at);
    if (!literal) break;
    text = (text ?? '') + literal[0];
    i = literal[1];
  }
  if (text === undefined) return undefined;
  return s[skipBlank(s, i)] === ',' ? text : undefined;
}

/**
 * The name of the first GET_LOCK call in a statement, as the bytes the client sent, or undefined when there is none
 * or its name is not a literal.
 */
export function getLockName(statement: Buffer): Buffer | undefined {
  const s = statement.toString('latin1');
  const call = /\bGET_LOCK\s*\(/i.exec(s);
  if (!call) return undefined;
  const name = stringArgument(s, call.index + call[0].length);
  return name === undefined ? undefined : Buffer.from(name, 'latin1');
}

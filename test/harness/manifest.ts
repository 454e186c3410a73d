import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** An extension's package.json with its `%key%` placeholders replaced from package.nls.json, as VS Code shows them. */
export function localizedManifest(root: string): any {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const nlsFile = join(root, 'package.nls.json');
  const nls: Record<string, string | { message: string }> = existsSync(nlsFile) ? JSON.parse(readFileSync(nlsFile, 'utf8')) : {};
  const localize = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const m = /^%(.+)%$/.exec(v);
      const entry = m ? nls[m[1]] : undefined;
      return entry === undefined ? v : typeof entry === 'string' ? entry : entry.message;
    }
    if (Array.isArray(v)) return v.map(localize);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, localize(x)]));
    return v;
  };
  return localize(manifest);
}

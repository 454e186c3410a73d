export interface MenuManifest {
  readonly contributes: { readonly menus: Record<string, readonly { readonly command: string; readonly when?: string; readonly group?: string }[]> };
}

/**
 * The `view/item/context` entries of the Locks view that a row with `contextValue` shows, evaluating the manifest's
 * when clauses the way VS Code does for the clauses they use: `view == …`, `viewItem == …`, `viewItem =~ /…/` and
 * `!config.locklens.readOnly` (read-only off unless `readOnly`).
 */
export function contextMenuEntries(manifest: MenuManifest, contextValue: string, readOnly = false): { readonly command: string; readonly when?: string; readonly group?: string }[] {
  const holds = (clause: string): boolean => {
    const c = clause.trim();
    if (c === 'view == locklens.locks') return true;
    if (c === '!config.locklens.readOnly') return !readOnly;
    const equal = /^viewItem == (\S+)$/.exec(c);
    if (equal) return contextValue === equal[1];
    const match = viewItemRegex(c);
    if (match) return match.test(contextValue);
    throw new Error(`a when clause this helper does not evaluate: ${c}`);
  };
  return manifest.contributes.menus['view/item/context'].filter((m) => (m.when ?? '').split('&&').every(holds));
}

/** The commands of those entries, each once, sorted. */
export function contextMenuCommands(manifest: MenuManifest, contextValue: string, readOnly = false): string[] {
  return [...new Set(contextMenuEntries(manifest, contextValue, readOnly).map((m) => m.command))].sort();
}

/** The regex of a `viewItem =~ /…/` clause, else undefined. */
export function viewItemRegex(clause: string): RegExp | undefined {
  const match = /^viewItem =~ \/(.*)\/$/.exec(clause.trim());
  return match ? new RegExp(match[1]) : undefined;
}

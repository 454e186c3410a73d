/**
 * The canvas's colours and fonts, read from the CSS variables VS Code sets on the webview's document, and read again
 * whenever the theme changes (VS Code swaps the body's class and rewrites the variables on <html>).
 */

export interface Theme {
  readonly background: string;
  readonly foreground: string;
  readonly muted: string;
  readonly grid: string;
  readonly headerBackground: string;
  readonly hover: string;
  readonly selection: string;
  readonly selectionForeground: string;
  readonly focus: string;
  readonly holder: string;
  readonly waiter: string;
  readonly leader: string;
  readonly candidate: string;
  readonly single: string;
  readonly error: string;
  readonly warning: string;
  readonly font: string;
  readonly boldFont: string;
  readonly monoFont: string;
  /** High-contrast themes: outlines instead of fills where it matters. */
  readonly highContrast: boolean;
}

export function readTheme(): Theme {
  const style = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  const family = v('--vscode-font-family', 'system-ui, sans-serif');
  const size = v('--vscode-font-size', '13px');
  const mono = v('--vscode-editor-font-family', 'monospace');
  const foreground = v('--vscode-editor-foreground', v('--vscode-foreground', '#cccccc'));
  return {
    background: v('--vscode-editor-background', '#1e1e1e'),
    foreground,
    muted: v('--vscode-descriptionForeground', foreground),
    grid: v('--vscode-editorIndentGuide-background1', v('--vscode-editorIndentGuide-background', v('--vscode-panel-border', '#80808040'))),
    headerBackground: v('--vscode-sideBarSectionHeader-background', v('--vscode-editorGroupHeader-tabsBackground', 'transparent')),
    hover: v('--vscode-list-hoverBackground', '#80808020'),
    selection: v('--vscode-list-inactiveSelectionBackground', v('--vscode-list-activeSelectionBackground', '#80808040')),
    selectionForeground: v('--vscode-list-inactiveSelectionForeground', foreground),
    focus: v('--vscode-focusBorder', '#0078d4'),
    holder: v('--vscode-charts-green', '#89d185'),
    waiter: v('--vscode-charts-blue', '#3794ff'),
    leader: v('--vscode-charts-purple', '#b180d7'),
    candidate: v('--vscode-charts-blue', '#3794ff'),
    single: v('--vscode-charts-yellow', '#cca700'),
    error: v('--vscode-errorForeground', '#f48771'),
    warning: v('--vscode-editorWarning-foreground', v('--vscode-charts-orange', '#cca700')),
    font: `${size} ${family}`,
    boldFont: `600 ${size} ${family}`,
    // Lease IDs are 16 hex digits: a little smaller than editor text, so that they fit beside the role.
    monoFont: `12px ${mono}`,
    highContrast: document.body.classList.contains('vscode-high-contrast') || document.body.classList.contains('vscode-high-contrast-light'),
  };
}

/** Calls `changed` after VS Code changes the theme. */
export function onThemeChange(changed: () => void): void {
  const observer = new MutationObserver(changed);
  observer.observe(document.body, { attributes: true, attributeFilter: ['class'] });
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['style', 'class'] });
}

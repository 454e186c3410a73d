import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-context-menu/index.js';
import '@vscode-elements/elements/dist/vscode-option/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import type { VscodeButton } from '@vscode-elements/elements/dist/vscode-button/vscode-button.js';
import type { VscodeContextMenu } from '@vscode-elements/elements/dist/vscode-context-menu/vscode-context-menu.js';
import type { VscodeSingleSelect } from '@vscode-elements/elements/dist/vscode-single-select/vscode-single-select.js';
import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';

/** The page's elements, built here; the parts set their text through `textContent` only. */
export type Page = ReturnType<typeof buildPage>;

export const el = <K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<Record<string, string>> = {}, ...children: Node[]) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) if (v !== undefined) e.setAttribute(k, v);
  e.append(...children);
  return e;
};

export function buildPage(app: HTMLElement) {
  const filterField = el('vscode-textfield', { id: 'filter', type: 'search' }) as VscodeTextfield;
  const windowSelect = el('vscode-single-select', { id: 'window' }) as VscodeSingleSelect;
  const pauseButton = el('vscode-button', { id: 'pause', secondary: '' }) as VscodeButton;
  const summary = el('span', { id: 'summary', class: 'summary', 'aria-live': 'polite' });
  const canvas = el('canvas', { id: 'canvas', 'aria-hidden': 'true' });
  const spacer = el('div', { class: 'spacer' });
  const rowList = el('ul', { id: 'rows', class: 'sr-only', role: 'none' });
  const scroller = el('div', { id: 'scroller', class: 'scroller', tabindex: '0', role: 'listbox' }, canvas, spacer, rowList);
  const detailTitle = el('div', { id: 'detail-title', class: 'detail-title' });
  const detailInfo = el('div', { id: 'detail-info', class: 'detail-info' });
  const revealButton = el('vscode-button', { id: 'reveal', secondary: '' }) as VscodeButton;
  const copyButton = el('vscode-button', { id: 'copy', secondary: '' }) as VscodeButton;
  const revokeButton = el('vscode-button', { id: 'revoke' }) as VscodeButton;
  const forceReleaseButton = el('vscode-button', { id: 'force-release' }) as VscodeButton;
  const actions = el('div', { class: 'detail-actions', role: 'group' }, revealButton, copyButton, revokeButton, forceReleaseButton);
  const detail = el('section', { id: 'detail', class: 'detail', 'aria-live': 'polite' }, el('div', { class: 'detail-text' }, detailTitle, detailInfo), actions);
  const pastSection = el('section', { id: 'past', class: 'past', 'aria-live': 'polite' });
  const legend = el('div', { class: 'legend' });
  const menu = el('vscode-context-menu', { id: 'menu' }) as VscodeContextMenu;
  app.append(el('header', { class: 'toolbar' }, filterField, windowSelect, pauseButton, summary), scroller, detail, pastSection, legend, menu);
  return {
    filterField,
    windowSelect,
    pauseButton,
    summary,
    canvas,
    spacer,
    rowList,
    scroller,
    detail,
    detailTitle,
    detailInfo,
    revealButton,
    copyButton,
    revokeButton,
    forceReleaseButton,
    actions,
    pastSection,
    legend,
    menu,
  };
}

/**
 * Which layout a name that holds nothing is taken in (issue 20): the one the services on that name use, as far as
 * LockLens can tell. In this order: what the user asked for; what LockLens saw on that exact name before (its records:
 * the last hold's layout); the layout of the other locks under the same prefix, when they all agree; else the store's
 * default (its descriptor's, with the reasoning there). Pure: the faces gather what was seen and say the reason in
 * their own words.
 */
import * as l10n from '@vscode/l10n';
import { LockLensError } from './errors';
import { duration } from './incidentReport';
import { displayKey } from './keys';
import { members, type LockState } from './lockState';
import type { FreeNameLayout, FreeNameLayouts } from './storeLayouts';

export type LayoutReason =
  | { readonly kind: 'asked' }
  /** A read or write mode was asked for, which only the store's read/write layout takes (Redisson's). */
  | { readonly kind: 'mode' }
  /** The last hold LockLens saw on this name, at `at` (epoch ms). */
  | { readonly kind: 'seen'; readonly at: number }
  /** `count` other locks under `prefix` are all in this layout. */
  | { readonly kind: 'siblings'; readonly count: number; readonly prefix: string }
  | { readonly kind: 'default' };

export interface LayoutChoice {
  readonly layout: FreeNameLayout;
  readonly reason: LayoutReason;
}

/** A hold seen on the name before: its member's convention and when it was seen. */
export interface SeenHold {
  readonly convention: string;
  readonly at: number;
}

export interface LayoutEvidence {
  readonly name: Buffer;
  /** An id the user gave (`--layout`): an unknown one is INVALID_ARGUMENT naming the store's ids. */
  readonly asked?: string;
  /** A read or write mode was asked for. */
  readonly mode?: boolean;
  /** Holds recorded on this exact name, in any order. */
  readonly seen?: readonly SeenHold[];
  /** Locks LockLens can see now (a watch's, a listing): the name's siblings are picked from them. */
  readonly locks?: readonly LockState[];
  /** The store's `nameSeparator`: siblings share the name's text up to its last separator. */
  readonly separator: string;
}

export function layoutById(layouts: FreeNameLayouts, id: string): FreeNameLayout {
  const found = layouts.layouts.find((l) => l.id === id);
  if (!found) throw new LockLensError('INVALID_ARGUMENT', `unknown layout '${id}': ${layoutIds(layouts)}`);
  return found;
}

/** "redisson, redisson-fair, … (default redisson)", for errors and the CLI's help. */
export function layoutIds(layouts: FreeNameLayouts): string {
  return `${layouts.layouts.map((l) => l.id).join(', ')} (default ${layouts.defaultId})`;
}

export function defaultLayout(layouts: FreeNameLayouts): FreeNameLayout {
  return layoutById(layouts, layouts.defaultId);
}

/** The layout a lock's members follow, when they all follow one of the listed layouts. */
export function layoutOfLock(layouts: FreeNameLayouts, lock: LockState): FreeNameLayout | undefined {
  const found = new Set(members(lock).map((m) => layouts.layouts.find((l) => (l.conventions as readonly string[]).includes(m.convention))));
  const [only] = found;
  return found.size === 1 ? only : undefined;
}

/**
 * The part of `name` up to and including its last separator ("jobs/" of "jobs/nightly"); '' for a name without one, or
 * whose only separator leads it ("/nightly"): the root is every lock of the store, not a family (and not cheap to read).
 */
export function prefixOf(name: Buffer, separator: string): string {
  const text = displayKey(name);
  const at = text.lastIndexOf(separator, text.length - separator.length - 1);
  return at <= 0 ? '' : text.slice(0, at + separator.length);
}

export function chooseLayout(layouts: FreeNameLayouts, evidence: LayoutEvidence): LayoutChoice {
  if (evidence.asked !== undefined) return { layout: layoutById(layouts, evidence.asked), reason: { kind: 'asked' } };
  const readWrite = layouts.layouts.find((l) => l.readWrite);
  if (evidence.mode && readWrite) return { layout: readWrite, reason: { kind: 'mode' } };
  const last = [...(evidence.seen ?? [])].sort((a, b) => b.at - a.at).find((h) => layoutOfConvention(layouts, h.convention));
  if (last) return { layout: layoutOfConvention(layouts, last.convention)!, reason: { kind: 'seen', at: last.at } };
  const siblings = siblingLayout(layouts, evidence);
  if (siblings) return siblings;
  return { layout: defaultLayout(layouts), reason: { kind: 'default' } };
}

function layoutOfConvention(layouts: FreeNameLayouts, convention: string): FreeNameLayout | undefined {
  return layouts.layouts.find((l) => (l.conventions as readonly string[]).includes(convention));
}

/** The layout of the other locks under the name's prefix (see prefixOf), when every one of them is in the same listed layout. */
function siblingLayout(layouts: FreeNameLayouts, evidence: LayoutEvidence): LayoutChoice | undefined {
  const prefix = prefixOf(evidence.name, evidence.separator);
  if (!prefix) return undefined;
  const siblings = (evidence.locks ?? []).filter((l) => !l.name.equals(evidence.name) && displayKey(l.name).startsWith(prefix));
  if (siblings.length === 0) return undefined;
  const found = new Set(siblings.map((l) => layoutOfLock(layouts, l)));
  const [only] = found;
  return found.size === 1 && only ? { layout: only, reason: { kind: 'siblings', count: siblings.length, prefix } } : undefined;
}

/** The layouts in the order a pick offers them: the chosen one first, then the store's order. */
export function layoutsInOrder(layouts: FreeNameLayouts, chosen: FreeNameLayout): FreeNameLayout[] {
  return [chosen, ...layouts.layouts.filter((l) => l !== chosen)];
}

/** Why, in a clause ("the 4 other locks under jobs/ are in this layout"), in the words of VS Code's language (English in the CLI). */
export function reasonText(layouts: FreeNameLayouts, reason: LayoutReason, now = Date.now()): string {
  switch (reason.kind) {
    case 'asked':
      return l10n.t('as asked');
    case 'mode':
      return l10n.t('a read or write mode takes a read/write lock');
    case 'seen':
      return l10n.t('LockLens saw this name held in this layout {0} ago', duration(Math.max(0, now - reason.at)));
    case 'siblings':
      return reason.count === 1
        ? l10n.t('the other lock under {0} is in this layout', reason.prefix)
        : l10n.t('the {0} other locks under {1} are in this layout', reason.count, reason.prefix);
    case 'default':
      return l10n.t('the default: {0}', layouts.why());
  }
}

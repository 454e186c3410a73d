import * as vscode from 'vscode';
import type { LockBackend, LockMode } from '../../core/backend';
import { chooseLayout, layoutsInOrder, reasonText, type SeenHold } from '../../core/freeNameLayout';
import { displayKey } from '../../core/keys';
import { isReadWrite, isSemaphore, isSingleKey, type LockState } from '../../core/lockState';
import { permitCount } from '../../core/permitCount';
import type { FreeNameLayout } from '../../core/storeLayouts';
import { layoutsOf, storeOf } from '../../core/stores';
import type { StoreConnection } from '../connections';
import { acceptQuickPick, holderName, lockSummary, orCancel } from '../pickers';
import { defaultAcquireTtl } from '../settings';

/**
 * Acquire Lock… asks in several steps, each a quick input of its own, and like the Add Connection flow every step stays
 * open when focus leaves it (Escape still cancels): VS Code hands focus back as one step's input hides, and on a loaded
 * machine that hand-back can land after the next step has shown and close it at once (seen in CI, the layout pick).
 */
const STEP = { ignoreFocusOut: true } as const;

/** Existing locks to join, or a new name typed in. */
export async function askLockName(connection: StoreConnection, backend: LockBackend): Promise<Buffer> {
  const locks = (connection.watch?.locks() ?? []).filter((l) => backend.acquirable(l));
  const quickPick = vscode.window.createQuickPick<vscode.QuickPickItem & { name?: Buffer }>();
  quickPick.title = vscode.l10n.t('Acquire lock on {0}', connection.name);
  quickPick.placeholder = vscode.l10n.t('A lock name, as your services name it (e.g. /locks/jobs, lock:jobs)');
  quickPick.ignoreFocusOut = STEP.ignoreFocusOut;
  const existing = locks.map((l) => ({ label: displayKey(l.name), description: lockSummary(l), name: l.name }));
  quickPick.items = existing;
  quickPick.onDidChangeValue((value) => {
    const typed = value && !existing.some((e) => e.label === value) ? [{ label: value, description: vscode.l10n.t('new lock'), name: Buffer.from(value) }] : [];
    quickPick.items = [...typed, ...existing];
  });
  return acceptQuickPick(quickPick, () => quickPick.selectedItems[0]?.name ?? (quickPick.value ? Buffer.from(quickPick.value) : undefined));
}

export async function askTtl(owner: LockBackend['capabilities']['owner']): Promise<number> {
  const [title, prompt] = {
    lease: [vscode.l10n.t('Lease TTL (seconds)'), vscode.l10n.t('LockLens keeps the lease alive while you hold the lock; if VS Code dies, the lock frees itself after this long.')],
    // LockLens holds through a ZooKeeper session of its own, with this timeout (the server may shorten it).
    session: [vscode.l10n.t('Session timeout (seconds)'), vscode.l10n.t('LockLens holds the lock through a session of its own; if VS Code dies, the server ends the session, and the lock, after this long (within the server\'s limits).')],
    token: [vscode.l10n.t('Lock TTL (seconds)'), vscode.l10n.t("LockLens renews the key's expiry while you hold the lock; if VS Code dies, the lock frees itself after this long.")],
    // A SQL lock has no TTL: it ends with the connection that holds it. What can be set is how soon the server notices
    // that the connection's other end is gone (TCP keepalives).
    connection: [vscode.l10n.t('Keepalive (seconds)'), vscode.l10n.t('LockLens holds the lock on a database connection of its own and the lock ends with it; if VS Code vanishes without closing it, the server notices within about this long.')],
  }[owner];
  const text = orCancel(
    await vscode.window.showInputBox({
      ...STEP,
      title,
      prompt,
      value: String(defaultAcquireTtl()),
      validateInput: (v) => (/^\d+$/.test(v) && Number(v) >= 1 ? undefined : vscode.l10n.t('A whole number of seconds, at least 1')),
    }),
  );
  return Number(text);
}

/**
 * The layout a name that holds nothing is taken in, so that the services on that name count it: the one LockLens
 * infers (freeNameLayout.ts) first, with why, then the others, each named by its clients. Asked only where there is a
 * choice. A name that holds a lock keeps its own: undefined.
 */
export async function chooseFreeLayout(connection: StoreConnection, backend: LockBackend, name: Buffer, seen: readonly SeenHold[]): Promise<FreeNameLayout | undefined> {
  const locks = connection.watch?.locks() ?? [];
  if (locks.some((l) => l.name.equals(name))) return undefined;
  const layouts = layoutsOf(backend);
  const choice = chooseLayout(layouts, { name, seen, locks, separator: storeOf(backend.kind).nameSeparator });
  if (layouts.layouts.length === 1) return choice.layout;
  const items = layoutsInOrder(layouts, choice.layout).map((layout) => ({
    label: layout.label,
    description: layout === choice.layout ? reasonText(layouts, choice.reason) : undefined,
    layout,
  }));
  const picked = await vscode.window.showQuickPick(items, {
    ...STEP,
    title: vscode.l10n.t('Layout of "{0}"', displayKey(name)),
    placeHolder: vscode.l10n.t('"{0}" holds no lock: take it in the layout of the services that use that name', displayKey(name)),
  });
  return orCancel(picked).layout;
}

/**
 * A read/write lock is taken for reading or for writing: asked where the store has them (its capability) and the name
 * is one now, or is free and taken in a read/write layout. Anything else is taken without a mode.
 */
export async function askMode(connection: StoreConnection, backend: LockBackend, name: Buffer, shown: LockState | undefined, layout: FreeNameLayout | undefined): Promise<LockMode | undefined> {
  if (!backend.capabilities.readWriteLocks) return undefined;
  const lock = lockNamed(connection, name, shown);
  if (!layout?.readWrite && (!lock || !isReadWrite(lock))) return undefined;
  const items: (vscode.QuickPickItem & { mode: LockMode })[] = [
    { label: vscode.l10n.t('Read'), description: vscode.l10n.t('shared: other readers hold it at the same time; writers wait'), mode: 'read' },
    { label: vscode.l10n.t('Write'), description: vscode.l10n.t('exclusive: waits until every reader and writer has left'), mode: 'write' },
  ];
  const picked = await vscode.window.showQuickPick(items, {
    ...STEP,
    title: vscode.l10n.t('Lock mode (read or write)'),
    placeHolder: vscode.l10n.t('"{0}" is a read/write lock: take it for reading or for writing', displayKey(name)),
  });
  return orCancel(picked).mode;
}

/**
 * A semaphore's limit, asked where its store does not keep it (a redis-semaphore's: every client's call states it), so
 * that LockLens counts the permits as its clients do. Undefined for anything else.
 */
export async function askPermitLimit(connection: StoreConnection, name: Buffer, shown: LockState | undefined): Promise<number | undefined> {
  const lock = lockNamed(connection, name, shown);
  if (!lock || !isSemaphore(lock) || lock.permits?.limit !== null) return undefined;
  const text = orCancel(
    await vscode.window.showInputBox({
      ...STEP,
      title: vscode.l10n.t('Permits of "{0}"', displayKey(name)),
      prompt: vscode.l10n.t("The semaphore's limit, as its clients state it (the store does not keep it): you get a permit only while fewer are held."),
      validateInput: (v) => (/^\d+$/.test(v) && Number(v) >= 1 ? undefined : vscode.l10n.t('A whole number of permits, at least 1')),
    }),
  );
  return Number(text);
}

/** The lock named `name`: the row acted on when it is that one, else the watch's. */
export function lockNamed(connection: StoreConnection, name: Buffer, shown?: LockState): LockState | undefined {
  return shown?.name.equals(name) ? shown : connection.watch?.locks().find((l) => l.name.equals(name));
}

/**
 * Whether taking `lock` joins a queue: where the store queues acquires, except a lock that is one key (npm etcd3's or
 * python-etcd3's Lock on etcd), which its clients take by trying again, as LockLens then does.
 */
export function joinsQueue(backend: LockBackend, lock: LockState | undefined): boolean {
  return backend.capabilities.queuedAcquire && !(lock && isSingleKey(lock));
}

/** Joining a lock others use makes them wait while you hold: say who, and ask. Reading beside other readers waits for no one. */
export async function confirmJoin(connection: StoreConnection, backend: LockBackend, name: Buffer, mode: LockMode | undefined, permitLimit?: number): Promise<boolean> {
  const lock = connection.watch?.locks().find((l) => backend.acquirable(l) && l.name.equals(name));
  if (!lock?.holder) return true;
  if (mode === 'read' && lock.holder.mode === 'read') return true;
  if (isSemaphore(lock)) return confirmPermitWait(lock, permitLimit);
  const queued = joinsQueue(backend, lock);
  const join = queued ? vscode.l10n.t('Join Queue') : vscode.l10n.t('Wait');
  const answer = await vscode.window.showWarningMessage(
    queued
      ? vscode.l10n.t('"{0}" is held by {1}, with {2} waiting. Join the queue?', displayKey(name), displayKey(lock.holder.key), lock.waiters.length)
      : vscode.l10n.t('"{0}" is held by {1}. Wait for it?', displayKey(name), holderName(lock, lock.holder)),
    {
      modal: true,
      detail: queued
        ? vscode.l10n.t('You get the lock after everyone ahead of you; while you hold it, everyone behind you waits.')
        : vscode.l10n.t('No queue is kept for this lock: LockLens tries again until it is free, and may get it before other waiters. While you hold it, they wait.'),
    },
    join,
  );
  return answer === join;
}

/** A semaphore with a permit free is taken at once; with none, waiting for one is asked. */
async function confirmPermitWait(lock: LockState, permitLimit: number | undefined): Promise<boolean> {
  const count = permitCount(lock);
  const limit = count?.limit ?? permitLimit;
  const held = count?.held ?? 0;
  if (limit === undefined || held < limit) return true;
  const wait = vscode.l10n.t('Wait');
  const answer = await vscode.window.showWarningMessage(
    vscode.l10n.t('All {0} permits of "{1}" are held. Wait for one?', limit, displayKey(lock.name)),
    { modal: true, detail: vscode.l10n.t('You get the next permit given back; while you hold it, one more of its clients waits.') },
    wait,
  );
  return answer === wait;
}

import * as vscode from 'vscode';
import type { RegisterCommand } from '../commandRunner';
import type { LeaseOperations, LockBackend, LockMode } from '../../core/backend';
import { LockLensError, errorMessage } from '../../core/errors';
import { revokeEffects } from '../../core/revokeEffects';
import { displayKey, keyId, parseLeaseHex } from '../../core/keys';
import { members, type LockMember, type LockState } from '../../core/lockState';
import { ownerField, type AuditLog } from '../audit';
import type { StoreConnection, ConnectionRegistry } from '../connections';
import { formatTtl, ownerLabel, roleLabel, troubleLabel } from '../format';
import type { HeldLock, HeldLocks } from '../heldLocks';
import type { LockTreeProvider } from '../tree/lockTreeProvider';
import type { LockTreeNode, MemberNode } from '../tree/nodes';
import { acceptQuickPick, holderName, lockSummary, orCancel, pickConnection, pickLock } from '../pickers';
import { defaultAcquireTtl, isReadOnly } from '../settings';

/** What `locklens.acquireLock` accepts from scripts and tests instead of asking. */
export interface AcquireInput {
  readonly connection: string;
  readonly name: string;
  readonly ttl?: number;
  /** A read/write lock (where the store has them): take it for reading or writing. */
  readonly mode?: LockMode;
}

/** What `locklens.revokeLease` accepts from scripts and tests instead of a tree node. */
export interface RevokeInput {
  readonly connection: string;
  readonly lease: string;
}

/** What `locklens.forceRelease` accepts from scripts and tests instead of a tree node: the lock's holder is released. */
export interface ForceReleaseInput {
  readonly connection: string;
  readonly lock: string;
  /** The owner the script saw holding it: the command refuses if another holds it now. */
  readonly owner?: string;
}

/** Most keys a confirmation lists; the rest are counted. */
const MAX_LISTED_KEYS = 15;

export function registerLockCommands(
  register: RegisterCommand,
  registry: ConnectionRegistry,
  heldLocks: HeldLocks,
  tree: LockTreeProvider,
  audit: AuditLog,
): vscode.Disposable[] {
  const connectionNamed = (name: string) => {
    const c = registry.get(name);
    if (!c) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('No connection named "{0}"', name));
    return c;
  };

  /** Mutations refuse in read-only mode even when called directly (menus already hide them). */
  const writable = () => {
    if (isReadOnly()) {
      throw new LockLensError('PERMISSION', vscode.l10n.t('LockLens is in read-only mode (setting locklens.readOnly): acquire, release, revoke and force-release are turned off.'));
    }
  };

  const acquire = async (arg?: LockTreeNode | AcquireInput) => {
    writable();
    const input = arg && !('kind' in arg) ? arg : undefined;
    const node = arg && 'kind' in arg ? arg : undefined;
    const connection = input ? connectionNamed(input.connection) : (node?.connection ?? (await pickConnection(registry, vscode.l10n.t('Acquire lock'))));
    const lockOfNode = node?.kind === 'lock' ? tree.lock(node) : undefined;
    const backend = await connection.open();
    const name = input ? Buffer.from(input.name) : (lockOfNode?.name ?? (await askLockName(connection, backend)));
    const mode = input ? input.mode : await askMode(connection, backend, name, lockOfNode);
    // A read hold's lease is the store's own (Redisson's watchdog): there is no TTL to ask.
    const ttl = input?.ttl ?? (mode === 'read' ? defaultAcquireTtl() : await askTtl(backend.capabilities.owner));
    if (!input && !(await confirmJoin(connection, backend, name, mode))) return;
    const controller = new AbortController();
    const label = displayKey(name);
    const held = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Acquiring "{0}"', label), cancellable: true },
      (progress, token) => {
        token.onCancellationRequested(() => controller.abort(new LockLensError('CANCELLED', vscode.l10n.t('cancelled'))));
        return heldLocks.acquire({
          connection,
          name,
          ttl,
          mode,
          signal: controller.signal,
          onQueue: ({ ahead, fencingToken }) => progress.report({ message: queueMessage(ahead, fencingToken, backend.capabilities.queuedAcquire) }),
        });
      },
    );
    await connection.watch?.sweep();
    const release = vscode.l10n.t('Release');
    const { fencingToken, owner } = held.hold;
    const heldText =
      fencingToken === null
        ? vscode.l10n.t('You hold "{0}" ({1}; this store gives no fencing tokens).', label, ownerLabel(backend.capabilities.owner, owner))
        : vscode.l10n.t('You hold "{0}" (fencing token {1}, {2}).', label, fencingToken, ownerLabel(backend.capabilities.owner, owner));
    void vscode.window
      .showInformationMessage(heldText, release)
      .then((answer) => (answer === release ? vscode.commands.executeCommand('locklens.releaseLock', held) : undefined));
    return held;
  };

  const release = async (arg?: MemberNode | HeldLock) => {
    writable();
    const held =
      arg && 'hold' in arg
        ? arg
        : arg?.kind === 'member'
          ? memberHeld(arg)
          : await pickHeld(heldLocks);
    if (!held) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That lock is not held from this window: to free someone else\'s lock, use Force Release.'));
    await heldLocks.release(held);
    await held.connection.watch?.sweep();
  };

  const revoke = async (arg?: MemberNode | RevokeInput) => {
    writable();
    const { connection, leases, lease } = await leaseTarget(arg, vscode.l10n.t('Revoke lease'), leaseOfRow);
    const sample = await leases.describe(lease);
    if (sample.ttl < 0) throw new LockLensError('LEASE_NOT_FOUND', vscode.l10n.t('Lease {0} does not exist: it expired or was revoked already.', lease));
    const effects = revokeEffects(sample.keys, lockOfKey(connection));
    const confirm = vscode.l10n.t('Revoke Lease');
    const ownHold = heldLocks.all().find((h) => h.connection === connection && h.hold.owner === lease);
    const detail = revokeDetail(sample.keys, effects, sample.ttl);
    const answer = await vscode.window.showWarningMessage(
      vscode.l10n.t('Revoke lease {0} on {1}?', lease, connection.name),
      {
        modal: true,
        detail: ownHold ? `${vscode.l10n.t('This lease is one of your own: it holds "{0}" from this window (Release Lock does the same, quietly).', displayKey(ownHold.name))}\n\n${detail}` : detail,
      },
      confirm,
    );
    if (answer !== confirm) {
      audit.record({ action: 'revoke', outcome: 'cancelled', connection: connection.name, lease, keys: sample.keys });
      return;
    }
    try {
      const result = await leases.revoke(lease);
      audit.record({ action: 'revoke', outcome: 'ok', connection: connection.name, lease, keys: result.keys, detail: `revision ${result.revision}` });
      void vscode.window.showInformationMessage(
        result.keys.length === 1
          ? vscode.l10n.t('Revoked lease {0}: 1 key deleted.', lease)
          : vscode.l10n.t('Revoked lease {0}: {1} keys deleted.', lease, result.keys.length),
      );
    } catch (e) {
      audit.record({ action: 'revoke', outcome: 'failed', connection: connection.name, lease, detail: errorMessage(e) });
      throw e;
    }
  };

  /**
   * Frees a lock from a holder that is not us (a stuck one, usually), the store's safe way, guarded by what the user
   * saw: a row acts on the member it was drawn with, a pick on the lock as it was listed, and the backend refuses if
   * the member changed since (another owner, another token).
   */
  const forceRelease = async (arg?: MemberNode | ForceReleaseInput) => {
    writable();
    const { connection, lock, member } = arg && 'kind' in arg ? shownHolder(arg) : await holderOf(arg);
    const backend = await connection.open();
    if (heldLocks.owns(connection, member)) {
      throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('You hold this lock from this window: use Release Lock.'));
    }
    const next = lock.waiters[0];
    const detail = [
      backend.describeForceRelease(lock, member),
      '',
      next ? vscode.l10n.t('Next holder: {0}', displayKey(next.key)) : vscode.l10n.t('Nobody is waiting in the store; waiters that poll or retry will take it.'),
    ].join('\n');
    const confirm = vscode.l10n.t('Force Release');
    const who = holderName(lock, member);
    const answer = await vscode.window.showWarningMessage(
      vscode.l10n.t('Force-release "{0}" from {1} on {2}?', displayKey(lock.name), who, connection.name),
      { modal: true, detail },
      confirm,
    );
    const audited = { connection: connection.name, lock: lock.name, ...ownerField(backend.capabilities.owner, member.owner), fencingToken: member.token ?? undefined };
    if (answer !== confirm) {
      audit.record({ action: 'forceRelease', outcome: 'cancelled', ...audited });
      return;
    }
    try {
      const result = await backend.forceRelease(lock, member);
      audit.record({ action: 'forceRelease', outcome: 'ok', ...audited, keys: result.keys, detail: result.action });
      void vscode.window.showInformationMessage(vscode.l10n.t('Released "{0}": {1}.', displayKey(lock.name), result.action));
      await connection.watch?.sync().catch(() => undefined);
    } catch (e) {
      audit.record({ action: 'forceRelease', outcome: 'failed', ...audited, detail: errorMessage(e) });
      throw e;
    }
  };

  /**
   * The holder a row showed, if the row still stands for it. A Redis token lock's one member is the lock's own key
   * whoever holds it, and an etcd key can be deleted and created again: the owner and the fencing token must match too.
   */
  const shownHolder = (node: MemberNode) => {
    const view = tree.memberView(node);
    if (!view) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That member is gone since it was shown.'));
    const now = view.health.member;
    const shown = tree.shownMember(node) ?? now;
    if (shown.owner !== now.owner || shown.token !== now.token) {
      throw new LockLensError('LOCK_CHANGED', vscode.l10n.t('"{0}" changed hands since it was shown (owner {1}, now {2}): look again before force-releasing.', displayKey(view.lock.name), ownerText(shown), ownerText(now)));
    }
    if (view.health.position !== 0) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That member is waiting, not holding: there is no hold to release.'));
    return { connection: node.connection, lock: view.lock, member: shown };
  };

  /** Our hold behind a member row, as the model has the member now. */
  const memberHeld = (node: MemberNode) => {
    const member = tree.memberView(node)?.health.member;
    return member && heldLocks.holding(node.connection, member);
  };

  const holderOf = async (input?: ForceReleaseInput) => {
    const connection = input ? connectionNamed(input.connection) : await pickConnection(registry, vscode.l10n.t('Force release'));
    await connection.open();
    const lock = input ? heldLockNamed(connection, input.lock) : await pickLock(connection, vscode.l10n.t('Force release on {0}', connection.name), (l) => !!l.holder, vscode.l10n.t('Nothing is held on {0}.', connection.name));
    if (input?.owner !== undefined && input.owner !== lock.holder!.owner) {
      throw new LockLensError('LOCK_CHANGED', vscode.l10n.t('"{0}" is held by {1} now, not by {2}: nothing was released.', input.lock, ownerText(lock.holder!), input.owner));
    }
    return { connection, lock, member: lock.holder! };
  };

  /**
   * The connection and lease a lease command acts on: a row's (read by `ofRow`), a script's, or picked. A store without
   * leases says so before anything is picked.
   */
  const leaseTarget = async (arg: MemberNode | RevokeInput | undefined, title: string, ofRow: (node: MemberNode) => string) => {
    const connection = arg && 'kind' in arg ? arg.connection : arg ? connectionNamed(arg.connection) : await pickConnection(registry, title);
    const leases = leaseOperations(await connection.open());
    const lease = arg && 'kind' in arg ? ofRow(arg) : arg ? leaseArgument(arg.lease) : await pickLease(connection, tree);
    return { connection, leases, lease };
  };

  /** The lease a row showed, if the row still stands for it: a revoke never acts on something the user did not see. */
  const leaseOfRow = (node: MemberNode) => {
    const shown = tree.shownMember(node)?.lease;
    const now = tree.memberView(node)?.health.member.lease;
    if (now === undefined) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That key is gone from etcd since it was shown.'));
    if (!now) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That key has no lease to revoke.'));
    if (shown !== undefined && shown !== now) {
      throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('That key moved from lease {0} to lease {1} since it was shown: look again before revoking.', shown, now));
    }
    return now;
  };

  const memberOf = (node: MemberNode | undefined) => {
    const view = node && tree.memberView(node);
    if (!view) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('Pick a holder or waiter in the Locks view.'));
    return view.health.member;
  };
  const copy = async (text: string, what: string) => {
    await vscode.env.clipboard.writeText(text);
    vscode.window.setStatusBarMessage(vscode.l10n.t('Copied {0}', what), 2000);
  };

  return [
    register('locklens.acquireLock', acquire),
    register('locklens.releaseLock', release),
    register('locklens.revokeLease', revoke),
    register('locklens.copyKey', (node?: MemberNode) => copy(displayKey(memberOf(node).key), vscode.l10n.t('key'))),
    register('locklens.forceRelease', forceRelease),
    register('locklens.copyLeaseId', (node?: MemberNode) => copy(memberOf(node).lease, vscode.l10n.t('lease ID'))),
    register('locklens.copyOwner', (node?: MemberNode) => copy(memberOf(node).owner, vscode.l10n.t('owner'))),
    register('locklens.copyFencingToken', (node?: MemberNode) => {
      const { token } = memberOf(node);
      if (token === null) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('This store gives locks no fencing token.'));
      return copy(String(token), vscode.l10n.t('fencing token'));
    }),
    register('locklens.showLeaseDetails', async (arg?: MemberNode | RevokeInput) => {
      const { connection, leases, lease } = await leaseTarget(arg, vscode.l10n.t('Show lease details'), (node) => memberOf(node).lease);
      const sample = await leases.describe(lease);
      const detail =
        sample.ttl < 0
          ? vscode.l10n.t('This lease does not exist any more: it expired or was revoked.')
          : [
              vscode.l10n.t('Remaining TTL: {0}s of {1}s granted', sample.ttl, sample.grantedTtl),
              vscode.l10n.t('Attached keys ({0}):', sample.keys.length),
              ...listKeys(sample.keys),
            ].join('\n');
      const revokeItem = vscode.l10n.t('Revoke Lease…');
      const copyItem = vscode.l10n.t('Copy Lease ID');
      const actions = sample.ttl < 0 ? [copyItem] : isReadOnly() ? [copyItem] : [copyItem, revokeItem];
      const answer = await vscode.window.showInformationMessage(vscode.l10n.t('Lease {0} on {1}', lease, connection.name), { modal: true, detail }, ...actions);
      if (answer === copyItem) await copy(lease, vscode.l10n.t('lease ID'));
      if (answer === revokeItem) await revoke({ connection: connection.name, lease });
      return sample;
    }),
  ];
}

/** An owner for a sentence: a fencing token with it where the store has one. */
function ownerText(member: LockMember): string {
  const who = member.owner || vscode.l10n.t('none');
  return member.token === null ? who : vscode.l10n.t('{0}, token {1}', who, member.token);
}

/** The lease operations of a store that has them (etcd), or a clear error. */
function leaseOperations(backend: LockBackend): LeaseOperations {
  if (!backend.leases) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('This store has no leases: free a stuck lock with Force Release.'));
  return backend.leases;
}

/** Finds the lock a key belongs to among the connection's live locks. */
function lockOfKey(connection: StoreConnection): (key: Uint8Array) => LockState | undefined {
  const byKey = new Map<string, LockState>();
  for (const lock of connection.watch?.locks() ?? []) for (const m of members(lock)) byKey.set(keyId(m.key), lock);
  return (key) => byKey.get(keyId(key));
}

function queueMessage(ahead: number, fencingToken: number | null, queued: boolean): string {
  if (ahead === 0) return fencingToken === null ? vscode.l10n.t('held') : vscode.l10n.t('held (fencing token {0})', fencingToken);
  if (!queued) return vscode.l10n.t('held by someone else: trying again until it is free');
  return fencingToken === null
    ? vscode.l10n.t('{0} ahead in the queue', ahead)
    : vscode.l10n.t('{0} ahead in the queue; you will hold it with fencing token {1}', ahead, fencingToken);
}

/** The held lock a script names; a queue and a single key of the same name, both held, are refused as the CLI does. */
function heldLockNamed(connection: StoreConnection, name: string): LockState {
  const held = (connection.watch?.locks() ?? []).filter((l) => l.holder && displayKey(l.name) === name);
  if (held.length > 1) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('"{0}" names {1} held locks on {2}: pick one in the Locks view.', name, held.length, connection.name));
  if (!held.length) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('No held lock named "{0}" on {1}.', name, connection.name));
  return held[0];
}

/** The connection's held locks to pick from, for Force Release from the palette. */
/** Existing locks to join, or a new name typed in. */
async function askLockName(connection: StoreConnection, backend: LockBackend): Promise<Buffer> {
  const locks = (connection.watch?.locks() ?? []).filter((l) => backend.acquirable(l));
  const quickPick = vscode.window.createQuickPick<vscode.QuickPickItem & { name?: Buffer }>();
  quickPick.title = vscode.l10n.t('Acquire lock on {0}', connection.name);
  quickPick.placeholder = vscode.l10n.t('A lock name, as your services name it (e.g. /locks/jobs, lock:jobs)');
  const existing = locks.map((l) => ({ label: displayKey(l.name), description: lockSummary(l), name: l.name }));
  quickPick.items = existing;
  quickPick.onDidChangeValue((value) => {
    const typed = value && !existing.some((e) => e.label === value) ? [{ label: value, description: vscode.l10n.t('new lock'), name: Buffer.from(value) }] : [];
    quickPick.items = [...typed, ...existing];
  });
  return acceptQuickPick(quickPick, () => quickPick.selectedItems[0]?.name ?? (quickPick.value ? Buffer.from(quickPick.value) : undefined));
}

async function askTtl(owner: LockBackend['capabilities']['owner']): Promise<number> {
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
      title,
      prompt,
      value: String(defaultAcquireTtl()),
      validateInput: (v) => (/^\d+$/.test(v) && Number(v) >= 1 ? undefined : vscode.l10n.t('A whole number of seconds, at least 1')),
    }),
  );
  return Number(text);
}

/**
 * A read/write lock is taken for reading or for writing: asked where the store has them (its capability) and the name
 * is one now. Anything else is taken without a mode.
 */
async function askMode(connection: StoreConnection, backend: LockBackend, name: Buffer, shown: LockState | undefined): Promise<LockMode | undefined> {
  if (!backend.capabilities.readWriteLocks) return undefined;
  const lock = shown?.name.equals(name) ? shown : connection.watch?.locks().find((l) => l.name.equals(name));
  if (lock?.kind !== 'readwrite') return undefined;
  const items: (vscode.QuickPickItem & { mode: LockMode })[] = [
    { label: vscode.l10n.t('Read'), description: vscode.l10n.t('shared: other readers hold it at the same time; writers wait'), mode: 'read' },
    { label: vscode.l10n.t('Write'), description: vscode.l10n.t('exclusive: waits until every reader and writer has left'), mode: 'write' },
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: vscode.l10n.t('Lock mode (read or write)'),
    placeHolder: vscode.l10n.t('"{0}" is a read/write lock: take it for reading or for writing', displayKey(name)),
  });
  return orCancel(picked).mode;
}

/** Joining a lock others use makes them wait while you hold: say who, and ask. Reading beside other readers waits for no one. */
async function confirmJoin(connection: StoreConnection, backend: LockBackend, name: Buffer, mode: LockMode | undefined): Promise<boolean> {
  const lock = connection.watch?.locks().find((l) => backend.acquirable(l) && l.name.equals(name));
  if (!lock?.holder) return true;
  if (mode === 'read' && lock.holder.mode === 'read') return true;
  const queued = backend.capabilities.queuedAcquire;
  const join = queued ? vscode.l10n.t('Join Queue') : vscode.l10n.t('Wait');
  const answer = await vscode.window.showWarningMessage(
    queued
      ? vscode.l10n.t('"{0}" is held by {1}, with {2} waiting. Join the queue?', displayKey(name), displayKey(lock.holder.key), lock.waiters.length)
      : vscode.l10n.t('"{0}" is held by {1}. Wait for it?', displayKey(name), holderName(lock, lock.holder)),
    {
      modal: true,
      detail: queued
        ? vscode.l10n.t('You get the lock after everyone ahead of you; while you hold it, everyone behind you waits.')
        : vscode.l10n.t('This store keeps no queue: LockLens tries again until the lock is free, and may get it before other waiters. While you hold it, they wait.'),
    },
    join,
  );
  return answer === join;
}

async function pickHeld(heldLocks: HeldLocks): Promise<HeldLock> {
  const all = heldLocks.all();
  if (all.length === 0) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('You hold no lock from this window.'));
  if (all.length === 1) return all[0];
  const picked = await vscode.window.showQuickPick(
    all.map((h) => ({ label: displayKey(h.name), description: `${h.connection.name} · ${h.hold.fencingToken === null ? vscode.l10n.t('owner {0}', h.hold.owner) : vscode.l10n.t('token {0}', h.hold.fencingToken)}`, held: h })),
    { title: vscode.l10n.t('Release lock') },
  );
  return orCancel(picked).held;
}

/** The leases of the connection's locks, holders first, or a lease ID typed in (hex, as in lock keys). */
async function pickLease(connection: StoreConnection, tree: LockTreeProvider): Promise<string> {
  const items: (vscode.QuickPickItem & { lease: string; position: number })[] = [];
  for (const lock of connection.watch?.locks() ?? []) {
    for (const h of tree.health(connection, lock)) {
      if (!h.member.lease) continue;
      items.push({
        label: h.member.lease,
        description: `${roleLabel(h.role)} · ${displayKey(lock.name)}`,
        detail: [formatTtl(h, 'lease'), ...h.troubles.map((t) => troubleLabel(t, 'lease'))].join(' · '),
        lease: h.member.lease,
        position: h.position,
      });
    }
  }
  items.sort((a, b) => Number(a.position > 0) - Number(b.position > 0));
  const quickPick = vscode.window.createQuickPick<(typeof items)[number]>();
  quickPick.title = vscode.l10n.t('Lease on {0}', connection.name);
  quickPick.placeholder = vscode.l10n.t('Pick a lease, or type a lease ID in hex');
  quickPick.items = items;
  quickPick.matchOnDescription = true;
  // A typed lease ID is offered first as itself, so Enter never picks another lease that merely matches the text.
  quickPick.onDidChangeValue((value) => {
    const typed = parseLeaseHex(value);
    const exact = typed !== undefined && items.some((i) => i.lease === typed);
    quickPick.items = typed && !exact ? [{ label: typed, description: vscode.l10n.t('lease ID as typed'), lease: typed, position: -1 }, ...items] : items;
  });
  return acceptQuickPick(quickPick, () => quickPick.selectedItems[0]?.lease ?? parseLeaseHex(quickPick.value));
}

/** A lease ID from a script or a typed value: hex as in lock keys (`0x` allowed), or a clear error. */
function leaseArgument(text: string): string {
  const lease = parseLeaseHex(text);
  if (!lease) throw new LockLensError('INVALID_ARGUMENT', vscode.l10n.t('"{0}" is not a lease ID: write it in hex, as in lock keys (e.g. 694d7a2b3c01a2f5).', text));
  return lease;
}

function listKeys(keys: readonly Uint8Array[]): string[] {
  const listed = keys.slice(0, MAX_LISTED_KEYS).map((k) => `  ${displayKey(k)}`);
  if (keys.length > MAX_LISTED_KEYS) listed.push(vscode.l10n.t('  … and {0} more', keys.length - MAX_LISTED_KEYS));
  return listed;
}

function revokeDetail(keys: readonly Uint8Array[], effects: ReturnType<typeof revokeEffects>, ttl: number): string {
  const lines = [vscode.l10n.t('etcd deletes every key attached to the lease, at once ({0}s of TTL were left). Its owner loses every lock it held with it.', ttl), ''];
  lines.push(vscode.l10n.t('Keys deleted ({0}):', keys.length), ...listKeys(keys));
  const freed = effects.filter((e) => e.frees);
  if (freed.length) {
    lines.push('', vscode.l10n.t('Locks freed:'));
    for (const e of freed) {
      lines.push(
        e.nextHolder
          ? vscode.l10n.t('  {0} → next holder {1}', displayKey(e.lock.name), displayKey(e.nextHolder.key))
          : vscode.l10n.t('  {0} → free, nobody waiting', displayKey(e.lock.name)),
      );
    }
  }
  const queued = effects.filter((e) => !e.frees);
  if (queued.length) lines.push('', vscode.l10n.t('Also leaves the queue of: {0}', queued.map((e) => displayKey(e.lock.name)).join(', ')));
  return lines.join('\n');
}

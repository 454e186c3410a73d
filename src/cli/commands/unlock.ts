import { userInfo } from 'node:os';
import { errorMessage, LockLensError } from '../../core/errors';
import { displayKey } from '../../core/keys';
import { HistoryStore } from '../../core/recording/historyStore';
import { STORE_KINDS, STORES } from '../../core/stores';
import { isSemaphore, isSingleKey, members, holderCount, type LockMember, type LockState } from '../../core/lockState';
import { entryJson, ownerText } from '../lockJson';
import { confirmOnTerminal } from '../confirm';
import { CONNECTION_HELP, parse, profileFrom, wrap } from '../options';
import type { Command } from './command';

export const unlock: Command = {
  name: 'unlock',
  summary: "force-release someone else's hold on a lock (a stuck holder), the store's safe way",
  help: `Usage: locklens unlock NAME --force [--member KEY] [--yes] [--data DIR [--connection-name C]]

Frees the lock NAME from its current holder, only if it is still the holder this command read (the same key, owner
and token): a lock that changed hands meanwhile is left alone (exit 9).
${STORE_KINDS.map((kind) => wrap(STORES[kind].cli.unlock)).join('\n')}
The holder's process is not told: it may still believe it holds the lock (Curator and kazoo watch the node ahead of
theirs, not their own). Resources that check fencing tokens reject it. Without --yes it shows the holder and asks;
with no terminal to ask on, it refuses.

  --force                required: this releases a lock that is not yours
  --member KEY           a semaphore's permit holder to release, by its key as list shows it: required when several
                         hold its permits (only that one permit is freed)
  --yes                  do not ask
  --data DIR             also note the force release (connection, lock, holder, your OS user, when) in the history
                         locklens serve records in DIR (default $LOCKLENS_DATA): the hold's recorded end then says
                         force-released, and by whom
  --connection-name C    the connection's name in serve's config (default: the host of the URL or endpoint)

${CONNECTION_HELP}`,
  argument: "the lock's NAME",
  options: { force: { type: 'boolean' }, member: { type: 'string' }, yes: { type: 'boolean', short: 'y' }, data: { type: 'string' }, 'connection-name': { type: 'string' } },
  async run(args, connect, out) {
    const { values, positionals } = parse(args, this);
    if (!values.force) throw new LockLensError('INVALID_ARGUMENT', `unlock releases another process's hold: pass --force (a lock you hold with 'locklens acquire' is released when it exits)`);
    const name = Buffer.from(positionals[0]);
    const backend = await connect(values);
    try {
      const listing = await backend.list([name]);
      const lock = heldLockNamed(listing.locks, name);
      const holder = holderToRelease(lock, values.member as string | undefined);
      const shown = entryJson(holder, (id) => listing.lease(id), backend.capabilities);
      const what = backend.describeForceRelease(lock, holder);
      // A ZooKeeper session or a database connection is named as one (a persistent node has none); etcd's lease and
      // Redis's token are the owner.
      const owner = backend.capabilities.owner;
      // A lock-table row's key is only the row's name inside the lock's: the lock's name says it, the owner says who.
      const rowOnly = isSingleKey(lock) && !holder.key.equals(name);
      const holderText = rowOnly ? displayKey(name) : shown.key;
      const who = owner === 'session' || owner === 'connection' ? ownerText(shown, owner) : `owner ${shown.owner}`;
      if (!values.yes) {
        const refusal = `refusing to force-release '${displayKey(name)}'`;
        if (!process.stdin.isTTY) throw new LockLensError('INVALID_ARGUMENT', `${refusal} without confirmation: pass --yes`);
        const data = shown.data ? `, data ${JSON.stringify(shown.data)}` : '';
        out.stderr(`'${displayKey(name)}' is held by ${holderText} (${who}${shown.token === null ? '' : `, token ${shown.token}`}${shown.ttl === null ? '' : `, ttl ${shown.ttl}s`}${data}), ${lock.waiters.length} waiting.`);
        out.stderr(what);
        if (!(await confirmOnTerminal('Force-release it?', refusal))) {
          out.stderr('not released');
          return 1;
        }
      }
      const at = Date.now();
      const result = await backend.forceRelease(lock, holder);
      out.stdout(`released '${displayKey(name)}' ${rowOnly ? `(${who})` : `from ${shown.key} (${who})`}: ${result.action}`);
      for (const k of result.keys) out.stdout(`  ${displayKey(k)}`);
      const data = (values.data as string | undefined) ?? process.env.LOCKLENS_DATA;
      if (data) {
        const note = { connection: connectionName(values), lock: displayKey(name), member: shown.key, owner: shown.owner, by: osUser(), at };
        // The release is done whatever happens here: a note that fails is said, not turned into a failed unlock.
        await HistoryStore.noteForceRelease(data, note).catch((e: unknown) => out.stderr(`locklens: released, but not noted in ${data}: ${errorMessage(e)}`));
      }
      return 0;
    } finally {
      backend.close();
    }
  },
};

/** The held lock with exactly this name; a queue and a single key of the same name both held is ambiguous. */
function heldLockNamed(locks: readonly LockState[], name: Buffer): LockState {
  const named = locks.filter((l) => l.name.equals(name));
  const held = named.filter((l) => l.holder);
  if (held.length === 1) return held[0];
  if (held.length > 1) throw new LockLensError('INVALID_ARGUMENT', `'${displayKey(name)}' names ${held.length} held locks (${held.map((l) => l.kind).join(', ')}): free them with the store's own tools`);
  if (named.some((l) => l.permits?.holdersRecorded === false)) {
    throw new LockLensError('INVALID_ARGUMENT', `'${displayKey(name)}' is a semaphore whose holders the store does not record: no permit can be taken back from one of them`);
  }
  throw new LockLensError('INVALID_ARGUMENT', named.length ? `'${displayKey(name)}' is not held by anyone: nothing to release` : `no lock named '${displayKey(name)}'`);
}

/** The connection as serve's config names it: --connection-name, else the host (and port) of the first endpoint. */
function connectionName(values: Record<string, unknown>): string {
  const given = values['connection-name'];
  if (typeof given === 'string') return given;
  const endpoint = profileFrom(values).endpoints[0];
  try {
    return new URL(endpoint.includes('://') ? endpoint : `tcp://${endpoint}`).host || endpoint;
  } catch {
    return endpoint;
  }
}

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? process.env.USERNAME ?? String(process.getuid?.() ?? 'unknown');
  }
}

/**
 * The holder to free: the lock's, or the semaphore's permit holder named by `member` (its key as listed). A
 * semaphore with several holders needs it: each holds a permit of its own, and none is "the" holder.
 */
function holderToRelease(lock: LockState, member: string | undefined): LockMember {
  const holders = members(lock).slice(0, holderCount(lock));
  if (member === undefined) {
    if (isSemaphore(lock) && holders.length > 1) {
      throw new LockLensError('INVALID_ARGUMENT', `${displayKey(lock.name)} has ${holders.length} permit holders: name the one to release with --member KEY (${holders.map((h) => displayKey(h.key)).join(', ')})`);
    }
    return lock.holder!;
  }
  const named = holders.find((h) => displayKey(h.key) === member);
  if (!named) throw new LockLensError('LOCK_CHANGED', `${member} does not hold ${displayKey(lock.name)} now: nothing was released`);
  return named;
}

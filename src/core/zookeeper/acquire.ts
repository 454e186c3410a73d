/**
 * Taking a lock from LockLens so that it excludes the services that use the same path: the lock recipe every
 * ZooKeeper library shares (an ephemeral sequential child; the lowest sequence holds; each waiter watches only the node
 * just ahead of it, so a release wakes one waiter, not the herd), with the node names of the library the lock already
 * uses (Curator's `_c_<uuid>-lock-`, kazoo's `<hex>__lock__`, the documented recipe's `<guid>-lock-`), so that its
 * clients count us as a contender and we count them.
 *
 * Each acquire has a ZooKeeper session of its own, whose timeout is the TTL asked for: the node goes when the session
 * does, as an etcd key goes with its lease. A hold checks every third of that timeout that its session is heard and its
 * node is there, and says it is lost the moment either fails for good: the session expired, the node was deleted
 * (a force release), or nothing was heard for a whole session timeout (the ensemble has expired it by then).
 *
 * Several locks can instead be taken on one session (`AcquireContext.ownerSession`), as one kazoo client takes several
 * Locks: each hold then deletes only its own node, and the session is its owner's to close.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import * as zookeeper from 'node-zookeeper-client';
import type { AcquireOptions, LockHold, LockMode, QueuePosition } from '../backend';
import { Emitter, type Disposable, type Event } from '../emitter';
import { LockLensError, abortError, errorMessage, throwIfAborted } from '../errors';
import { displayKey } from '../keys';
import { sleep } from '../sleep';
import { layoutById } from '../freeNameLayout';
import { zkCode, type ZkClient } from './client';
import { CONVENTIONS, bySequence, contenderPrefix, familyOf, joinPath, kindOf, parseContender, predecessorIndex, type ContenderName, type Family } from './conventions';
import { ZOOKEEPER_LAYOUTS } from './layouts';
import { zxidNumber } from './lockOfChildren';
import { rootOf } from './znodeTree';

export interface AcquireContext {
  /** Opens a session of its own for one hold, with this timeout asked of the server. */
  readonly openSession: (sessionTimeoutMs: number) => Promise<ZkClient>;
  /** The session of the owner the lock is taken for (`AcquireOptions.owner`), instead of one of its own. */
  readonly ownerSession?: ZkClient;
}

/** What a LockLens contender node holds, as kazoo's identifier or Curator's client IP would: who it is. */
export function contenderData(): Buffer {
  return Buffer.from(`LockLens ${hostname()} pid ${process.pid}`);
}

/** With no event, a waiter still looks again this often (a watch lost in a reconnect, say). */
const RECHECK_MS = 30_000;

interface Contender extends ContenderName {
  readonly name: string;
}

function contendersOf(children: readonly string[]): Contender[] {
  return children.flatMap((name) => {
    const parsed = parseContender(name);
    return parsed ? [{ ...parsed, name }] : [];
  }).sort(bySequence);
}

const FAMILY_NAMES: Record<Family, string> = {
  curator: 'Curator',
  kazoo: 'kazoo',
  recipe: 'the ZooKeeper recipe',
};

/**
 * The family whose node names a new contender takes: the one already there (Curator, else kazoo, else the recipe,
 * when several are mixed), and for a name nobody uses yet the layout asked for, else kazoo's, as before layouts could
 * be chosen (the CLI and VS Code always choose one: see layouts.ts for the default they take).
 */
function layoutOf(name: string, contenders: readonly Contender[], mode: LockMode | undefined, asked: Family | undefined): { family: Family; read: boolean | undefined } {
  const families = new Set(contenders.map((c) => familyOf(c.convention)));
  const free = asked ?? 'kazoo';
  const family: Family = families.has('curator') ? 'curator' : families.has('kazoo') ? 'kazoo' : families.has('recipe') ? 'recipe' : free;
  const kind = kindOf(contenders.map((c) => c.convention));
  const what = `${displayKey(Buffer.from(name))} is a ${FAMILY_NAMES[family]}`;
  if (kind === 'election') throw new LockLensError('INVALID_ARGUMENT', `${what} leader latch (an election): LockLens takes locks, not leadership`);
  if (mode === undefined) {
    if (kind === 'readwrite') throw new LockLensError('INVALID_ARGUMENT', `${what} read/write lock: choose read or write to take it`);
    return { family, read: family === 'curator' ? undefined : false };
  }
  if (mode !== 'read' && mode !== 'write') throw new LockLensError('INVALID_ARGUMENT', `the mode is read or write, not '${String(mode)}'`);
  if (contenders.length > 0 && kind !== 'readwrite') {
    throw new LockLensError('INVALID_ARGUMENT', `${what} lock, not a read/write lock: take it without a read or write mode`);
  }
  if (family === 'recipe') throw new LockLensError('INVALID_ARGUMENT', `${what} lock, which has no read/write form`);
  return { family, read: mode === 'read' };
}

/**
 * Creates our contender. If the create's answer is lost (a reconnect), the node may exist anyway: it is found by its
 * unique prefix, as Curator's protected mode and kazoo do, rather than created twice.
 */
export async function createContender(session: ZkClient, name: string, prefix: string): Promise<string> {
  const path = joinPath(name, prefix);
  try {
    return await session.create(path, contenderData(), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
  } catch (e) {
    if (zkCode(e) === zookeeper.Exception.NO_NODE) {
      await session.mkdirp(name);
      return session.create(path, contenderData(), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
    }
    const found = (await session.children(name).catch(() => undefined))?.find((c) => c.startsWith(prefix));
    if (found) return joinPath(name, found);
    throw e;
  }
}

async function lockedError(session: ZkClient, name: string, holder: Contender): Promise<LockLensError> {
  const read = await session.data(joinPath(name, holder.name)).catch(() => undefined);
  const who = read?.data.length ? ` (${displayKey(read.data.subarray(0, 200))})` : '';
  return new LockLensError('LOCKED', `${displayKey(Buffer.from(name))} is held by ${holder.name}${who}`);
}

/** An acquire under way: its path, and the session it acquires on (`shared`: its owner's, which it never closes). */
export interface Acquiring {
  readonly name: string;
  readonly session: ZkClient;
  readonly shared: boolean;
}

/** Checks an acquire's path and TTL, then opens its session of its own, or takes its owner's. */
export async function startAcquire(ctx: AcquireContext, nameBytes: Uint8Array, options: AcquireOptions): Promise<Acquiring> {
  const name = rootOf(nameBytes);
  if (name === '/') throw new LockLensError('INVALID_ARGUMENT', "the root znode is no lock: name the lock's path");
  if (!(options.ttlSeconds > 0)) throw new LockLensError('INVALID_ARGUMENT', 'the TTL (the session timeout) must be positive');
  throwIfAborted(options.signal);
  const shared = ctx.ownerSession;
  const session = shared ?? (await ctx.openSession(Math.max(1, Math.round(options.ttlSeconds * 1000))));
  return { name, session, shared: shared !== undefined };
}

/**
 * The family a free name's nodes are named in: a layout of the descriptor's (`--layout`: its ids are the families'
 * names), or a convention (a semaphore's own lock is taken in its clients' names: semaphoreAcquire.ts).
 */
function askedFamily(layout: string | undefined): Family | undefined {
  if (layout === undefined) return undefined;
  const convention = CONVENTIONS.find((c) => c === layout);
  return convention ? familyOf(convention) : (layoutById(ZOOKEEPER_LAYOUTS, layout).id as Family);
}

/** Joins the lock at `name` on the acquire's session; on failure nothing of ours is left, its own session closed. */
export async function acquire({ name, session, shared }: Acquiring, options: AcquireOptions): Promise<ZooKeeperHold> {
  let ours: string | undefined;
  try {
    const { family, read } = layoutOf(name, contendersOf((await session.children(name)) ?? []), options.mode, askedFamily(options.layout));
    ours = await createContender(session, name, contenderPrefix(family, randomUUID(), read));
    const ourName = ours.slice(ours.lastIndexOf('/') + 1);
    const created = await session.exists(ours);
    if (!created) throw new LockLensError('LOCK_LOST', `${displayKey(Buffer.from(ours))} was deleted as soon as it was created`);
    const fencingToken = zxidNumber(created.czxid);
    let announced: number | undefined;
    const announce = (ahead: number) => {
      if (announced === ahead) return;
      announced = ahead;
      options.onQueue?.({ key: Buffer.from(ours!), ahead, fencingToken } satisfies QueuePosition);
    };
    for (;;) {
      throwIfAborted(options.signal);
      const contenders = contendersOf((await session.children(name)) ?? []);
      const index = contenders.findIndex((c) => c.name === ourName);
      if (index < 0) throw new LockLensError('LOCK_LOST', `${displayKey(Buffer.from(ours))} was deleted while it waited for the lock`);
      const ahead = predecessorIndex(contenders, index);
      if (ahead < 0) {
        announce(0);
        if (options.signal?.aborted) throw abortError(options.signal);
        return new ZooKeeperHold(session, Buffer.from(name), ours, fencingToken, shared);
      }
      if (options.tryOnly) throw await lockedError(session, name, contenders[0]);
      announce(index);
      const watched = [ahead, ahead - 1].filter((i) => i >= 0).map((i) => joinPath(name, contenders[i].name));
      await waitForChange(session, watched, options.signal);
    }
  } catch (e) {
    // Nothing of ours is left behind: the node goes with the session anyway, the delete only makes it prompt.
    if (ours) await session.remove(ours).catch(() => undefined);
    if (!shared) void session.close();
    throw e;
  }
}

/**
 * Waits until the node ahead or the one ahead of it goes (or changes), the session comes back from a disconnection, or
 * `signal` aborts. The node ahead is the recipe's; the one before it keeps the queue position current when the holder
 * leaves (two ahead of the second waiter) at the cost of waking two waiters a handoff. Watching the lock's whole list
 * of contenders instead woke every waiter at every handoff, the herd the recipe exists to avoid: it made LockLens's
 * handoff 1.2-1.4x kazoo's (docs/BENCHMARKS.md). A contender further ahead leaving moves us up unseen until one of
 * these two goes.
 */
async function waitForChange(session: ZkClient, watched: readonly string[], signal: AbortSignal | undefined): Promise<void> {
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => (wake = resolve));
  const sub = session.onDidChangeState((state) => {
    if (state !== 'disconnected') wake();
  });
  try {
    for (const path of watched) if (!(await session.exists(path, () => wake()))) return;
    await sleep(RECHECK_MS, signal, { wake: woken });
    if (session.state === 'expired') throw new LockLensError('UNREACHABLE', `ZooKeeper expired the session of ${displayKey(Buffer.from(watched[0]))}'s waiter`);
  } finally {
    sub.dispose();
  }
}

/** Nothing heard for this share of a session timeout (round trips, clock rates) already counts as the whole. */
const SESSION_MARGIN = 0.9;

/** A lock held through a session of its own, or its owner's; see the file's comment. */
export class ZooKeeperHold implements LockHold {
  readonly revision = null;
  readonly key: Buffer;
  readonly owner: string;
  private readonly lostEmitter = new Emitter<LockLensError>();
  readonly onDidLose: Event<LockLensError> = this.lostEmitter.event;
  private lostError: LockLensError | undefined;
  private isEnded = false;
  private tickTimer: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private readonly subscription: Disposable;
  private lastFailure: unknown;
  /** One function for every check, so that the library keeps one watcher on our node, not one per check. */
  private readonly onNodeEvent = (event: zookeeper.Event): void => {
    if (event.getType() === zookeeper.Event.NODE_DELETED) this.lose('its node was deleted by someone else (a force release?)');
    else void this.check();
  };

  constructor(
    private readonly session: ZkClient,
    readonly name: Buffer,
    private readonly path: string,
    readonly fencingToken: number | null,
    /** The session is its owner's, holding other locks too: the hold ends its node, never the session. */
    private readonly sharedSession = false,
  ) {
    this.key = Buffer.from(path);
    this.owner = session.sessionId;
    this.subscription = session.onDidChangeState((state) => {
      if (state === 'expired') this.lose(`ZooKeeper expired its session ${this.owner}, which deleted the node`);
      else if (state === 'connected') void this.check();
    });
    this.extend(Date.now());
    void this.check();
  }

  get lost(): LockLensError | undefined {
    return this.lostError;
  }

  /** Released or lost. */
  get ended(): boolean {
    return this.isEnded;
  }

  private get timeoutMs(): number {
    return this.session.sessionTimeoutMs;
  }

  /** The session is alive on the server for a timeout after the server last heard it, which was after `heardBy`. */
  private extend(heardBy: number): void {
    clearTimeout(this.deadline);
    this.deadline = setTimeout(() => {
      const why = this.lastFailure === undefined ? 'ZooKeeper did not answer' : errorMessage(this.lastFailure);
      this.lose(`nothing was heard from ZooKeeper for the session timeout (${Math.round(this.timeoutMs / 1000)} s): the ensemble has expired the session and deleted the node (${why})`);
    }, Math.max(0, heardBy + this.timeoutMs * SESSION_MARGIN - Date.now()));
  }

  /** Looks at our node, watching it: its deletion is the loss of the lock. */
  private async check(): Promise<void> {
    if (this.isEnded) return;
    clearTimeout(this.tickTimer);
    const sentAt = Date.now();
    let again = Math.max(100, Math.floor(this.timeoutMs / 3));
    try {
      const stat = await this.session.exists(this.path, this.onNodeEvent);
      if (this.isEnded) return;
      if (!stat) return this.lose('its node was deleted by someone else (a force release?)');
      this.extend(sentAt);
    } catch (e) {
      this.lastFailure = e;
      again = Math.min(again, 250);
    }
    if (!this.isEnded) this.tickTimer = setTimeout(() => void this.check(), again);
  }

  private lose(why: string): void {
    if (this.isEnded) return;
    this.stop();
    this.lostError = new LockLensError('LOCK_LOST', `lost ${displayKey(this.name)}: ${why}`);
    this.lostEmitter.fire(this.lostError);
    // If the session still lives somewhere (a check that only timed out), it must not keep a node nobody holds.
    this.letGo();
  }

  private stop(): void {
    this.isEnded = true;
    clearTimeout(this.tickTimer);
    clearTimeout(this.deadline);
    this.subscription.dispose();
  }

  /** The connection it was taken through is closing: lost now; closing its own session deletes the node. */
  abandon(error: LockLensError): void {
    if (this.isEnded) return;
    this.stop();
    this.lostError = error;
    this.lostEmitter.fire(error);
    this.letGo();
  }

  /** Ends what keeps our node: our own session, or on a shared one the node itself. */
  private letGo(): void {
    if (this.sharedSession) void this.session.remove(this.path).catch(() => undefined);
    else void this.session.close();
  }

  async release(): Promise<boolean> {
    if (this.isEnded) return false;
    this.stop();
    this.lostEmitter.dispose();
    try {
      // Deleting first says whether it was still ours; closing the session then ends the rest.
      await this.session.remove(this.path);
      return true;
    } catch (e) {
      if (zkCode(e) === zookeeper.Exception.NO_NODE) return false;
      throw e;
    } finally {
      if (!this.sharedSession) await this.session.close();
    }
  }

  dispose(): void {
    void this.release().catch(() => undefined);
  }
}

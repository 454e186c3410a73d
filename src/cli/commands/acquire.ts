import type { LockBackend, LockHold, LockMode, LockOwner, QueuePosition } from '../../core/backend';
import { LockLensError } from '../../core/errors';
import { displayKey } from '../../core/keys';
import { STORE_KINDS, STORES, storeOf } from '../../core/stores';
import { layoutIds } from '../../core/freeNameLayout';
import { freeNameLayouts } from '../freeNameLayouts';
import { GatedCommand } from '../gatedCommand';
import { CONNECTION_HELP, parseDuration, parse, parsePositiveInt, wrap } from '../options';
import type { Command, Output } from './command';

/** What each store's fencing token is, or that it has none; and when each store's hold counts as lost. */
const FENCING_TOKENS = STORE_KINDS.map((kind) => `${STORES[kind].displayName}: ${STORES[kind].cli.fencingToken ?? 'none'}`).join('; ');
/** Each store's layouts of a free NAME, and why its default is the default. */
const INDENT = ' '.repeat(17);
const LAYOUTS = STORE_KINDS.map((kind) => INDENT + wrap(`${STORES[kind].displayName}: ${layoutIds(STORES[kind].freeNameLayouts)}: the default because ${STORES[kind].freeNameLayouts.why()}.`, INDENT)).join('\n');
const LOSSES = STORE_KINDS.flatMap((kind) => (STORES[kind].cli.lost ? [`${STORES[kind].displayName}: ${STORES[kind].cli.lost}`] : [])).join('; ');

/** etcdctl lock's default, so a crashed holder frees the lock as soon as with etcdctl. */
const DEFAULT_TTL = 10;

export const acquire: Command = {
  name: 'acquire',
  summary: "take a lock the way its store's clients do (etcd: Go's Mutex and etcdctl lock); run a command while holding it",
  help: `Usage: locklens acquire NAME [NAME...] [--ttl S] [--try] [--timeout D] [--mode read|write] [--permits N] [--layout L] [-- COMMAND ARGS...]

${STORE_KINDS.map((kind) => wrap(STORES[kind].cli.acquire)).join('\n')}

Several NAMEs are taken one after the other in the order given, as one owner, and all are held while COMMAND runs;
while it waits for a NAME it holds the ones before it, as any program taking locks in order does (two such programs
taking the same NAMEs in opposite orders deadlock: 'locklens diagnose' names the cycle). They are released in
reverse order when COMMAND exits or locklens is interrupted, and a failure to take one releases those already held.
With a COMMAND, ETCD_LOCK_KEY, ETCD_LOCK_REV and LOCKLENS_FENCING_TOKEN are the last NAME's, LOCKLENS_LOCK_KEYS holds
every key (one a line, in order) and LOCKLENS_FENCING_TOKENS every fencing token (space-separated) where there are.
${STORE_KINDS.map((kind) => wrap(STORES[kind].cli.severalNames)).join('\n')}

A read/write lock is taken with --mode where the store has them (above): read shares it with other readers, write waits
until every reader and writer has left; a free NAME becomes one. The library's own readers and writers on the same
name are excluded as by the library itself, and woken when locklens releases.
Once held it prints the key and the fencing token (${FENCING_TOKENS}), then:
  - with a COMMAND: runs it with ETCD_LOCK_KEY (the key or node path), ETCD_LOCK_REV (etcd: the revision the lock
    was taken at, as etcdctl lock sets it) and LOCKLENS_FENCING_TOKEN (the fencing token, where there is one) in
    its environment, releases when it exits, and exits with its code. The command's process is started while
    waiting and held at a gate until the lock is held, so it starts within a pipe write of the handoff; it never
    runs without the lock.
  - without: holds until interrupted (Ctrl-C / SIGTERM), then releases.
If the lock (with several NAMEs, any of them) is lost while held (${LOSSES}), the command gets SIGTERM (SIGKILL 10 s
later if it is still running) and locklens exits 7. As with etcdctl, processes the command started itself are its to stop.

  --ttl S        lease TTL in seconds (default ${DEFAULT_TTL}, as etcdctl lock); ZooKeeper: the session timeout asked for
  --try          do not wait: exit 6 at once if the lock is held
  --timeout D    give up waiting after D (e.g. 30s; for several NAMEs, for all of them); exit 3
  --mode M       read or write: take a read/write lock (Redis, one instance or a cluster; ZooKeeper); without it, a
                 read/write lock is refused (exit 2), as is --mode on another lock or store. Redis: a read hold's
                 lease is Redisson's 30 s watchdog whatever --ttl says: every reader's renewal sets every reader's
                 lease
  --permits N    a semaphore's limit where its store does not keep it (redis-semaphore's semaphore:KEY; every
                 client's call states it): one permit is taken while fewer than N are held; a free NAME becomes one
  --layout L     the layout a NAME that holds no lock is taken in, so that the services that use that name count it
                 (a Redisson client fails with WRONGTYPE on a token's string, say). Without it: the layout of the other
                 locks under the NAME's prefix (up to its last separator) when they all have one, else the store's
                 default; stderr says which it took and why. A NAME that holds a lock is taken in that lock's layout
                 (a --layout that contradicts it exits 2). The layouts:
${LAYOUTS}

${CONNECTION_HELP}`,
  argument: "the lock's NAME",
  repeatable: true,
  options: { ttl: { type: 'string' }, try: { type: 'boolean' }, timeout: { type: 'string' }, mode: { type: 'string' }, permits: { type: 'string' }, layout: { type: 'string' } },
  async run(argv, connect, out) {
    const dash = argv.indexOf('--');
    const command = dash >= 0 ? argv.slice(dash + 1) : [];
    const { values, positionals } = parse(dash >= 0 ? argv.slice(0, dash) : argv, this);
    if (dash >= 0 && command.length === 0) throw new LockLensError('INVALID_ARGUMENT', "nothing after '--': give the command to run");
    const ttl = parsePositiveInt(values.ttl as string | undefined, '--ttl', DEFAULT_TTL);
    const timeoutMs = values.timeout === undefined ? undefined : parseDuration(values.timeout as string, '--timeout');
    const mode = parseMode(values.mode as string | undefined);
    const permitLimit = values.permits === undefined ? undefined : parsePositiveInt(values.permits as string, '--permits', 1);

    if (permitLimit !== undefined && values.layout !== undefined) throw new LockLensError('INVALID_ARGUMENT', "--layout chooses a lock's layout; --permits takes a semaphore's permit: give one of them");
    const names = positionals.map((name) => Buffer.from(name));
    const repeated = positionals.find((name, i) => positionals.indexOf(name) !== i);
    if (repeated !== undefined) throw new LockLensError('INVALID_ARGUMENT', `${repeated} is named twice: a lock is taken once`);

    const backend = await connect(values);
    // A semaphore's permit (--permits) is taken in its clients' layout, which the store's semaphore recipe knows.
    const layouts = permitLimit !== undefined ? names.map(() => undefined) : await freeNameLayouts(backend, names, values.layout as string | undefined, mode, out).catch((e: unknown) => {
      backend.close();
      throw e;
    });
    // Redisson's readers share one lease; elsewhere (ZooKeeper: a session of the hold's own) --ttl is the reader's own.
    const readTtlIgnored = storeOf(backend.kind).cli.readTtlIgnored;
    if (mode === 'read' && values.ttl !== undefined && readTtlIgnored) out.stderr(`locklens: ${readTtlIgnored}`);
    const stop = new AbortController();
    // A NAME already held that is lost while a later one is waited for ends the wait: the command must never run
    // believing it holds them all.
    const lost = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => stop.abort(new LockLensError('CANCELLED', `interrupted by ${signal}`));
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    signals.forEach((s) => process.on(s, onSignal));
    let gate: GatedCommand | undefined;
    let owner: LockOwner | undefined;
    const holds: LockHold[] = [];
    let released: Promise<unknown> | undefined;
    const release = () => (released ??= releaseInReverse(holds, owner));
    try {
      const ends = [stop.signal, ...(names.length > 1 ? [lost.signal] : []), ...(timeoutMs === undefined ? [] : [timeoutSignal(timeoutMs)])];
      const signal = ends.length === 1 ? ends[0] : AbortSignal.any(ends);
      if (names.length > 1) owner = await openOwner(backend, ttl);
      const options = { ttlSeconds: ttl, signal, tryOnly: values.try === true, mode, owner, permitLimit };
      for (const [i, name] of names.entries()) {
        const last = i === names.length - 1;
        const hold = await backend.acquire(name, {
          ...options,
          layout: layouts[i],
          onQueue: (position) => {
            const { key, ahead } = position;
            if (last && command.length && !gate) gate = new GatedCommand(command, lockEnv(holds, position));
            // The lock is ours as of `revision`, told before the store sets up the hold (its guard): the command runs
            // now, and everything else happens after it has started (see docs/BENCHMARKS.md, the handoff).
            if (last && ahead === 0 && position.revision !== undefined && !signal.aborted) gate?.open(position.revision);
            if (ahead > 0 && (process.stderr.isTTY || holds.length > 0)) out.stderr(`waiting${holds.length ? ` for ${displayKey(key)}` : ''}: ${ahead} ahead in the queue`);
          },
        });
        holds.push(hold);
        hold.onDidLose((error) => lost.abort(error));
        if (!last) out.stderr(`locklens: holding ${displayKey(name)}: ${displayKey(hold.key)}, ${tokenText(hold)}, owner ${hold.owner}`);
      }
      if (command.length) gate ??= new GatedCommand(command, lockEnv(holds.slice(0, -1), holds[holds.length - 1]));
      return await holdWhile(holds, gate, stop.signal, out, release);
    } catch (e) {
      // The gate opened when the store said the lock was ours; if taking the hold failed after all, the command
      // must not go on running.
      if (gate?.opened) gate.stop();
      throw e;
    } finally {
      signals.forEach((s) => process.off(s, onSignal));
      await gate?.close();
      await release();
      backend.close();
    }
  },
};

/** The one owner several NAMEs are taken as; a store that has none says why in its help text. */
function openOwner(backend: LockBackend, ttl: number): Promise<LockOwner> {
  if (!backend.openOwner) throw new LockLensError('INVALID_ARGUMENT', `several NAMEs: ${storeOf(backend.kind).cli.severalNames}`);
  return backend.openOwner(ttl);
}

/** Last taken, first released; then the owner, which ends whatever is left (a release that failed). */
async function releaseInReverse(holds: readonly LockHold[], owner: LockOwner | undefined): Promise<void> {
  for (const hold of [...holds].reverse()) await hold.release().catch(() => undefined);
  await owner?.close().catch(() => undefined);
}

function parseMode(value: string | undefined): LockMode | undefined {
  if (value === undefined || value === 'read' || value === 'write') return value;
  throw new LockLensError('INVALID_ARGUMENT', `--mode ${value}: read or write`);
}

/**
 * The environment known when the command is started: the last lock's key and token (`last`, held or queued), and with
 * several locks every key and token. ETCD_LOCK_REV comes through the gate once the last lock is held.
 */
function lockEnv(before: readonly LockHold[], last: Pick<QueuePosition, 'key' | 'fencingToken'>): NodeJS.ProcessEnv {
  const token = (t: number | null) => (t === null ? {} : { LOCKLENS_FENCING_TOKEN: String(t) });
  const env: NodeJS.ProcessEnv = { ...process.env, ETCD_LOCK_KEY: displayKey(last.key), ...token(last.fencingToken) };
  if (before.length === 0) return env;
  const all = [...before, last];
  env.LOCKLENS_LOCK_KEYS = all.map((h) => displayKey(h.key)).join('\n');
  if (all.every((h) => h.fencingToken !== null)) env.LOCKLENS_FENCING_TOKENS = all.map((h) => h.fencingToken).join(' ');
  return env;
}

function tokenText(hold: LockHold): string {
  return hold.fencingToken === null ? 'no fencing token (this store has none)' : `fencing token ${hold.fencingToken}`;
}

function timeoutSignal(ms: number): AbortSignal {
  const c = new AbortController();
  setTimeout(() => c.abort(new LockLensError('TIMEOUT', `lock not acquired within ${ms} ms`)), ms).unref();
  return c.signal;
}

/**
 * Holds the locks while the command runs, or until interrupted or one is lost. Resolves to the exit code. `release`
 * starts the release the moment the command exits, in the child's exit event itself: the next holder waits on
 * nothing else.
 */
async function holdWhile(holds: readonly LockHold[], gate: GatedCommand | undefined, interrupted: AbortSignal, out: Output, release: () => unknown): Promise<number> {
  const last = holds[holds.length - 1];
  if (interrupted.aborted && !gate?.opened) return 130; // interrupted while the lock was being taken: the command never starts
  const lostBefore = holds.find((hold) => hold.lost)?.lost;
  if (lostBefore) throw lostBefore; // lost while a later one was taken (the caller stops a gate that opened)
  if (gate) {
    gate.onExit(release);
    gate.open(last.revision);
    out.stderr(`locklens: holding ${displayKey(last.key)} (${tokenText(last)})`);
  } else {
    for (const hold of holds) {
      out.stdout(displayKey(hold.key));
      out.stdout(tokenText(hold));
    }
  }
  const outcome = await new Promise<{ kind: 'exit'; code: number } | { kind: 'lost'; error: LockLensError } | { kind: 'interrupted' }>((resolve) => {
    for (const hold of holds) hold.onDidLose((error) => resolve({ kind: 'lost', error }));
    if (interrupted.aborted) resolve({ kind: 'interrupted' });
    interrupted.addEventListener('abort', () => resolve({ kind: 'interrupted' }), { once: true });
    void gate?.exited.then((code) => resolve({ kind: 'exit', code }));
  });
  // A lost lock or an interrupt ends the command: it must not go on believing it holds the lock.
  switch (outcome.kind) {
    case 'exit':
      return outcome.code;
    case 'lost':
      gate?.stop();
      await gate?.exited;
      throw outcome.error;
    case 'interrupted':
      gate?.stop();
      await gate?.exited;
      return 130;
  }
}

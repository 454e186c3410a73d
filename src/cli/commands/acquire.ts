import type { LockHold, LockMode } from '../../core/backend';
import { LockLensError } from '../../core/errors';
import { displayKey } from '../../core/keys';
import { STORE_KINDS, STORES, storeOf } from '../../core/stores';
import { GatedCommand } from '../gatedCommand';
import { CONNECTION_HELP, parseDuration, parse, parsePositiveInt, wrap } from '../options';
import type { Command, Output } from './command';

/** What each store's fencing token is, or that it has none; and when each store's hold counts as lost. */
const FENCING_TOKENS = STORE_KINDS.map((kind) => `${STORES[kind].displayName}: ${STORES[kind].cli.fencingToken ?? 'none'}`).join('; ');
const LOSSES = STORE_KINDS.flatMap((kind) => (STORES[kind].cli.lost ? [`${STORES[kind].displayName}: ${STORES[kind].cli.lost}`] : [])).join('; ');

/** etcdctl lock's default, so a crashed holder frees the lock as soon as with etcdctl. */
const DEFAULT_TTL = 10;

export const acquire: Command = {
  name: 'acquire',
  summary: "take a lock the way its store's clients do (etcd: Go's Mutex and etcdctl lock); run a command while holding it",
  help: `Usage: locklens acquire NAME [--ttl S] [--try] [--timeout D] [--mode read|write] [-- COMMAND ARGS...]

${STORE_KINDS.map((kind) => wrap(STORES[kind].cli.acquire)).join('\n')}

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
If the lock is lost while held (${LOSSES}), the command gets SIGTERM (SIGKILL 10 s later if it is still running) and
locklens exits 7. As with etcdctl, processes the command started itself are its to stop.

  --ttl S        lease TTL in seconds (default ${DEFAULT_TTL}, as etcdctl lock); ZooKeeper: the session timeout asked for
  --try          do not wait: exit 6 at once if the lock is held
  --timeout D    give up waiting after D (e.g. 30s); exit 3
  --mode M       read or write: take a read/write lock (Redis, one instance or a cluster; ZooKeeper); without it, a
                 read/write lock is refused (exit 2), as is --mode on another lock or store. Redis: a read hold's
                 lease is Redisson's 30 s watchdog whatever --ttl says: every reader's renewal sets every reader's
                 lease

${CONNECTION_HELP}`,
  argument: "the lock's NAME",
  options: { ttl: { type: 'string' }, try: { type: 'boolean' }, timeout: { type: 'string' }, mode: { type: 'string' } },
  async run(argv, connect, out) {
    const dash = argv.indexOf('--');
    const command = dash >= 0 ? argv.slice(dash + 1) : [];
    const { values, positionals } = parse(dash >= 0 ? argv.slice(0, dash) : argv, this);
    if (dash >= 0 && command.length === 0) throw new LockLensError('INVALID_ARGUMENT', "nothing after '--': give the command to run");
    const ttl = parsePositiveInt(values.ttl as string | undefined, '--ttl', DEFAULT_TTL);
    const timeoutMs = values.timeout === undefined ? undefined : parseDuration(values.timeout as string, '--timeout');
    const mode = parseMode(values.mode as string | undefined);

    const backend = await connect(values);
    // Redisson's readers share one lease; elsewhere (ZooKeeper: a session of the hold's own) --ttl is the reader's own.
    const readTtlIgnored = storeOf(backend.kind).cli.readTtlIgnored;
    if (mode === 'read' && values.ttl !== undefined && readTtlIgnored) out.stderr(`locklens: ${readTtlIgnored}`);
    const stop = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => stop.abort(new LockLensError('CANCELLED', `interrupted by ${signal}`));
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    signals.forEach((s) => process.on(s, onSignal));
    let gate: GatedCommand | undefined;
    let hold: LockHold | undefined;
    let released: Promise<unknown> | undefined;
    const release = () => (released ??= hold ? hold.release().catch(() => undefined) : Promise.resolve());
    try {
      const signal = timeoutMs === undefined ? stop.signal : AbortSignal.any([stop.signal, timeoutSignal(timeoutMs)]);
      hold = await backend.acquire(Buffer.from(positionals[0]), {
        ttlSeconds: ttl,
        signal,
        tryOnly: values.try === true,
        mode,
        onQueue: (position) => {
          const { key, ahead, fencingToken } = position;
          if (command.length && !gate) gate = new GatedCommand(command, lockEnv(displayKey(key), fencingToken));
          // The lock is ours as of `revision`, told before the store sets up the hold (its guard): the command runs
          // now, and everything else happens after it has started (see docs/BENCHMARKS.md, the handoff).
          if (ahead === 0 && position.revision !== undefined && !signal.aborted) gate?.open(position.revision);
          if (ahead > 0 && process.stderr.isTTY) out.stderr(`waiting: ${ahead} ahead in the queue`);
        },
      });
      if (command.length) gate ??= new GatedCommand(command, lockEnv(displayKey(hold.key), hold.fencingToken));
      return await holdWhile(hold, gate, stop.signal, out, release);
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

function parseMode(value: string | undefined): LockMode | undefined {
  if (value === undefined || value === 'read' || value === 'write') return value;
  throw new LockLensError('INVALID_ARGUMENT', `--mode ${value}: read or write`);
}

/** The environment known when the command is started; ETCD_LOCK_REV comes through the gate once the lock is held. */
function lockEnv(key: string, fencingToken: number | null): NodeJS.ProcessEnv {
  return { ...process.env, ETCD_LOCK_KEY: key, ...(fencingToken === null ? {} : { LOCKLENS_FENCING_TOKEN: String(fencingToken) }) };
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
 * Holds the lock while the command runs, or until interrupted or lost. Resolves to the exit code. `release` starts
 * the release the moment the command exits, in the child's exit event itself: the next holder waits on nothing else.
 */
async function holdWhile(hold: LockHold, gate: GatedCommand | undefined, interrupted: AbortSignal, out: Output, release: () => unknown): Promise<number> {
  const key = displayKey(hold.key);
  if (interrupted.aborted && !gate?.opened) return 130; // interrupted while the lock was being taken: the command never starts
  if (gate) {
    gate.onExit(release);
    gate.open(hold.revision);
    out.stderr(`locklens: holding ${key} (${tokenText(hold)})`);
  } else {
    out.stdout(key);
    out.stdout(tokenText(hold));
  }
  const outcome = await new Promise<{ kind: 'exit'; code: number } | { kind: 'lost'; error: LockLensError } | { kind: 'interrupted' }>((resolve) => {
    hold.onDidLose((error) => resolve({ kind: 'lost', error }));
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

import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { LockLensError } from '../../core/errors';
import { displayKey } from '../../core/keys';
import { Mutex, type Hold } from '../../core/mutex';
import { Session } from '../../core/session';
import { CONNECTION_HELP, parseDuration, parse, parsePositiveInt } from '../options';
import type { Command } from './command';

/** etcdctl lock's default, so a crashed holder frees the lock as soon as with etcdctl. */
const DEFAULT_TTL = 10;

export const acquire: Command = {
  name: 'acquire',
  summary: "take a lock the way Go's concurrency.Mutex and etcdctl lock do; run a command while holding it",
  help: `Usage: locklens acquire NAME [--ttl S] [--try] [--timeout D] [-- COMMAND ARGS...]

Queues for the lock NAME with the key NAME/<lease hex> (compatible with Go concurrency.Mutex, etcdctl lock and
jetcd on the same name). Once held it prints the key and the fencing token (the key's create revision), then:
  - with a COMMAND: runs it with ETCD_LOCK_KEY, ETCD_LOCK_REV (as etcdctl lock sets them) and
    LOCKLENS_FENCING_TOKEN in its environment, releases when it exits, and exits with its code;
  - without: holds until interrupted (Ctrl-C / SIGTERM), then releases.
If the lock is lost while held (lease revoked or expired), the command gets SIGTERM and locklens exits 7.

  --ttl S        lease TTL in seconds (default ${DEFAULT_TTL}, as etcdctl lock)
  --try          do not wait: exit 6 at once if the lock is held
  --timeout D    give up waiting after D (e.g. 30s); exit 3

${CONNECTION_HELP}`,
  options: { ttl: { type: 'string' }, try: { type: 'boolean' }, timeout: { type: 'string' } },
  async run(argv, connect, out) {
    const dash = argv.indexOf('--');
    const command = dash >= 0 ? argv.slice(dash + 1) : [];
    const { values, positionals } = parse(dash >= 0 ? argv.slice(0, dash) : argv, this.options, 1);
    if (dash >= 0 && command.length === 0) throw new LockLensError('INVALID_ARGUMENT', "nothing after '--': give the command to run");
    const ttl = parsePositiveInt(values.ttl as string | undefined, '--ttl', DEFAULT_TTL);
    const timeoutMs = values.timeout === undefined ? undefined : parseDuration(values.timeout as string, '--timeout');

    const conn = await connect(values);
    const session = await Session.create(conn, ttl).catch((e) => {
      conn.close();
      throw e;
    });
    const stop = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => stop.abort(new LockLensError('CANCELLED', `interrupted by ${signal}`));
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    signals.forEach((s) => process.on(s, onSignal));
    try {
      const mutex = new Mutex(session, positionals[0]);
      const signal = timeoutMs === undefined ? stop.signal : AbortSignal.any([stop.signal, timeoutSignal(timeoutMs)]);
      const hold = values.try
        ? await mutex.tryAcquire()
        : await mutex.acquire({
            signal,
            onQueue: (ahead) => process.stderr.isTTY && ahead > 0 && out.stderr(`waiting: ${ahead} ahead in the queue`),
          });
      return await holdWhile(hold, command, stop.signal, out);
    } finally {
      signals.forEach((s) => process.off(s, onSignal));
      await session.revoke().catch(() => undefined);
      conn.close();
    }
  },
};

function timeoutSignal(ms: number): AbortSignal {
  const c = new AbortController();
  setTimeout(() => c.abort(new LockLensError('TIMEOUT', `lock not acquired within ${ms} ms`)), ms).unref();
  return c.signal;
}

/** Holds the lock while the command runs (or until interrupted), then releases it. Resolves to the exit code. */
async function holdWhile(hold: Hold, command: string[], interrupted: AbortSignal, out: { stdout(t: string): void; stderr(t: string): void }): Promise<number> {
  const key = displayKey(hold.key);
  let child: ChildProcess | undefined;
  if (command.length) {
    // Spawn first: the time between the predecessor's delete and this start is the handoff latency users feel.
    child = spawn(command[0], command.slice(1), {
      stdio: 'inherit',
      env: { ...process.env, ETCD_LOCK_KEY: key, ETCD_LOCK_REV: String(hold.fencingToken), LOCKLENS_FENCING_TOKEN: String(hold.fencingToken) },
    });
    out.stderr(`locklens: holding ${key} (fencing token ${hold.fencingToken})`);
  } else {
    out.stdout(key);
    out.stdout(`fencing token ${hold.fencingToken}`);
  }
  const outcome = await new Promise<{ kind: 'exit'; code: number } | { kind: 'lost'; error: LockLensError } | { kind: 'interrupted' }>((resolve) => {
    hold.onDidLose((error) => resolve({ kind: 'lost', error }));
    if (interrupted.aborted) resolve({ kind: 'interrupted' });
    interrupted.addEventListener('abort', () => resolve({ kind: 'interrupted' }), { once: true });
    child?.once('exit', (code, signal) => resolve({ kind: 'exit', code: code ?? 128 + signalNumber(signal) }));
    child?.once('error', (e) => resolve({ kind: 'lost', error: new LockLensError('INVALID_ARGUMENT', `cannot run '${command[0]}': ${e.message}`) }));
  });
  if (outcome.kind !== 'exit' && child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }
  await hold.release().catch(() => undefined);
  if (outcome.kind === 'lost') throw outcome.error;
  if (outcome.kind === 'interrupted') return 130;
  return outcome.code;
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return signal ? constants.signals[signal] : 1;
}

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EtcdConnection } from '../src/core/etcd/connect';
import { readPrefix } from '../src/core/etcd/keyspace';
import { Mutex } from '../src/core/etcd/mutex';
import { Session } from '../src/core/etcd/session';
import { sleep } from '../src/core/sleep';
import { CLI } from './paths';
import { percentile, round } from './stats';

export type Tool = 'locklens' | 'etcdctl';

/** The holder's command of a handoff round: appends a start and an end stamp (`S <ns>`, `E <ns>`, from `date`) to `stamps`. */
export function stampCommand(stamps: string): string[] {
  return ['sh', '-c', `echo S $(date +%s%N) >> ${stamps}; echo E $(date +%s%N) >> ${stamps}`];
}

/**
 * The handoffs (ms) in a stamps file's text: each gap from one holder's E to the next holder's S. Mutual exclusion
 * makes the file S E S E …; anything else means two holders overlapped, and `tool` is named in the error.
 */
export function handoffGaps(tool: string, text: string): number[] {
  const lines = text.trim().split('\n').map((l) => l.split(' '));
  const gaps: number[] = [];
  for (let i = 1; i + 1 < lines.length; i += 2) {
    if (lines[i][0] !== 'E' || lines[i + 1][0] !== 'S') throw new Error(`${tool}: holders overlapped (${lines.slice(0, i + 2).join(' | ')})`);
    gaps.push(Number(BigInt(lines[i + 1][1]) - BigInt(lines[i][1])) / 1e6);
  }
  return gaps;
}

/**
 * A handoff scenario's figures: LockLens's p50/p99 next to the other tool's (`<other>_p50`, `<other>_p99`) and the
 * ratios of LockLens's over the other's, from the samples of both.
 */
export function handoffFigures(contenders: number, locklens: readonly number[], other: readonly number[], otherKey: string): Record<string, number> {
  const ours = (q: number) => percentile(locklens, q);
  const theirs = (q: number) => percentile(other, q);
  return {
    contenders,
    samples: locklens.length,
    locklens_p50: round(ours(50)),
    locklens_p99: round(ours(99)),
    [`${otherKey}_p50`]: round(theirs(50)),
    [`${otherKey}_p99`]: round(theirs(99)),
    ratio_p50: round(ours(50) / theirs(50)),
    ratio_p99: round(ours(99) / theirs(99)),
  };
}

export interface RoundOptions {
  /** Runs each contender through another program (bench/traceHandoff.ts: strace). */
  readonly wrap?: (bin: string, args: string[]) => [string, string[]];
  /** The stamps file's text: `S <ns>` and `E <ns>` lines, in order. */
  readonly onStamps?: (text: string) => void;
  /** The contenders' environment (the bench's own when absent). */
  readonly env?: NodeJS.ProcessEnv;
  /** The LockLens CLI a 'locklens' contender runs (this build's when absent; bench/handoffBuilds.ts: another build's). */
  readonly cli?: string;
}

/** Runs one contender to its end; rejects, naming `tool` and the end of what it said on stderr, unless it exits 0. */
function runContender(tool: string, [bin, args]: [string, string[]], env: NodeJS.ProcessEnv | undefined): Promise<void> {
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
  return new Promise<void>((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${tool} exited ${code}: ${err.slice(-500)}`)))),
  );
}

/**
 * A contender's program on a store reached by URL: the CLI (`tool` 'locklens'), or the store's Python reference client
 * (`script`, run by Debian's /usr/bin/python3, whose python3-* packages these are) given `server`, the lock's name
 * and the command.
 */
export function urlContender(tool: string, url: string, name: string, script: string, server: string): (command: string[]) => [string, string[]] {
  return (command) =>
    tool === 'locklens'
      ? [process.execPath, [CLI, 'acquire', name, `--url=${url}`, '--', ...command]]
      : ['/usr/bin/python3', ['-c', script, server, name, ...command]];
}

/**
 * One round of a handoff scenario, whatever the store: `contenders` processes of one tool (`argv` gives a contender's
 * program and arguments for the holder's command) contend for one lock that a barrier holds. `releaseBarrier` waits
 * until every contender waits, then lets the lock go, so that process start-up (Go's or Python's is lighter than
 * Node's) is not measured as handoff. Each holder's command stamps S and E into one file; the handoffs are the gaps.
 */
export async function stampedRound(
  tool: string,
  contenders: number,
  argv: (command: string[]) => [string, string[]],
  releaseBarrier: () => Promise<void>,
  options: RoundOptions = {},
): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'locklens-handoff-'));
  const stamps = join(dir, 'stamps');
  try {
    const program = () => (options.wrap ? options.wrap(...argv(stampCommand(stamps))) : argv(stampCommand(stamps)));
    const runs = Promise.all(Array.from({ length: contenders }, () => runContender(tool, program(), options.env)));
    // A contender that fails while the barrier still holds ends the round with its error, not a wait for ever.
    await Promise.race([releaseBarrier(), runs]);
    await runs;
    const text = readFileSync(stamps, 'utf8');
    options.onStamps?.(text);
    return handoffGaps(tool, text);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * etcd's round: `contenders` processes of one tool contend on one fresh lock name, each holding for ~0 ms while its
 * command appends a start and an end timestamp (ns, from `date`) to a shared file. Mutual exclusion makes the file
 * S E S E …; a handoff is the gap from one holder's E to the next holder's S: release, etcd commit, watch delivery,
 * the waiter's reaction and its child's start, exactly what a user of either tool waits for.
 *
 * The barrier holder is the core mutex, released once every contender has queued: only waiters that are idle in the
 * queue hand over.
 */
export async function handoffRound(
  tool: Tool,
  conn: EtcdConnection,
  endpoint: string,
  contenders: number,
  name: string,
  options: RoundOptions = {},
): Promise<number[]> {
  const argv = (command: string[]): [string, string[]] =>
    tool === 'locklens'
      ? [process.execPath, [options.cli ?? CLI, 'acquire', name, `--endpoints=${endpoint}`, '--', ...command]]
      : ['etcdctl', [`--endpoints=${endpoint}`, 'lock', name, '--', ...command]];
  const session = await Session.create(conn, 30);
  const barrier = await new Mutex(session, name).acquire();
  try {
    return await stampedRound(tool, contenders, argv, async () => {
      while ((await readPrefix(conn, Buffer.from(`${name}/`))).records.length < contenders + 1) await sleep(20);
      await sleep(300); // let every waiter settle into its watch
      await barrier.release();
    }, { env: { ...process.env, ETCDCTL_API: '3' }, ...options });
  } finally {
    await session.revoke();
  }
}

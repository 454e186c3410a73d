import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EtcdConnection } from '../src/core/etcd/connection';
import { readPrefix } from '../src/core/etcd/keyspace';
import { Mutex } from '../src/core/etcd/mutex';
import { Session } from '../src/core/etcd/session';
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
}

/**
 * One round: `contenders` processes of one tool contend on one fresh lock name, each holding for ~0 ms while its
 * command appends a start and an end timestamp (ns, from `date`) to a shared file. Mutual exclusion makes the file
 * S E S E …; a handoff is the gap from one holder's E to the next holder's S: release, etcd commit, watch delivery,
 * the waiter's reaction and its child's start, exactly what a user of either tool waits for.
 *
 * A barrier holder (the core mutex) holds the lock until every contender has queued, so that process start-up (Go's
 * is lighter than Node's) is not measured as handoff: only waiters that are idle in the queue hand over.
 */
export async function handoffRound(
  tool: Tool,
  conn: EtcdConnection,
  endpoint: string,
  contenders: number,
  name: string,
  options: RoundOptions = {},
): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'locklens-handoff-'));
  const stamps = join(dir, 'stamps');
  const command = stampCommand(stamps);
  const argv = (): [string, string[]] =>
    tool === 'locklens'
      ? [process.execPath, [CLI, 'acquire', name, `--endpoints=${endpoint}`, '--', ...command]]
      : ['etcdctl', [`--endpoints=${endpoint}`, 'lock', name, '--', ...command]];
  const session = await Session.create(conn, 30);
  const barrier = await new Mutex(session, name).acquire();
  try {
    const runs = Promise.all(
      Array.from({ length: contenders }, () => {
        const [bin, args] = options.wrap ? options.wrap(...argv()) : argv();
        const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ETCDCTL_API: '3' } });
        return new Promise<void>((resolve, reject) =>
          child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${tool} exited ${code}`)))),
        );
      }),
    );
    while ((await readPrefix(conn, Buffer.from(`${name}/`))).records.length < contenders + 1) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300)); // let every waiter settle into its watch
    await barrier.release();
    await runs;
    const text = readFileSync(stamps, 'utf8');
    options.onStamps?.(text);
    return handoffGaps(tool, text);
  } finally {
    await session.revoke();
    rmSync(dir, { recursive: true, force: true });
  }
}

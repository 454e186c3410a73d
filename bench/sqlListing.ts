import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { LockBackend } from '../src/core/backend';
import { percentile, round } from './stats';

/**
 * What the SQL stores' list scenarios share: timing LockLens's reads in process, the reference client's reads of the
 * same statements in a Python process of its own (Debian's /usr/bin/python3 with python3-psycopg2 or python3-pymysql),
 * and the figures both give.
 */

const run = promisify(execFile);

/** Reads before the timed ones (connections warm, statements planned, JIT-compiled code), on both sides. */
const WARMUP = 5;

export interface Timings {
  /** ms per read */
  readonly ms: number[];
  /** CPU ms of this process per read (user + system). */
  readonly cpuMs: number;
}

/** `f` run `WARMUP` times, then `reads` times one after another, each timed. */
export async function timeReads(reads: number, f: () => Promise<unknown>): Promise<Timings> {
  for (let i = 0; i < WARMUP; i++) await f();
  const ms: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < reads; i++) {
    const t0 = performance.now();
    await f();
    ms.push(performance.now() - t0);
  }
  const used = process.cpuUsage(cpu);
  return { ms, cpuMs: (used.user + used.system) / 1000 / reads };
}

/**
 * The reference client reading: the statements run one after another on one connection, every row fetched into
 * Python objects (`fetchall`), timed per read with `perf_counter`. A PyMySQL target is `[host, port, user, password,
 * database]` as JSON; a psycopg2 one a libpq connection string.
 */
const REFERENCE_READER = String.raw`
import json, sys, time
driver, target, warmup, reads, statements = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
if driver == 'psycopg2':
    import psycopg2
    conn = psycopg2.connect(target)
else:
    import pymysql
    host, port, user, password, db = json.loads(target)
    conn = pymysql.connect(host=host, port=int(port), user=user, password=password, database=db, charset='utf8mb4')
conn.autocommit = True
cur = conn.cursor()
def read():
    rows = 0
    for s in statements:
        cur.execute(s)
        rows += len(cur.fetchall())
    return rows
for _ in range(warmup):
    read()
ms = []
for _ in range(reads):
    t0 = time.perf_counter()
    rows = read()
    ms.append((time.perf_counter() - t0) * 1000)
print(json.dumps({'rows': rows, 'ms': ms}))
`;

export async function referenceReads(driver: 'psycopg2' | 'pymysql', target: string, statements: readonly string[], reads: number): Promise<{ rows: number; ms: number[] }> {
  const { stdout } = await run('/usr/bin/python3', ['-c', REFERENCE_READER, driver, target, String(WARMUP), String(reads), JSON.stringify(statements)]);
  return JSON.parse(stdout) as { rows: number; ms: number[] };
}

/**
 * A list scenario's figures: `backend.list` against the reference client's reads (`<other>_p50`, ratios of LockLens's
 * over the other's), the same statements through LockLens's own driver without building locks (`driver_p50`: the
 * part of the listing that is the client library), and the live watch's poll at that size (`poll_ms_p50`: a read and
 * the comparison with the previous picture, which a quiet poll ends with; `poll_cpu_ms`: this process's CPU per poll).
 */
export function listFigures(
  size: Record<string, number>,
  locklens: Timings,
  driver: Timings,
  poll: Timings,
  reference: { rows: number; ms: number[] },
  otherKey: string,
): Record<string, number> {
  const ours = (q: number) => percentile(locklens.ms, q);
  const theirs = (q: number) => percentile(reference.ms, q);
  return {
    ...size,
    rows: reference.rows,
    reads: locklens.ms.length,
    locklens_p50: round(ours(50)),
    locklens_p99: round(ours(99)),
    [`${otherKey}_p50`]: round(theirs(50)),
    [`${otherKey}_p99`]: round(theirs(99)),
    ratio_p50: round(ours(50) / theirs(50)),
    ratio_p99: round(ours(99) / theirs(99)),
    driver_p50: round(percentile(driver.ms, 50)),
    list_cpu_ms: round(locklens.cpuMs),
    poll_ms_p50: round(percentile(poll.ms, 50)),
    poll_ms_p99: round(percentile(poll.ms, 99)),
    poll_cpu_ms: round(poll.cpuMs),
  };
}

/** The live watch's quiet polls: `sync()` reads and compares, with nothing changed since (so nothing is told). */
export async function timePolls(backend: LockBackend, reads: number): Promise<Timings> {
  const watch = backend.watch([], { pollIntervalMs: 3_600_000, minNotifyIntervalMs: 0 });
  try {
    await watch.start();
    return await timeReads(reads, () => watch.sync());
  } finally {
    watch.dispose();
  }
}

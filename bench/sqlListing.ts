import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { LockBackend } from '../src/core/backend';
import { percentile, round } from './stats';

/**
 * What the SQL stores' list scenarios share: timing LockLens's reads in process, the reference client's reads of the
 * same statements in a Python process of its own (Debian's /usr/bin/python3 with python3-psycopg2 or python3-pymysql),
 * and the figures both give.
 */

/** Reads before the timed ones (connections warm, statements planned, JIT-compiled code), on both sides. */
const WARMUP = 5;

export interface Timings {
  /** ms per read */
  readonly ms: number[];
  /** CPU ms of this process per read (user + system). */
  readonly cpuMs: number;
}

/** `f` run `WARMUP` times, then `reads` times one after another, each timed. */
async function timeReads(reads: number, f: () => Promise<unknown>): Promise<Timings> {
  for (let i = 0; i < WARMUP; i++) await f();
  const timings = { ms: [], cpuMs: 0 };
  await timeTurn(reads, f, timings);
  return { ms: timings.ms, cpuMs: timings.cpuMs / reads };
}

/** `reads` timed reads by `f`, their times added to `into` (its `cpuMs` the CPU ms of all its reads). */
async function timeTurn(reads: number, f: () => Promise<unknown>, into: { ms: number[]; cpuMs: number }): Promise<void> {
  const cpu = process.cpuUsage();
  for (let i = 0; i < reads; i++) {
    const t0 = performance.now();
    await f();
    into.ms.push(performance.now() - t0);
  }
  const used = process.cpuUsage(cpu);
  into.cpuMs += (used.user + used.system) / 1000;
}

/**
 * The reference client reading: the statements run one after another on one connection, every row fetched into
 * Python objects (`fetchall`), timed per read with `perf_counter`. After its warm-up it reads a number per line on
 * stdin and answers each with that many reads' times as a line of JSON. A PyMySQL target is `[host, port, user,
 * password, database]` as JSON; a psycopg2 one a libpq connection string.
 */
const REFERENCE_READER = String.raw`
import json, sys, time
driver, target, warmup, statements = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
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
for line in sys.stdin:
    ms = []
    for _ in range(int(line)):
        t0 = time.perf_counter()
        rows = read()
        ms.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({'rows': rows, 'ms': ms}), flush=True)
`;

/** The reference client in a Python process of its own, reading when asked. */
class ReferenceReader {
  private readonly lines: AsyncIterator<string>;

  private constructor(private readonly python: ChildProcessWithoutNullStreams) {
    this.lines = createInterface({ input: python.stdout })[Symbol.asyncIterator]();
  }

  static open(driver: 'psycopg2' | 'pymysql', target: string, statements: readonly string[]): ReferenceReader {
    const python = spawn('/usr/bin/python3', ['-c', REFERENCE_READER, driver, target, String(WARMUP), JSON.stringify(statements)]);
    python.stderr.pipe(process.stderr);
    return new ReferenceReader(python);
  }

  /** `reads` timed reads, after the warm-up (done once, before the first answer). */
  async read(reads: number): Promise<{ rows: number; ms: number[] }> {
    this.python.stdin.write(`${reads}\n`);
    const line = await this.lines.next();
    if (line.done) throw new Error(`the reference reader exited (${this.python.exitCode})`);
    return JSON.parse(line.value) as { rows: number; ms: number[] };
  }

  close(): void {
    this.python.stdin.end();
  }
}

/** Turns per side: the three sides take turns so that a shared machine's load falls on them alike. */
const TURNS = 10;

/**
 * `reads` listings by LockLens (`list`), by its driver alone (`driver`: the same statements, nothing built) and by the
 * reference client, in turns of `reads / TURNS` each, after the warm-ups.
 */
export async function alternateReads(
  reads: number,
  list: () => Promise<unknown>,
  driver: () => Promise<unknown>,
  reference: { driver: 'psycopg2' | 'pymysql'; target: string; statements: readonly string[] },
): Promise<{ locklens: Timings; driver: Timings; reference: { rows: number; ms: number[] } }> {
  const python = ReferenceReader.open(reference.driver, reference.target, reference.statements);
  try {
    for (let i = 0; i < WARMUP; i++) {
      await list();
      await driver();
    }
    const ours = { ms: [], cpuMs: 0 };
    const alone = { ms: [], cpuMs: 0 };
    const theirs = { rows: 0, ms: [] as number[] };
    for (let turn = 0; turn < TURNS; turn++) {
      await timeTurn(reads / TURNS, list, ours);
      await timeTurn(reads / TURNS, driver, alone);
      const { rows, ms } = await python.read(reads / TURNS);
      theirs.rows = rows;
      theirs.ms.push(...ms);
    }
    return { locklens: { ms: ours.ms, cpuMs: ours.cpuMs / reads }, driver: { ms: alone.ms, cpuMs: alone.cpuMs / reads }, reference: theirs };
  } finally {
    python.close();
  }
}

/**
 * A list scenario's figures: `backend.list` against the reference client's reads (`<other>_p50`, ratios of LockLens's
 * over the other's), the same statements through LockLens's own driver without building locks (`driver_p50`: the
 * part of the listing that is the client library; `list_cpu_ms` less `driver_cpu_ms`: this process's CPU for the rest,
 * which a shared machine's load stretches less than times), and the live watch's poll at that size (`poll_ms_p50`: a read and
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
    driver_cpu_ms: round(driver.cpuMs),
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

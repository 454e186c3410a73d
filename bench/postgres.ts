import type { Client } from 'pg';
import { PostgresBackend } from '../src/core/postgres/postgresBackend';
import { advisoryQuery } from '../src/core/postgres/advisoryLocks';
import { sleep } from '../src/core/sleep';
import { SUPERUSER_PASSWORD, startPostgres, type PostgresServer } from '../test/harness/postgres';
import { handoffFigures, stampedRound, urlContender } from './handoff';
import { alternateReads, listFigures, timePolls } from './sqlListing';

/**
 * The PostgreSQL store's scenarios, against one PostgreSQL 15 started here (Debian's binaries, the test harness's
 * cluster: loopback, fsync off, max_connections 60) and psycopg2 (Debian's python3-psycopg2, /usr/bin/python3) as the
 * reference client in the same run.
 */

export async function withPostgres<T>(f: (server: PostgresServer) => Promise<T>, options: Parameters<typeof startPostgres>[0] = {}): Promise<T> {
  const server = await startPostgres(options);
  try {
    return await f(server);
  } finally {
    await server.dispose();
  }
}

const profileOf = (server: PostgresServer) => ({ store: 'postgres' as const, endpoints: [server.url()], password: SUPERUSER_PASSWORD });

/** Waits until `waiting` sessions wait for advisory bigint key `key` (below 2^32: classid 0, objid the key). */
async function untilWaiting(server: PostgresServer, key: number, waiting: number): Promise<void> {
  const client = await server.superuser();
  try {
    const count = async () =>
      (await client.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 0 AND objid = $1 AND objsubid = 1", [key])).rows[0].n as number;
    while ((await count()) < waiting) await sleep(20);
  } finally {
    await client.end();
  }
}

/**
 * `keys` advisory locks (bigints 1…keys) held by `holders` sessions (`keys / holders` each), and `waiters` more sessions
 * each blocked in pg_advisory_lock on one of them (two to a key), all of the bench's own (node-postgres, idle or
 * waiting while measured). Then `reads` listings by `PostgresBackend.list` (the advisory statement, pg_locks ⋈
 * pg_stat_activity, plus the lock tables' catalog look-up every 30th read, the rows made into locks) against psycopg2
 * running the same statement and fetching its rows and the statement alone through node-postgres, the three taking turns
 * (see alternateReads); then the live watch's quiet poll at that size.
 */
export async function pgList(server: PostgresServer, keys = 200, holders = 40, waiters = 10, reads = 200) {
  const sessions: Client[] = [];
  const blocked: Promise<unknown>[] = [];
  try {
    for (let h = 0; h < holders; h++) {
      const c = await server.superuser();
      sessions.push(c);
      await c.query(`SET application_name = 'bench-holder-${h}'`);
      const per = keys / holders;
      await c.query(`SELECT ${Array.from({ length: per }, (_, i) => `pg_advisory_lock(${h * per + i + 1})`).join(', ')}`);
    }
    for (let w = 0; w < waiters; w++) {
      const c = await server.superuser();
      sessions.push(c);
      await c.query(`SET application_name = 'bench-waiter-${w}'`);
      const waiting = c.query(`SELECT pg_advisory_lock(${1 + Math.floor(w / 2) * Math.floor(keys / (waiters / 2))})`);
      waiting.catch(() => undefined);
      blocked.push(waiting);
    }
    const admin = await server.superuser();
    try {
      while (((await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rows[0].n as number) < waiters) await sleep(20);
    } finally {
      await admin.end();
    }
    const backend = await PostgresBackend.open(profileOf(server));
    try {
      const first = await backend.list([]);
      const members = first.locks.reduce((n, l) => n + (l.holder ? 1 : 0) + l.waiters.length, 0);
      if (first.locks.length !== keys || members !== keys + waiters) throw new Error(`pg_list listed ${first.locks.length} of ${keys} locks, ${members} of ${keys + waiters} members`);
      const sql = advisoryQuery(backend.connection.server.version, false);
      const { locklens, driver, reference } = await alternateReads(reads, () => backend.list([]), () => backend.connection.query(sql), {
        driver: 'psycopg2',
        target: server.dsn(),
        statements: [sql],
      });
      const poll = await timePolls(backend, reads);
      return listFigures({ keys, sessions: holders + waiters, waiters }, locklens, driver, poll, reference, 'psycopg2');
    } finally {
      backend.close();
    }
  } finally {
    await Promise.all(sessions.map((c) => c.end().catch(() => undefined)));
    await Promise.allSettled(blocked);
  }
}

/**
 * psycopg2 as a contender: a connection (autocommit, as a service holding a session lock has), pg_advisory_lock(key)
 * blocking, the command, pg_advisory_unlock, close. What a Python service using psycopg2 does.
 */
const PSYCOPG2_CONTENDER = String.raw`
import subprocess, sys, psycopg2
dsn, key, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
conn = psycopg2.connect(dsn)
conn.autocommit = True
cur = conn.cursor()
cur.execute('SELECT pg_advisory_lock(%s)', (key,))
try:
    subprocess.run(cmd, check=True)
finally:
    cur.execute('SELECT pg_advisory_unlock(%s)', (key,))
    conn.close()
`;

export type PgTool = 'locklens' | 'psycopg2';

/**
 * The handoff scenario of bench/handoff.ts on one advisory key: `contenders` processes of one tool (`locklens acquire
 * KEY --url postgres://… -- CMD`, or the psycopg2 contender above) queue in pg_advisory_lock behind a barrier session
 * of the bench's own, which unlocks once every contender waits; a handoff is the gap from one holder's E stamp to
 * the next one's S. PostgreSQL queues the waiters and wakes the next itself: both tools only send the unlock and
 * read the granted lock's answer; LockLens's command is started while waiting and let go through its gate.
 */
export async function pgHandoffRound(tool: PgTool, server: PostgresServer, contenders: number, key: number): Promise<number[]> {
  const barrier = await server.superuser();
  try {
    await barrier.query('SELECT pg_advisory_lock($1)', [key]);
    const env = { ...process.env, PGPASSWORD: SUPERUSER_PASSWORD };
    return await stampedRound(tool, contenders, urlContender(tool, server.url(), String(key), PSYCOPG2_CONTENDER, server.dsn()), async () => {
      await untilWaiting(server, key, contenders);
      await sleep(300); // every waiter settled in its lock statement
      await barrier.query('SELECT pg_advisory_unlock($1)', [key]);
    }, { env });
  } finally {
    await barrier.end();
  }
}

export async function pgHandoff(server: PostgresServer, contenders = 12, rounds = 5) {
  const samples: Record<PgTool, number[]> = { locklens: [], psycopg2: [] };
  for (let r = 0; r < rounds; r++) {
    for (const [i, tool] of (['psycopg2', 'locklens'] as const).entries()) samples[tool].push(...(await pgHandoffRound(tool, server, contenders, 1000 + 10 * r + i)));
  }
  return handoffFigures(contenders, samples.locklens, samples.psycopg2, 'psycopg2');
}

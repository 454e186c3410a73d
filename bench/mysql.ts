import { createConnection, type Connection } from 'mysql2/promise';
import { openConnection, targetOf } from '../src/core/mysql/connect';
import { GetLockReader } from '../src/core/mysql/getLockReading';
import { MysqlBackend } from '../src/core/mysql/mysqlBackend';
import { MysqlSession } from '../src/core/mysql/session';
import { sleep } from '../src/core/sleep';
import type { SqlSession } from '../src/core/sql/session';
import { ADMIN, DATABASE, startMariaDb, type MariaDbServer } from '../test/harness/mariadb';
import { handoffFigures, stampedRound, urlContender } from './handoff';
import { alternateReads, listFigures, timePolls } from './sqlListing';

/**
 * The MySQL/MariaDB store's scenarios, against one MariaDB 10.11 started here (Debian's mariadbd, the test harness's
 * server: loopback, metadata_lock_info installed, binary log off) and PyMySQL (Debian's python3-pymysql,
 * /usr/bin/python3) as the reference client in the same run. Every connection is the harness's `locklens` user (all
 * privileges, so every connection in the processlist is seen) on the database `app`.
 */

export async function withMariaDb<T>(f: (server: MariaDbServer) => Promise<T>): Promise<T> {
  const server = await startMariaDb();
  try {
    return await f(server);
  } finally {
    await server.dispose();
  }
}

const profileOf = (server: MariaDbServer) => ({ store: 'mysql' as const, endpoints: [server.url()], password: ADMIN.password });

/** PyMySQL's target as the bench's Python scripts take it. */
const pyTarget = (server: MariaDbServer) => JSON.stringify(['127.0.0.1', server.port, ADMIN.user, ADMIN.password, DATABASE]);

function connect(server: MariaDbServer): Promise<Connection> {
  return createConnection({ host: '127.0.0.1', port: server.port, user: ADMIN.user, password: ADMIN.password, database: DATABASE });
}

/** How many connections wait in GET_LOCK (`like`: of a name their statement contains). */
async function waitingInGetLock(conn: Connection, like = '%'): Promise<number> {
  const [rows] = await conn.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' AND INFO LIKE ?", [like]);
  return Number((rows as { n: unknown }[])[0].n);
}

/** The statements a GetLockReader sends for one reading (they have no parameters while every holder is known). */
async function readerStatements(server: MariaDbServer): Promise<string[]> {
  const target = await targetOf(profileOf(server));
  const session = new MysqlSession(target, await openConnection(target));
  try {
    const seen: string[] = [];
    const recording: SqlSession = { dialect: 'mysql', query: (sql, params) => (seen.push(sql), session.query(sql, params)) };
    await new GetLockReader(recording, { flavor: 'mariadb', seesAllConnections: true, user: ADMIN.user }).read();
    return seen;
  } finally {
    session.close();
  }
}

/**
 * `names` GET_LOCK locks held by `holders` connections (`names / holders` each; MariaDB lets one connection hold
 * several), and `waiters` more connections each blocked in GET_LOCK on one of them (two to a name), all of the bench's
 * own (mysql2). Then `reads` listings by `MysqlBackend.list` (MariaDB: the processlist and metadata_lock_info, the
 * database's lock tables looked up in the catalog every 30th read, the rows made into locks) against PyMySQL sending
 * the same statements and fetching their rows and the statements alone through mysql2, the three taking turns (see
 * alternateReads); then the live watch's quiet poll.
 */
export async function mysqlList(server: MariaDbServer, names = 200, holders = 40, waiters = 10, reads = 200) {
  const conns: Connection[] = [];
  const blocked: Promise<unknown>[] = [];
  const name = (i: number) => `bench/list/l${String(i).padStart(3, '0')}`;
  try {
    const per = names / holders;
    for (let h = 0; h < holders; h++) {
      const c = await connect(server);
      conns.push(c);
      await c.query(`SELECT ${Array.from({ length: per }, (_, i) => `GET_LOCK('${name(h * per + i)}', 0)`).join(', ')}`);
    }
    for (let w = 0; w < waiters; w++) {
      const c = await connect(server);
      conns.push(c);
      const waiting = c.query(`SELECT GET_LOCK('${name(Math.floor(w / 2) * Math.floor(names / (waiters / 2)))}', 3600)`);
      waiting.catch(() => undefined);
      blocked.push(waiting);
    }
    while ((await waitingInGetLock(conns[0])) < waiters) await sleep(20);
    const backend = await MysqlBackend.open(profileOf(server));
    try {
      const first = await backend.list([]);
      const members = first.locks.reduce((n, l) => n + (l.holder ? 1 : 0) + l.waiters.length, 0);
      if (first.locks.length !== names || members !== names + waiters) throw new Error(`mysql_list listed ${first.locks.length} of ${names} locks, ${members} of ${names + waiters} members`);
      const statements = await readerStatements(server);
      const target = await targetOf(profileOf(server));
      const session = new MysqlSession(target, await openConnection(target));
      try {
        const alone = async () => {
          for (const s of statements) await session.query(s);
        };
        const { locklens, driver, reference } = await alternateReads(reads, () => backend.list([]), alone, { driver: 'pymysql', target: pyTarget(server), statements });
        const poll = await timePolls(backend, reads);
        return listFigures({ names, connections: holders + waiters, waiters }, locklens, driver, poll, reference, 'pymysql');
      } finally {
        session.close();
      }
    } finally {
      backend.close();
    }
  } finally {
    conns.forEach((c) => c.destroy());
    await Promise.allSettled(blocked);
  }
}

/**
 * PyMySQL as a contender: a connection, GET_LOCK(name, 120) blocking, the command, RELEASE_LOCK, close. What a Python
 * service using PyMySQL does.
 */
const PYMYSQL_CONTENDER = String.raw`
import json, subprocess, sys, pymysql
(host, port, user, password, db), name, cmd = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3:]
conn = pymysql.connect(host=host, port=int(port), user=user, password=password, database=db, charset='utf8mb4', autocommit=True)
cur = conn.cursor()
cur.execute('SELECT GET_LOCK(%s, 120)', (name,))
if cur.fetchone()[0] != 1:
    sys.exit('GET_LOCK did not return 1')
try:
    subprocess.run(cmd, check=True)
finally:
    cur.execute('SELECT RELEASE_LOCK(%s)', (name,))
    conn.close()
`;

export type MysqlTool = 'locklens' | 'pymysql';

/**
 * The handoff scenario of bench/handoff.ts on one GET_LOCK name: `contenders` processes of one tool (`locklens acquire
 * NAME --url mysql://… -- CMD`, or the PyMySQL contender above) wait in GET_LOCK behind a barrier connection of the
 * bench's own, which releases once every contender waits; a handoff is the gap from one holder's E stamp to the next
 * one's S. The server grants the freed name to a waiter itself: both tools only send RELEASE_LOCK and read GET_LOCK's
 * answer; LockLens's command is started while waiting and let go through its gate.
 */
export async function mysqlHandoffRound(tool: MysqlTool, server: MariaDbServer, contenders: number, name: string): Promise<number[]> {
  const barrier = await connect(server);
  try {
    await barrier.query('SELECT GET_LOCK(?, 0)', [name]);
    const env = { ...process.env, MYSQL_PWD: ADMIN.password };
    return await stampedRound(tool, contenders, urlContender(tool, server.url(), name, PYMYSQL_CONTENDER, pyTarget(server)), async () => {
      while ((await waitingInGetLock(barrier, `%${name}%`)) < contenders) await sleep(20);
      await sleep(300); // every waiter settled in GET_LOCK
      await barrier.query('SELECT RELEASE_LOCK(?)', [name]);
    }, { env });
  } finally {
    barrier.destroy();
  }
}

export async function mysqlHandoff(server: MariaDbServer, contenders = 12, rounds = 5) {
  const samples: Record<MysqlTool, number[]> = { locklens: [], pymysql: [] };
  for (let r = 0; r < rounds; r++) {
    for (const tool of ['pymysql', 'locklens'] as const) samples[tool].push(...(await mysqlHandoffRound(tool, server, contenders, `bench/handoff/${tool}-${r}`)));
  }
  return handoffFigures(contenders, samples.locklens, samples.pymysql, 'pymysql');
}

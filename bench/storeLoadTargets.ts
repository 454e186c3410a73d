import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import * as zookeeper from 'node-zookeeper-client';
import type { LockBackend } from '../src/core/backend';
import { EtcdBackend } from '../src/core/etcd/etcdBackend';
import { leaseHex } from '../src/core/keys';
import { MysqlBackend } from '../src/core/mysql/mysqlBackend';
import { PostgresBackend } from '../src/core/postgres/postgresBackend';
import { RedisBackend } from '../src/core/redis/redisBackend';
import type { ZkClient } from '../src/core/zookeeper/client';
import { ZooKeeperBackend } from '../src/core/zookeeper/zookeeperBackend';
import { ADMIN, DATABASE, type MariaDbServer } from '../test/harness/mariadb';
import { SUPERUSER_PASSWORD, type PostgresServer } from '../test/harness/postgres';
import type { RedisServer } from '../test/harness/redis';
import type { ZooKeeperServer } from '../test/harness/zookeeper';
import type { Bench } from './scenarios';
import { LOCKS, paced, type Counters, type LoadTarget, type Stopper } from './storeLoad';
import { benchSession, createContender, pipelined } from './zkNodeOwner';

/** The stores' five targets of storeLoad.ts, each with its 1,000 locks in its clients' common layout. */

/** The tree's and serve's defaults (settings.ts, serve's watcher.ts). */
const WATCH_OPTIONS = { leaseSampleIntervalMs: 2000, pollIntervalMs: 1000 };
/** How often the refreshing peers read everything again: a browser's auto-refresh, an exporter's scrape interval. */
const BROWSE_MS = 5000;
const SCRAPE_MS = 15_000;

const lockName = (i: number) => `load/l${String(i % LOCKS).padStart(4, '0')}`;

async function watching(backend: LockBackend, prefixes: readonly string[]): Promise<Stopper> {
  const watch = backend.watch(prefixes.map((p) => Buffer.from(p)), WATCH_OPTIONS);
  await watch.start();
  return {
    stop: async () => {
      watch.dispose();
      backend.close();
    },
  };
}

const kinds = (entries: Iterable<[string, number]>) => new Map(entries);

/**
 * redis-py's token locks (`SET name token PX`), a new holder's token per change. The peer browses as RedisInsight's
 * key list does: SCAN the keyspace, then TYPE and TTL of every key found.
 */
export async function redisTarget(server: RedisServer): Promise<LoadTarget & { dispose(): void }> {
  const writer = new Redis(server.url, { protocol: 2 });
  const reader = new Redis(server.url, { protocol: 2 });
  const setup = writer.pipeline();
  for (let i = 0; i < LOCKS; i++) setup.set(lockName(i), `holder-${i}`, 'PX', 600_000);
  await setup.exec();
  const info = async (section: string) => Object.fromEntries(((await reader.info(section)) as string).split('\r\n').filter((l) => l.includes(':')).map((l) => l.split(':', 2) as [string, string]));
  return {
    async counters(): Promise<Counters> {
      const commands = await info('commandstats');
      const stats = await info('stats');
      const calls = Object.entries(commands).map(([k, v]) => [k.replace('cmdstat_', ''), Number(/calls=(\d+)/.exec(v)![1])] as [string, number]);
      return {
        requests: calls.reduce((s, [, n]) => s + n, 0),
        bytesIn: Number(stats.total_net_input_bytes),
        bytesOut: Number(stats.total_net_output_bytes),
        byKind: kinds(calls),
      };
    },
    changes: (perSecond) => paced(perSecond, (i) => writer.set(lockName(i), `holder-${i}-${Date.now()}`, 'PX', 600_000)),
    watch: async () => watching(await RedisBackend.open({ store: 'redis', endpoints: [server.url] }), ['load/']),
    peer: {
      refreshMs: BROWSE_MS,
      open: async () => {
        const browser = new Redis(server.url, { protocol: 2 });
        return { refresh: () => browseKeys(browser), close: () => browser.disconnect() };
      },
    },
    dispose: () => (writer.disconnect(), reader.disconnect()),
  };
}

/** RedisInsight's key list: SCAN of the whole keyspace, then the TYPE and TTL of every key, a pipeline a page. */
async function browseKeys(browser: Redis): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await browser.scan(cursor, 'MATCH', '*', 'COUNT', 500);
    const p = browser.pipeline();
    for (const k of keys) p.type(k).ttl(k);
    await p.exec();
    cursor = next;
  } while (cursor !== '0');
}

/** etcd's own metrics page (Prometheus text): gRPC messages received by method, client gRPC bytes. */
async function etcdCounters(endpoint: string): Promise<Counters> {
  const text = await (await fetch(`http://${endpoint}/metrics`)).text();
  const byKind = new Map<string, number>();
  let bytesIn = 0;
  let bytesOut = 0;
  for (const line of text.split('\n')) {
    const received = /^grpc_server_msg_received_total\{grpc_method="(\w+)".*\} (\S+)$/.exec(line);
    if (received) byKind.set(received[1], (byKind.get(received[1]) ?? 0) + Number(received[2]));
    if (line.startsWith('etcd_network_client_grpc_received_bytes_total ')) bytesIn = Number(line.split(' ')[1]);
    if (line.startsWith('etcd_network_client_grpc_sent_bytes_total ')) bytesOut = Number(line.split(' ')[1]);
  }
  return { requests: [...byKind.values()].reduce((s, n) => s + n, 0), bytesIn, bytesOut, byKind };
}

/**
 * Go's `concurrency.Mutex` keys (`load/lNNNN/<lease hex>`), one lease a holder; a change hands a lock to the other
 * of its two leases (the old key deleted, the new one put, one transaction). The peer: `etcdctl watch --prefix`.
 */
export async function etcdTarget(b: Bench): Promise<LoadTarget> {
  // 100 grants at a time: 2,000 at once ran past gRPC's 5 s deadline on this shared machine.
  const granted: Awaited<ReturnType<typeof b.load.client.leaseClient.leaseGrant>>[] = [];
  while (granted.length < 2 * LOCKS) granted.push(...(await Promise.all(Array.from({ length: 100 }, () => b.load.client.leaseClient.leaseGrant({ TTL: 600 })))));
  const holder = granted.map((g) => leaseHex(g.ID));
  const key = (i: number, turn: number) => Buffer.from(`${lockName(i)}/${holder[(i % LOCKS) + (turn % 2) * LOCKS]}`);
  const put = (i: number, turn: number) => ({ request_put: { key: key(i, turn), value: Buffer.alloc(0), lease: granted[(i % LOCKS) + (turn % 2) * LOCKS].ID } });
  for (let i = 0; i < LOCKS; i += 100) await b.load.client.kv.txn({ success: Array.from({ length: 100 }, (_, k) => put(i + k, 0)) });
  return {
    counters: () => etcdCounters(b.endpoint),
    changes: (perSecond) =>
      paced(perSecond, (i) => {
        const turn = Math.floor(i / LOCKS) + 1;
        return b.load.client.kv.txn({ success: [{ request_delete_range: { key: key(i, turn - 1) } }, put(i, turn)] });
      }),
    watch: async () => watching(await EtcdBackend.open({ store: 'etcd', endpoints: [b.endpoint] }), ['load/']),
    peer: {
      start: async () => {
        const p = spawn('etcdctl', [`--endpoints=${b.endpoint}`, 'watch', '--prefix', 'load/'], { stdio: 'ignore' });
        await new Promise((r) => setTimeout(r, 500));
        return { stop: async () => void (p.kill(), await once(p, 'exit')) };
      },
    },
  };
}

/** The server's `mntr` four-letter word, its numeric lines. */
async function mntr(port: number): Promise<Map<string, number>> {
  const socket = connect(port, '127.0.0.1');
  socket.end('mntr');
  let text = '';
  for await (const chunk of socket) text += chunk;
  return new Map(text.split('\n').map((l) => l.split('\t')).filter(([, v]) => v !== undefined && /^-?[\d.]+$/.test(v)).map(([k, v]) => [k, Number(v)]));
}

/**
 * kazoo's `Lock` nodes: a persistent parent a lock, its holder an ephemeral sequential `<uuid>__lock__NNNN`; a change
 * is a new contender made and the old holder's node deleted (it is next). The peer refreshes as zkCli's `ls -R` with a
 * `get` of each node (ZooInspector's tree and data) every 5 s.
 */
export async function zookeeperTarget(server: ZooKeeperServer): Promise<LoadTarget & { dispose(): Promise<void> }> {
  const session = await benchSession(server.url);
  await session.mkdirp('/load');
  await pipelined(LOCKS, (i) => session.create(`/${lockName(i)}`, Buffer.alloc(0), zookeeper.CreateMode.PERSISTENT));
  const holders: string[] = [];
  await pipelined(LOCKS, async (i) => (holders[i] = await createContender(session, `/${lockName(i)}`)));
  return {
    async counters(): Promise<Counters> {
      const m = await mntr(server.port);
      return {
        requests: m.get('zk_packets_received') ?? 0,
        // mntr's per-operation figures are latency summaries, not counts: packets sent (replies and watch events) say more.
        byKind: kinds([['packets_sent', m.get('zk_packets_sent') ?? 0]]),
        bytesIn: m.get('zk_bytes_received_count'),
      };
    },
    changes: (perSecond) =>
      paced(perSecond, async (i) => {
        const lock = i % LOCKS;
        const next = await createContender(session, `/${lockName(lock)}`);
        await session.remove(holders[lock]);
        holders[lock] = next;
      }),
    watch: async () => watching(await ZooKeeperBackend.open({ store: 'zookeeper', endpoints: [server.url] }), ['/load']),
    peer: {
      refreshMs: BROWSE_MS,
      open: async () => {
        const browser = await benchSession(server.url);
        return { refresh: () => refreshTree(browser), close: () => browser.close() };
      },
    },
    dispose: () => session.close(),
  };
}

/** zkCli's `ls -R /load` with a `get` of every node, as ZooInspector shows the tree and each node's data. */
async function refreshTree(browser: ZkClient): Promise<void> {
  const locks = (await browser.children('/load')) ?? [];
  await Promise.all(
    locks.map(async (l) => {
      const nodes = (await browser.children(`/load/${l}`)) ?? [];
      await Promise.all([browser.data(`/load/${l}`), ...nodes.map((n) => browser.data(`/load/${l}/${n}`))]);
    }),
  );
}

/**
 * 1,000 advisory locks (bigint keys) held by one session of the bench's; a change releases one and takes another in
 * one statement. Counted by pg_stat_statements (calls, rows; PostgreSQL counts no bytes). The peer: postgres_exporter's
 * pg_locks query every 15 s.
 */
export async function postgresTarget(server: PostgresServer): Promise<LoadTarget & { dispose(): Promise<void> }> {
  const admin = await server.superuser();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const holder = await server.superuser();
  await holder.query('SELECT pg_advisory_lock(k) FROM generate_series(1, $1) k', [LOCKS]);
  const held = Array.from({ length: LOCKS }, (_, i) => i + 1);
  return {
    async counters(): Promise<Counters> {
      const { rows } = await admin.query("SELECT left(regexp_replace(query, '\\W+', '_', 'g'), 40) AS kind, calls::int, rows::int FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'");
      const byKind = new Map<string, number>([['rows_returned', rows.reduce((s, r) => s + r.rows, 0)]]);
      for (const r of rows) byKind.set(r.kind, (byKind.get(r.kind) ?? 0) + r.calls);
      return { requests: rows.reduce((s, r) => s + r.calls, 0), byKind };
    },
    changes: (perSecond) =>
      paced(perSecond, async (i) => {
        const slot = i % LOCKS;
        const next = held[slot] + LOCKS;
        await holder.query('SELECT pg_advisory_unlock($1), pg_advisory_lock($2)', [held[slot], next]);
        held[slot] = next;
      }),
    watch: async () => watching(await PostgresBackend.open({ store: 'postgres', endpoints: [server.url()], password: SUPERUSER_PASSWORD }), []),
    peer: {
      refreshMs: SCRAPE_MS,
      open: async () => {
        const exporter = await server.superuser();
        return { refresh: () => exporter.query(PG_EXPORTER_LOCKS), close: () => exporter.end() };
      },
    },
    dispose: async () => (await holder.end(), await admin.end()),
  };
}

/** postgres_exporter's pg_locks collector: lock counts by database and mode. */
const PG_EXPORTER_LOCKS = `SELECT pg_database.datname, tmp.mode, COALESCE(count, 0) AS count
  FROM (VALUES ('accesssharelock'), ('rowsharelock'), ('rowexclusivelock'), ('shareupdateexclusivelock'), ('sharelock'),
               ('sharerowexclusivelock'), ('exclusivelock'), ('accessexclusivelock'), ('sireadlock')) AS tmp(mode)
  CROSS JOIN pg_database
  LEFT JOIN (SELECT database, lower(mode) AS mode, count(*) AS count FROM pg_locks WHERE database IS NOT NULL GROUP BY database, lower(mode)) AS tmp2
    ON tmp.mode = tmp2.mode AND pg_database.oid = tmp2.database
  ORDER BY 1`;

/**
 * 1,000 `GET_LOCK` names held by one connection of the bench's; a change releases one and takes another in one
 * statement. Counted by `SHOW GLOBAL STATUS` (Questions, Com_*, Bytes_received / Bytes_sent). The peer: a DBA's
 * "who holds which user lock" scrape of `information_schema.METADATA_LOCK_INFO` every 15 s.
 */
export async function mysqlTarget(server: MariaDbServer): Promise<LoadTarget & { dispose(): Promise<void> }> {
  const open = () => createConnection({ host: '127.0.0.1', port: server.port, user: ADMIN.user, password: ADMIN.password, database: DATABASE });
  const admin = await open();
  const holder = await open();
  for (let i = 0; i < LOCKS; i += 100) await holder.query(`SELECT ${Array.from({ length: 100 }, (_, k) => `GET_LOCK('${lockName(i + k)}', 0)`).join(', ')}`);
  const held = Array.from({ length: LOCKS }, (_, i) => lockName(i));
  return {
    async counters(): Promise<Counters> {
      const [rows] = await admin.query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Bytes_received', 'Bytes_sent') OR Variable_name LIKE 'Com\\_%'");
      const status = new Map((rows as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name, Number(r.Value)]));
      return {
        requests: status.get('Questions')!,
        bytesIn: status.get('Bytes_received'),
        bytesOut: status.get('Bytes_sent'),
        byKind: kinds([...status].filter(([k, v]) => k.startsWith('Com_') && v > 0)),
      };
    },
    changes: (perSecond) =>
      paced(perSecond, async (i) => {
        const slot = i % LOCKS;
        const next = `${lockName(slot)}-${Math.floor(i / LOCKS) + 1}`;
        await holder.query('SELECT RELEASE_LOCK(?), GET_LOCK(?, 0)', [held[slot], next]);
        held[slot] = next;
      }),
    watch: async () => watching(await MysqlBackend.open({ store: 'mysql', endpoints: [server.url()], password: ADMIN.password }), []),
    peer: {
      refreshMs: SCRAPE_MS,
      open: async () => {
        const dba = await open();
        return { refresh: () => dba.query('SELECT * FROM information_schema.METADATA_LOCK_INFO'), close: () => dba.end() };
      },
    },
    dispose: async () => (await holder.end(), await admin.end()),
  };
}

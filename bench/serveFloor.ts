/**
 * The floor under `locklens serve`'s CPU (bench/serve.ts, entry `floor`): a process that does only what any watcher of
 * the bench's five stores must do to learn of every change, with the same client libraries serve bundles, and nothing
 * of LockLens's: no lock model, no events, no history, no per-lock series. What it costs under the bench's load is what
 * the libraries, the sockets and Node cost before LockLens does anything with what they read.
 *
 * Run as serve is (`node serveFloor.js serve --config FILE`, the bench's config, passwords from the variables it names):
 * - etcd: one watch on the prefix, from after a keys-only read of it (serve: the same, values decoded into locks);
 * - Redis: keyspace notifications of the prefix, the keys they name gathered for 100 ms (serve's READ_DELAY_MS) and read
 *   in one pipeline, TYPE, PTTL and GET each (serve reads the type and TTL, and a string's token or a hash's fields);
 * - ZooKeeper: each lock's children with a watch, read again on its event, and the data of each contender not seen
 *   before (serve also watches contenders' data);
 * - PostgreSQL and MariaDB: serve's own statements every 5 s (serve's default poll), rows decoded and dropped.
 * It serves prom-client's process metrics on /metrics (the bench reads the heap from them), and says `serving` as serve
 * does and `ready` once every first read is done. The Redis and etcd TTL sampling serve does is left out: the bench's
 * 22 etcd leases and its keys' 2 h TTLs cost it little.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { Etcd3 } from 'etcd3';
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { Client } from 'pg';
import * as zookeeper from 'node-zookeeper-client';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { parse } from 'yaml';
import { GRANTED_USER_LOCKS_QUERY, processListQuery } from '../src/core/mysql/getLockReading';
import { advisoryQuery } from '../src/core/postgres/advisoryLocks';

interface Connection {
  readonly name: string;
  readonly store: string;
  readonly endpoints: readonly string[];
  readonly prefixes?: readonly string[];
  readonly passwordEnv?: string;
}

const GATHER_MS = 100;
const POLL_MS = 5000;

async function watchEtcd(c: Connection): Promise<void> {
  const client = new Etcd3({ hosts: c.endpoints.map((e) => (e.includes('://') ? e : `http://${e}`)) });
  for (const prefix of c.prefixes ?? []) {
    await client.getAll().prefix(prefix).keys();
    const watcher = await client.watch().prefix(prefix).create();
    watcher.on('data', () => undefined);
  }
}

async function watchRedis(c: Connection): Promise<void> {
  const url = c.endpoints[0];
  const reader = new Redis(url, { protocol: 2 });
  const subscriber = new Redis(url, { protocol: 2 });
  const touched = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  const read = (keys: readonly string[]) => {
    const p = reader.pipeline();
    for (const k of keys) p.type(k).pttl(k).get(k);
    return p.exec();
  };
  for (const prefix of c.prefixes ?? []) {
    const keys: string[] = [];
    for (let cursor = '0'; ; ) {
      const [next, batch] = await reader.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      keys.push(...batch);
      if ((cursor = next) === '0') break;
    }
    await read(keys);
    await subscriber.psubscribe(`__keyspace@0__:${prefix}*`);
  }
  subscriber.on('pmessage', (_pattern: string, channel: string) => {
    touched.add(channel.slice(channel.indexOf(':') + 1));
    timer ??= setTimeout(() => {
      timer = undefined;
      const keys = [...touched];
      touched.clear();
      void read(keys);
    }, GATHER_MS);
  });
}

async function watchZooKeeper(c: Connection): Promise<void> {
  const client = zookeeper.createClient(c.endpoints[0].replace(/^zookeeper:\/\//, ''));
  await new Promise<void>((resolve) => client.once('connected', () => resolve()).connect());
  const call = <T>(f: (cb: (e: Error | zookeeper.Exception | null, r: T) => void) => void) => new Promise<T>((resolve, reject) => f((e, r) => (e ? reject(e) : resolve(r))));
  // Each lock's contenders at its last read: only a new one's data is read.
  const known = new Map<string, Set<string>>();
  const readLock = async (path: string): Promise<void> => {
    const children = await call<string[]>((cb) => client.getChildren(path, () => void readLock(path).catch(() => undefined), cb));
    const before = known.get(path);
    known.set(path, new Set(children));
    const added = children.filter((child) => !before?.has(child));
    await Promise.all(added.map((child) => call<Buffer>((cb) => client.getData(`${path}/${child}`, cb)).catch(() => undefined)));
  };
  for (const root of c.prefixes ?? []) {
    const locks = await call<string[]>((cb) => client.getChildren(root, cb));
    await Promise.all(locks.map((lock) => readLock(`${root}/${lock}`)));
  }
}

async function pollPostgres(c: Connection): Promise<void> {
  const url = new URL(c.endpoints[0]);
  const client = new Client({ host: url.hostname, port: Number(url.port), user: url.username, password: process.env[c.passwordEnv ?? ''], database: url.pathname.slice(1) });
  await client.connect();
  const version = Number((await client.query('SHOW server_version_num')).rows[0].server_version_num);
  const statement = advisoryQuery(version, false);
  const poll = () => client.query(statement);
  await poll();
  setInterval(() => void poll(), POLL_MS);
}

async function pollMariaDb(c: Connection): Promise<void> {
  const url = new URL(c.endpoints[0]);
  const db = await createConnection({ host: url.hostname, port: Number(url.port), user: url.username, password: process.env[c.passwordEnv ?? ''], database: url.pathname.slice(1) });
  const poll = async () => {
    await db.query(GRANTED_USER_LOCKS_QUERY);
    await db.query(processListQuery('mariadb', false));
  };
  await poll();
  setInterval(() => void poll(), POLL_MS);
}

const WATCHERS: Record<string, (c: Connection) => Promise<void>> = {
  etcd: watchEtcd,
  redis: watchRedis,
  zookeeper: watchZooKeeper,
  postgres: pollPostgres,
  mysql: pollMariaDb,
};

async function main(): Promise<void> {
  const config = parse(readFileSync(process.argv[process.argv.indexOf('--config') + 1], 'utf8')) as { connections: Connection[] };
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1000 });
  const server = createServer((_req, res) => void registry.metrics().then((text) => res.end(text)));
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    console.log(JSON.stringify({ level: 'info', msg: 'serving', metrics: `http://127.0.0.1:${port}/metrics` }));
  });
  await Promise.all(config.connections.map((c) => WATCHERS[c.store](c)));
  console.log(JSON.stringify({ level: 'info', msg: 'ready' }));
  process.once('SIGTERM', () => process.exit(0));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});

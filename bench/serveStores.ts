import type { Client } from 'pg';
import Redis from 'ioredis';
import { createConnection, type Connection } from 'mysql2/promise';
import type { EtcdConnection } from '../src/core/etcd/connect';
import { leaseHex } from '../src/core/keys';
import { lockQueueKey, lockTimeoutKey } from '../src/core/redis/redissonNames';
import { FAIR_LEAVE, FAIR_THREAD_WAIT_MS } from '../src/core/redis/scripts';
import type { ZkClient } from '../src/core/zookeeper/client';
import { ADMIN, DATABASE, type MariaDbServer } from '../test/harness/mariadb';
import { SUPERUSER_PASSWORD, type PostgresServer } from '../test/harness/postgres';
import type { RedisServer } from '../test/harness/redis';
import { FakeRedisson, REDISSON_UUID } from '../test/harness/redisson';
import type { ZooKeeperServer } from '../test/harness/zookeeper';
import * as zookeeper from 'node-zookeeper-client';
import { benchSession, createContender, pipelined } from './zkNodeOwner';

/**
 * The five stores of bench/serve.ts, each with `locks` locks held in its own layout, a way to change one, and a probe
 * lock whose waiter comes and goes. Every lock is held from the start; a change releases a held lock or takes a free
 * one again (by another holder), in the order it was asked for on that lock. The probe lock is held throughout by a
 * holder of its own; its waiter is what the change-to-metric delay is measured on: under the default --max-locks the
 * locks with waiters get their series first, so the probe lock always has one while someone waits for it.
 *
 * Who writes: etcd, Redis and ZooKeeper locks are written in the layout their clients write (etcd: Go's concurrency
 * keys `<lock>/<lease hex>` on 20 leases, as sessions that each hold many mutexes; Redis: redis-py's `SET token NX PX`;
 * ZooKeeper: kazoo's ephemeral sequential contenders on 4 sessions), by the bench's own connections: one client
 * process per lock would be 2,000 processes per store. Their leases and TTLs (2 h) outlast a run of several builds (a
 * build's whole-length phases take about 7 min; five builds ran past the 30 min they were), so nothing renews them.
 * PostgreSQL and MariaDB locks are held by real sessions (20 node-postgres or mysql2 connections of the bench's own,
 * 100 locks each, as a pool of workers holds them), since a session lock exists only while its session holds it.
 */

export interface StoreUnderLoad {
  /** The connection's name in serve's config (its `connection` label). */
  readonly name: string;
  /** The connection's entry in serve's config (YAML flow map). */
  readonly config: string;
  /** The probe lock's `lock` label. */
  readonly probeLock: string;
  /** Releases lock `i` (held) or takes it again (free). */
  change(i: number, acquire: boolean): Promise<void>;
  /** Sends the probe's waiter into the queue, or takes it out; resolves once the write is sent or answered. */
  probe(join: boolean): Promise<void>;
  close(): Promise<void>;
}

/** The environment serve's config names the SQL passwords by. */
export const PASSWORDS_ENV = { BENCH_PG_PASSWORD: SUPERUSER_PASSWORD, BENCH_MYSQL_PASSWORD: ADMIN.password };

const SESSIONS = 20;
const LEASE_TTL_S = 7200;
const TTL_MS = LEASE_TTL_S * 1000;

/** `lockName(i)`: `l0000`…: a lock's name within its store's prefix. */
const lockName = (i: number) => `l${String(i).padStart(4, '0')}`;

/** Writes in flight at most while setting up: the five stores are set up at once, on the two cores serve then runs on. */
const WINDOW = 200;

export async function etcdStore(conn: EtcdConnection, endpoint: string, locks: number): Promise<StoreUnderLoad> {
  const prefix = 'bench/serve/';
  const kv = conn.client.kv;
  const grant = () => conn.client.leaseClient.leaseGrant({ TTL: LEASE_TTL_S }).then((r) => r.ID);
  const leases = await Promise.all(Array.from({ length: SESSIONS + 2 }, grant));
  const put = (key: string, lease: string) => kv.put({ key: Buffer.from(key), value: Buffer.alloc(0), lease });
  const keyOf = (name: string, lease: string) => `${prefix}${name}/${leaseHex(lease)}`;
  const holder = Array.from({ length: locks }, (_, i) => i % SESSIONS);
  await pipelined(locks, (i) => put(keyOf(lockName(i), leases[holder[i]]), leases[holder[i]]), WINDOW);
  const [probeHolder, probeWaiter] = leases.slice(SESSIONS);
  await put(keyOf('probe', probeHolder), probeHolder);
  return {
    name: 'etcd',
    config: `{ name: etcd, store: etcd, endpoints: [${endpoint}], prefixes: [${prefix}] }`,
    probeLock: `${prefix}probe`,
    async change(i, acquire) {
      if (!acquire) {
        await kv.deleteRange({ key: Buffer.from(keyOf(lockName(i), leases[holder[i]])) });
        return;
      }
      holder[i] = (holder[i] + 1) % SESSIONS;
      await put(keyOf(lockName(i), leases[holder[i]]), leases[holder[i]]);
    },
    async probe(join) {
      const key = keyOf('probe', probeWaiter);
      await (join ? put(key, probeWaiter) : kv.deleteRange({ key: Buffer.from(key) }));
    },
    async close() {
      await Promise.all(leases.map((ID) => conn.client.leaseClient.leaseRevoke({ ID })));
    },
  };
}

export async function redisStore(server: RedisServer, locks: number): Promise<StoreUnderLoad> {
  const prefix = 'bench:serve:';
  const raw = new Redis(server.url, { protocol: 2 });
  const redisson = FakeRedisson.connect(server.url);
  const set = (i: number) => raw.set(`${prefix}${lockName(i)}`, crypto.randomUUID(), 'PX', TTL_MS, 'NX');
  await pipelined(locks, set, WINDOW);
  // The probe is a Redisson fair lock (a HASH, its queue LIST and timeout ZSET), written by Redisson's own Lua: a
  // token lock has no queue for a waiter to stand in.
  const probe = `${prefix}probe`;
  if ((await redisson.fairLock(probe, 1, TTL_MS)) !== null) throw new Error('serve: the Redis probe lock was not taken');
  return {
    name: 'redis',
    config: `{ name: redis, store: redis, endpoints: [${server.url}], prefixes: ['${prefix}'] }`,
    probeLock: probe,
    async change(i, acquire) {
      await (acquire ? set(i) : raw.del(`${prefix}${lockName(i)}`));
    },
    async probe(join) {
      if (join) await redisson.fairLock(probe, 2);
      else await raw.eval(FAIR_LEAVE, 2, lockQueueKey(Buffer.from(probe)), lockTimeoutKey(Buffer.from(probe)), `${REDISSON_UUID}:2`, FAIR_THREAD_WAIT_MS);
    },
    async close() {
      raw.disconnect();
      redisson.dispose();
    },
  };
}

export async function zooKeeperStore(server: ZooKeeperServer, locks: number): Promise<StoreUnderLoad> {
  const root = '/bench/serve';
  const sessions: ZkClient[] = await Promise.all(Array.from({ length: 4 }, () => benchSession(server.url)));
  const parent = (name: string) => `${root}/${name}`;
  await sessions[0].mkdirp(root);
  await pipelined(locks + 1, (i) => sessions[0].create(parent(i < locks ? lockName(i) : 'probe'), Buffer.alloc(0), zookeeper.CreateMode.PERSISTENT), WINDOW);
  const holder = Array.from({ length: locks }, (_, i) => i % sessions.length);
  const node: string[] = new Array(locks);
  await pipelined(locks, async (i) => (node[i] = await createContender(sessions[holder[i]], parent(lockName(i)))), WINDOW);
  const probeSession = await benchSession(server.url);
  await createContender(probeSession, parent('probe'));
  let waiter: string | undefined;
  return {
    name: 'zookeeper',
    config: `{ name: zookeeper, store: zookeeper, endpoints: ['${server.url}'], prefixes: [${root}] }`,
    probeLock: parent('probe'),
    async change(i, acquire) {
      if (!acquire) return sessions[holder[i]].remove(node[i]);
      holder[i] = (holder[i] + 1) % sessions.length;
      node[i] = await createContender(sessions[holder[i]], parent(lockName(i)));
    },
    async probe(join) {
      if (join) waiter = await createContender(probeSession, parent('probe'));
      else await probeSession.remove(waiter!);
    },
    async close() {
      await Promise.all([...sessions, probeSession].map((s) => s.close()));
    },
  };
}

/** A store whose locks are held by sessions: SESSIONS of them holding `locks`, one probe holder, one waiter, one admin. */
interface SessionStore<S> {
  readonly sessions: readonly S[];
  readonly probeHolder: S;
  readonly waiter: S;
  readonly admin: S;
}

async function openSessions<S>(open: () => Promise<S>): Promise<SessionStore<S>> {
  const all = await Promise.all(Array.from({ length: SESSIONS + 3 }, open));
  return { sessions: all.slice(0, SESSIONS), probeHolder: all[SESSIONS], waiter: all[SESSIONS + 1], admin: all[SESSIONS + 2] };
}

export async function postgresStore(server: PostgresServer, locks: number): Promise<StoreUnderLoad> {
  const s = await openSessions(() => server.superuser());
  const probeKey = 1_000_000;
  const holder = Array.from({ length: locks }, (_, i) => i % SESSIONS);
  // Keys 1…locks (key i + 1 is lock i); each session takes its share in one statement.
  await Promise.all(
    s.sessions.map((c, h) => c.query(`SELECT ${holder.flatMap((o, i) => (o === h ? [`pg_advisory_lock(${i + 1})`] : [])).join(', ')}`)),
  );
  await s.probeHolder.query('SELECT pg_advisory_lock($1)', [probeKey]);
  const waiterPid = (await s.waiter.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
  let waiting: Promise<unknown> = Promise.resolve();
  return {
    name: 'postgres',
    config: `{ name: postgres, store: postgres, endpoints: ['${server.url()}'], passwordEnv: BENCH_PG_PASSWORD }`,
    probeLock: String(probeKey),
    async change(i, acquire) {
      if (!acquire) {
        await s.sessions[holder[i]].query('SELECT pg_advisory_unlock($1)', [i + 1]);
        return;
      }
      holder[i] = (holder[i] + 1) % SESSIONS;
      await s.sessions[holder[i]].query('SELECT pg_advisory_lock($1)', [i + 1]);
    },
    async probe(join) {
      if (join) {
        waiting = s.waiter.query('SELECT pg_advisory_lock($1)', [probeKey]).catch(() => undefined);
        return;
      }
      await s.admin.query('SELECT pg_cancel_backend($1)', [waiterPid]);
      await waiting;
    },
    async close() {
      await Promise.all([...s.sessions, s.probeHolder, s.waiter, s.admin].map((c: Client) => c.end().catch(() => undefined)));
    },
  };
}

export async function mariaDbStore(server: MariaDbServer, locks: number): Promise<StoreUnderLoad> {
  const s = await openSessions(() => createConnection({ host: '127.0.0.1', port: server.port, user: ADMIN.user, password: ADMIN.password, database: DATABASE }));
  const name = (n: string) => `bench/serve/${n}`;
  const holder = Array.from({ length: locks }, (_, i) => i % SESSIONS);
  // MariaDB lets a connection hold many GET_LOCK names: each takes its share in one statement.
  await Promise.all(
    s.sessions.map((c, h) => c.query(`SELECT ${holder.flatMap((o, i) => (o === h ? [`GET_LOCK('${name(lockName(i))}', 0)`] : [])).join(', ')}`)),
  );
  await s.probeHolder.query('SELECT GET_LOCK(?, 0)', [name('probe')]);
  let waiting: Promise<unknown> = Promise.resolve();
  return {
    name: 'mariadb',
    config: `{ name: mariadb, store: mysql, endpoints: ['${server.url()}'], passwordEnv: BENCH_MYSQL_PASSWORD }`,
    probeLock: name('probe'),
    async change(i, acquire) {
      if (!acquire) {
        await s.sessions[holder[i]].query('SELECT RELEASE_LOCK(?)', [name(lockName(i))]);
        return;
      }
      holder[i] = (holder[i] + 1) % SESSIONS;
      await s.sessions[holder[i]].query('SELECT GET_LOCK(?, 0)', [name(lockName(i))]);
    },
    async probe(join) {
      if (join) {
        waiting = s.waiter.query('SELECT GET_LOCK(?, 3600)', [name('probe')]).catch(() => undefined);
        return;
      }
      await s.admin.query(`KILL QUERY ${s.waiter.threadId}`);
      await waiting;
    },
    async close() {
      [...s.sessions, s.probeHolder, s.waiter, s.admin].forEach((c: Connection) => c.destroy());
    },
  };
}

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EtcdConnection } from '../src/core/etcd/connect';
import { startEtcd } from '../test/harness/etcd';
import { diagnosisGraph } from './diagnosis';
import { download } from './download';
import { historyLeases, historyReplay } from './history';
import { ROOT } from './paths';
import * as mysql from './mysql';
import * as postgres from './postgres';
import * as redis from './redis';
import * as scenarios from './scenarios';
import { storeLoad } from './storeLoad';
import { etcdTarget, mysqlTarget, postgresTarget, redisTarget, zookeeperTarget } from './storeLoadTargets';
import { serveUnderLoad } from './serve';
import { timelineReduce, timelineWebview } from './timeline';
import * as zookeeper from './zookeeper';

/**
 * `npm run bench`: starts its own etcd on loopback, runs every scenario against it (LockLens and etcdctl in the same
 * run), prints a table and writes bench/results/latest.json. Figures are only comparable within one run.
 * `node --expose-gc out/bench/run.js NAME...` runs only the scenarios named (figures to bench/results/partial.json);
 * a group's name (`handoff`, `redis`, `zookeeper`, `postgres`, `mysql`) names all of its scenarios.
 */
async function main(): Promise<void> {
  const only = new Set(process.argv.slice(2));
  const etcd = await startEtcd({ extraArgs: ['--quota-backend-bytes=4294967296'] });
  const conn = await EtcdConnection.open({ endpoints: [etcd.endpoint] });
  const load = await EtcdConnection.open({ endpoints: [etcd.endpoint] });
  const b = { conn, load, endpoint: etcd.endpoint };
  const results: Record<string, Record<string, number>> = {};
  const run = async (name: string, f: () => Promise<Record<string, number>>) => {
    if (only.size && !only.has(name)) return;
    process.stderr.write(`bench: ${name}…\n`);
    results[name] = await f();
    process.stderr.write(`bench: ${name} ${JSON.stringify(results[name])}\n`);
  };
  /** Whether any of a group's scenarios runs (a store's servers are started only then); the group's name asks for all. */
  const wanted = (group: string, names: readonly string[]) => {
    if (only.has(group)) names.forEach((n) => only.add(n));
    return !only.size || names.some((n) => only.has(n));
  };
  try {
    await run('extension', () => scenarios.extension(b));
    await run('download', async () => download());
    wanted('handoff', ['handoff_12', 'handoff_20']);
    for (const contenders of [12, 20]) await run(`handoff_${contenders}`, () => scenarios.handoff(b, contenders));
    await run('cycle', () => scenarios.cycle(b));
    await run('watch_to_model', () => scenarios.watchToModel(b));
    await run('lease_sweep', () => scenarios.leaseSweep(b));
    await run('storm', () => scenarios.storm(b));
    await run('initial_load', () => scenarios.initialLoad(b));
    await run('history_replay', () => historyReplay(b));
    await run('history_leases', () => historyLeases(b));
    // The Redis store: its own servers (keyspace notifications on, and off), redis-py as the reference client.
    if (wanted('redis', ['redis_list', 'redis_watch_notify', 'redis_watch_poll', 'redis_handoff'])) {
      await redis.withRedis(async ({ notify, plain }) => {
        await run('redis_list', () => redis.redisList(plain));
        await run('redis_watch_notify', () => redis.redisWatchToModel(notify, true));
        await run('redis_watch_poll', () => redis.redisWatchToModel(plain, false));
        await run('redis_handoff', () => redis.redisHandoff(plain));
      });
    }
    // The ZooKeeper store: its own server, kazoo as the reference client.
    if (wanted('zookeeper', ['zk_list', 'zk_watch', 'zk_handoff'])) {
      await zookeeper.withZooKeeper(async (server) => {
        await run('zk_list', () => zookeeper.zkList(server));
        await run('zk_watch', () => zookeeper.zkWatchToModel(server));
        await run('zk_handoff', () => zookeeper.zkHandoff(server));
      });
    }
    // The SQL stores: a server of each, psycopg2 and PyMySQL as the reference clients.
    if (wanted('postgres', ['pg_list', 'pg_handoff'])) {
      await postgres.withPostgres(async (server) => {
        await run('pg_list', () => postgres.pgList(server));
        await run('pg_handoff', () => postgres.pgHandoff(server));
      });
    }
    if (wanted('mysql', ['mysql_list', 'mysql_handoff'])) {
      await mysql.withMariaDb(async (server) => {
        await run('mysql_list', () => mysql.mysqlList(server));
        await run('mysql_handoff', () => mysql.mysqlHandoff(server));
      });
    }
    // The load LockLens's live watch puts on each store, from the server's own counters, beside a peer tool's.
    wanted('load', ['load_etcd', 'load_redis', 'load_redis_poll', 'load_zookeeper', 'load_postgres', 'load_mysql']);
    await run('load_etcd', async () => storeLoad(await etcdTarget(b)));
    for (const [name, notify] of [['load_redis', true], ['load_redis_poll', false]] as const) {
      await run(name, () => redis.withRedis(async (servers) => withTarget(await redisTarget(notify ? servers.notify : servers.plain), storeLoad)));
    }
    await run('load_zookeeper', () => zookeeper.withZooKeeper(async (server) => withTarget(await zookeeperTarget(server), storeLoad), { fourLetterWords: ['srvr', 'mntr', 'cons'] }));
    await run('load_postgres', () => postgres.withPostgres(async (server) => withTarget(await postgresTarget(server), storeLoad), { settings: ['shared_preload_libraries=pg_stat_statements'] }));
    await run('load_mysql', () => mysql.withMariaDb(async (server) => withTarget(await mysqlTarget(server), storeLoad)));
    // locklens serve, its own process, over all five stores at once: its own Redis, ZooKeeper, PostgreSQL and MariaDB.
    // LOCKLENS_BENCH_SERVE_SCALE=0.5: each of its phases half as long.
    await run('serve', () => serveUnderLoad(b, Number(process.env.LOCKLENS_BENCH_SERVE_SCALE ?? 1)));
    await run('timeline_reduce', async () => timelineReduce());
    await run('diagnosis_graph', async () => diagnosisGraph());
    await run('timeline_webview', () => timelineWebview());
  } finally {
    conn.close();
    load.close();
    await etcd.dispose();
  }
  const dir = join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  // A run of some scenarios only does not replace the full run's figures.
  const file = only.size ? 'partial.json' : 'latest.json';
  writeFileSync(join(dir, file), JSON.stringify({ at: new Date().toISOString(), ...results }, null, 2) + '\n');
  console.log('\nscenario        figure                      value');
  for (const [name, figures] of Object.entries(results)) {
    for (const [k, v] of Object.entries(figures)) console.log(`${name.padEnd(15)} ${k.padEnd(27)} ${v}`);
  }
  console.log(`\nwritten: bench/results/${file}`);
}

/** Runs `f` over a target and disposes of it after. */
async function withTarget<T extends { dispose(): unknown }, R>(target: T, f: (t: T) => Promise<R>): Promise<R> {
  try {
    return await f(target);
  } finally {
    await target.dispose();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

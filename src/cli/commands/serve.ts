import { LockLensError } from '../../core/errors';
import { STORE_KINDS } from '../../core/stores';
import { parse, parsePositiveInt } from '../options';
import { DEFAULT_LISTEN, DEFAULT_MAX_LOCKS, loadConfig, parseListen } from '../serve/config';
import { compileWasmWithLiftoff, sizeHeap } from '../serve/heap';
import { jsonLog } from '../serve/log';
import { ServeMetrics } from '../serve/metrics';
import { startServer } from '../serve/server';
import { ConnectionWatcher, type WatcherOptions } from '../serve/watcher';
import { version } from '../version';
import { HistoryRecorder } from '../../core/recording/recorder';
import { DEFAULT_BOUNDS } from '../../core/recording/retention';
import type { Command } from './command';

export const serve: Command = {
  name: 'serve',
  summary: 'watch every connection of a config file around the clock: Prometheus metrics',
  help: `Usage: locklens serve --config FILE [--listen HOST:PORT] [--max-locks N]

Watches every connection of the config file until stopped (SIGTERM or SIGINT: exit 0), and serves what it sees on
/metrics for Prometheus, with /healthz and /readyz (200 once every connection has done its first full read). A store
that cannot be reached is tried again forever, with backoff. Logs are JSON lines on stdout. Read-only: it never
acquires or releases a lock.

  --config FILE        YAML or JSON (below); a mistake is reported with its line and column, exit 2
  --listen HOST:PORT   where /metrics listens (default: the config's listen, else ${DEFAULT_LISTEN}: loopback only)
  --max-locks N        lock series at most, over every connection (default: the config's maxLocks, else
                       ${DEFAULT_MAX_LOCKS}): locks with waiters first, then the oldest holds; the rest are summed
                       into lock="__other__"

Config (the connection fields are those of VS Code's locklens.connections; store: ${STORE_KINDS.join(', ')}):
  listen: 127.0.0.1:9464
  maxLocks: 500
  metrics:
    bearerTokenFile: /etc/locklens/token    # or bearerTokenEnv: VARIABLE; required on /metrics when set
    tls: { certFile: /etc/locklens/cert.pem, keyFile: /etc/locklens/key.pem }
  lockNames:                                # names that must not leave the host
    drop: ['^secret/']                      # such locks are summed into __other__, never named
    rewrite: [{ match: '^tenant-[0-9]+/', replace: 'tenant-N/' }]
  connections:
    - name: prod-etcd
      store: etcd
      endpoints: [https://10.0.0.5:2379]
      username: monitor
      passwordEnv: ETCD_MONITOR_PASSWORD    # or passwordFile: /run/secrets/etcd; never password:
      tls: { caFile: /etc/ssl/etcd-ca.pem }
      prefixes: [/locks/]
    - name: billing-db
      store: postgres
      endpoints: [postgres://monitor@db:5432/billing]
      passwordFile: /run/secrets/pg
      prefixes: ['']                        # '' watches every lock (the default)`,
  options: { config: { type: 'string' }, listen: { type: 'string' }, 'max-locks': { type: 'string' } },
  connectionFlags: false,
  async run(args) {
    const values = parse(args, this).values as Record<string, string | undefined>;
    if (values.config === undefined) throw new LockLensError('INVALID_ARGUMENT', 'serve needs --config FILE (see locklens serve --help)');
    const config = loadConfig(values.config);
    const listen = values.listen === undefined ? config.listen : parseListen(values.listen, (m) => { throw new LockLensError('INVALID_ARGUMENT', `--listen: ${m}`); });
    const maxLocks = parsePositiveInt(values['max-locks'], '--max-locks', config.maxLocks);
    const log = jsonLog();
    compileWasmWithLiftoff();
    // Every batch of lock events, in order, goes here: the metrics count them (and the recorder, when there is one).
    const recorder =
      config.data === undefined
        ? undefined
        : await HistoryRecorder.open(config.data, { bounds: { ...DEFAULT_BOUNDS, ...definedOf(config.history) }, log, onForceReleases: (found) => metrics.countForceReleases(found) });
    const onEvents: WatcherOptions['onEvents'] = (events, read) => {
      metrics.count(events);
      if (!recorder) return;
      for (const event of events) recorder.record(event, read.store);
      // A full read found what is there: a hold recorded open (by an earlier run too) that it did not find has ended.
      if (read.full) recorder.caughtUp(read.connection);
    };
    const watchers = config.connections.map((c) => new ConnectionWatcher(c, { log, lockTables: config.lockTables, onEvents }));
    const metrics = new ServeMetrics(watchers, { maxLocks, ...config.lockNames }, version());
    const server = await startServer({
      listen,
      bearerToken: config.bearerToken,
      tls: config.tls,
      metrics: async () => ({ text: await metrics.registry.metrics(), contentType: metrics.registry.contentType }),
      notReady: () => watchers.filter((w) => !w.ready).map((w) => w.name),
    });
    const stopped = new Promise<string>((resolve) => ['SIGINT', 'SIGTERM'].forEach((s) => process.once(s, () => resolve(s))));
    log('info', 'serving', {
      metrics: `${server.url}/metrics`,
      tls: config.tls !== undefined,
      bearerToken: config.bearerToken !== undefined,
      maxLocks,
      connections: config.connections.map(({ settings: s }) => ({ name: s.name, store: s.store, endpoints: s.endpoints, prefixes: s.prefixes })),
    });
    const unsizeHeap = sizeHeap(Promise.all(watchers.map((w) => w.firstRead)));
    watchers.forEach((w) => w.start());
    const signal = await stopped;
    log('info', 'stopping', { signal });
    await Promise.all([server.close(), ...watchers.map((w) => w.close())]);
    await recorder?.close();
    unsizeHeap();
    log('info', 'stopped');
    return 0;
  },
};

/** The fields given a value: a config's history may name one bound and leave the other to its default. */
function definedOf<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

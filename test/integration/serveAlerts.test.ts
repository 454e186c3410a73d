import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Procs, show, type Proc } from '../harness/cli';
import { eventually } from '../harness/etcd';
import { startPostgres, SUPERUSER_PASSWORD, type PostgresServer } from '../harness/postgres';
import {
  PROMETHEUS_DEPLOY,
  RULES_FILE,
  WebhookReceiver,
  quickAlertmanagerConfig,
  quickPrometheusConfig,
  shortenRules,
  startAlertmanager,
  startPrometheus,
  type AlertmanagerServer,
  type PrometheusServer,
  type WebhookAlert,
} from '../harness/prometheus';
import { PsycopgLock } from '../harness/psycopg';
import { get, scrape, servingUrl, valueOf } from '../harness/serve';

/**
 * The whole alert path with real servers and real clients: `locklens serve` (dist/locklens.js) watches a PostgreSQL
 * where a psycopg2 session holds advisory lock 42 and two others wait behind it; its process is then stopped with
 * SIGSTOP (its session and its lock stay: the stuck holder of an incident). Debian's Prometheus scrapes serve and
 * evaluates the shipped rules, their thresholds and `for`s shortened to seconds and their expressions as shipped, and
 * sends to Debian's Alertmanager, configured by the shipped example, which delivers to a webhook receiver in this test:
 * LockLensLockHeldTooLong firing, naming the lock; then `locklens unlock 42 --force --yes` terminates the stopped
 * holder's session, the waiters take the lock in turn and let it go at once, and the alert is delivered resolved.
 */

const CONNECTION = 'billing-db';
const LOCK = { connection: CONNECTION, store: 'postgres', lock: '42', kind: 'queue' };
/**
 * Every rule gets the chance to fire within the test: a stuck holder passes HELD_S seconds moments after it is stopped.
 * The waiters, once the lock is theirs, release it at once (their gates are open before the force release), so no hold
 * after it comes near HELD_S and the alert resolves for good. LockLensDown keeps its minute: a missed scrape on a busy
 * machine is not what this test is about.
 */
const HELD_S = 3;
const SHORTENED = {
  LockLensLockHeldTooLong: { threshold: ['600', String(HELD_S)], for: '2s' },
  LockLensLockNotRenewed: { for: '2s' },
  LockLensHolderNeverExpires: { threshold: ['3600', String(HELD_S)], for: '2s' },
  LockLensStoreDown: { for: '2s' },
} as const;

describe('locklens serve → Prometheus → the shipped rules → Alertmanager → a webhook', { timeout: 120_000 }, () => {
  let pg: PostgresServer | undefined;
  let webhook: WebhookReceiver | undefined;
  let alertmanager: AlertmanagerServer | undefined;
  let prometheus: PrometheusServer | undefined;
  let dir = '';
  const procs = new Procs('');
  let serve: Proc;
  let target = '';
  const peers: PsycopgLock[] = [];

  before(async () => {
    // Assigned as each starts, so that `after` stops what did even if the other failed.
    await Promise.all([
      startPostgres().then((p) => (pg = p)),
      WebhookReceiver.start().then(async (w) => {
        webhook = w;
        alertmanager = await startAlertmanager(quickAlertmanagerConfig(readFileSync(join(PROMETHEUS_DEPLOY, 'alertmanager.example.yml'), 'utf8'), w.url));
      }),
    ]);
    dir = mkdtempSync(join(tmpdir(), 'locklens-serve-alerts-'));
    const config = join(dir, 'serve.yml');
    writeFileSync(config, `listen: 127.0.0.1:0\nconnections:\n  - name: ${CONNECTION}\n    store: postgres\n    endpoints: [${pg!.url()}]\n    passwordEnv: PG_MONITOR_PASSWORD\n`);
    serve = procs.locklens(['serve', '--config', config], { env: { PG_MONITOR_PASSWORD: SUPERUSER_PASSWORD } });
    const base = await servingUrl(serve);
    target = new URL(base).host;
    // Prometheus starts scraping a serve that watches: LockLensStoreDown, shortened, must not see it still loading.
    await eventually(async () => (await get(`${base}/readyz`)).status === 200, 30_000, 'serve ready');
    const rules = shortenRules(readFileSync(RULES_FILE, 'utf8'), SHORTENED);
    const prometheusConfig = quickPrometheusConfig(readFileSync(join(PROMETHEUS_DEPLOY, 'scrape.yml'), 'utf8'), {
      target,
      ruleFile: 'locklens-rules.yml',
      alertmanager: `127.0.0.1:${alertmanager!.port}`,
    });
    prometheus = await startPrometheus(prometheusConfig, { 'locklens-rules.yml': rules });
  });

  after(async () => {
    // A stopped process is woken before it is killed, so nothing of the test stays frozen.
    for (const p of peers) {
      p.signal('SIGCONT');
      p.dispose();
    }
    await procs.dispose();
    await prometheus?.dispose();
    await alertmanager?.dispose();
    await webhook?.dispose();
    await pg?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A psycopg2 session on lock 42, ended with the test. */
  const psycopg = (application: string) => {
    const peer = new PsycopgLock(pg!.dsn(), LOCK.lock, { application });
    peers.push(peer);
    return peer;
  };
  /** serve's metrics until `check` holds of lock 42's series. */
  const served = (what: string, check: (value: (name: string) => number | undefined) => boolean) =>
    eventually(async () => {
      if (!serve.running) throw new Error(`serve exited: ${serve.stdout} ${serve.stderr}`);
      const m = await scrape(`http://${target}`);
      return check((name) => valueOf(m, `locklens_lock_${name}`, LOCK));
    }, 30_000, what);

  test('a stopped holder with two waiting is delivered firing, naming the lock; force-released, it is delivered resolved', async () => {
    const holder = psycopg('billing-worker');
    await holder.until(['acquired']);
    // In order: the first waiter is waiting (serve sees it) before the second begins.
    const first = psycopg('report-export');
    await served('the first waiter', (v) => v('holders') === 1 && v('waiters') === 1);
    const second = psycopg('ledger-sync');
    await served('both waiters', (v) => v('waiters') === 2);
    holder.signal('SIGSTOP');
    const isOurs = (a: WebhookAlert) => a.labels.alertname === 'LockLensLockHeldTooLong' && a.labels.lock === LOCK.lock;

    const firing = await webhook!.waitFor('LockLensLockHeldTooLong firing', (a) => isOurs(a) && a.status === 'firing', 30_000);
    assert.deepEqual(firing.labels, { alertname: 'LockLensLockHeldTooLong', severity: 'warning', job: 'locklens', instance: target, ...LOCK });
    assert.match(firing.annotations.summary, /^Lock 42 held for [\d.]+s while others wait \(billing-db\)$/);
    assert.match(firing.annotations.description, /On connection billing-db \(postgres\), the queue lock 42 has been held for [\d.]+s, with 2 waiting behind it\./);
    assert.match(firing.annotations.inspect, /locklens list --url <billing-db's endpoints in locklens.yml> --prefix '42'/);

    // The waiters let go as soon as the lock is theirs; the force release ends the stopped holder's session.
    first.release();
    second.release();
    const r = await procs.run(['unlock', LOCK.lock, '--force', '--yes', '--url', pg!.url()], { env: { PGPASSWORD: SUPERUSER_PASSWORD } });
    assert.equal(r.code, 0, show(r));
    const holderPid = await holder.pid();
    assert.match(r.stdout, new RegExp(`^released '42' from pid ${holderPid} .*: terminated session pid ${holderPid}, which freed every lock it held\\n`), show(r));
    assert.deepEqual([await first.until(['released', 'release-failed']), await second.until(['released', 'release-failed'])], ['released', 'released'], 'the waiters took the lock in turn');
    await served('lock 42 free', (v) => v('holders') === undefined);

    const resolved = await webhook!.waitFor('LockLensLockHeldTooLong resolved', (a) => isOurs(a) && a.status === 'resolved', 30_000);
    assert.equal(resolved.startsAt, firing.startsAt, 'the same alert resolved');
    const ours = webhook!.notifications.flatMap((n) => n.alerts).filter(isOurs);
    assert.deepEqual([...new Set(ours.map((a) => a.startsAt))], [firing.startsAt], 'it fired once: no hold after the release was held too long');

    // A session lock has no TTL to renew and ends with its session; serve watched throughout: no other rule fired.
    const others = webhook!.notifications.flatMap((n) => n.alerts).filter((a) => !isOurs(a));
    assert.deepEqual(others, [], `alerts of other rules: ${prometheus!.output.slice(-2000)}`);
  });
});

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { freePort } from '../harness/ports';
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
} from '../harness/prometheus';

/**
 * The whole alert path with Debian's real servers: Prometheus scrapes LockLens's metrics and evaluates the shipped
 * rules (LockLensLockHeldTooLong's threshold and `for` shortened to seconds, its expression as shipped), sends the
 * alert to Alertmanager, configured by the shipped example, which delivers it to a webhook receiver in this test:
 * firing while a lock is held too long with others waiting, resolved once it is released.
 *
 * The scrape target is a stand-in for `locklens serve`: the exposition it would serve, with the design's metric names.
 * Once serve lands it takes the stand-in's place, watching a real psycopg2 holder stopped with SIGSTOP while others
 * wait, which LockLens then force-releases.
 */

const LOCK = { connection: 'billing-db', store: 'postgres', lock: '42', kind: 'queue' };
/** The shortened threshold, in seconds: the stand-in's hold passes it a few seconds after the test starts. */
const HELD_TOO_LONG_S = 3;

/** A lock's state as the stand-in exposes it: held since `since` (ms) with `waiters` waiting, or free. */
type Hold = { readonly since: number; readonly waiters: number } | undefined;

/** Serves on /metrics what `locklens serve` would for one connection with one lock, as `hold()` says it is now. */
class StandInTarget {
  private constructor(
    private readonly server: Server,
    readonly address: string,
  ) {}

  static async start(hold: () => Hold): Promise<StandInTarget> {
    const port = await freePort();
    const server = createServer((req, res) => {
      if (req.url !== '/metrics') res.writeHead(404).end();
      else res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' }).end(exposition(hold()));
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return new StandInTarget(server, `127.0.0.1:${port}`);
  }

  dispose(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function exposition(hold: Hold): string {
  const store = `connection="${LOCK.connection}",store="${LOCK.store}"`;
  const lock = `${store},lock="${LOCK.lock}",kind="${LOCK.kind}"`;
  const gauges: [string, string, number][] = [
    ['locklens_store_up', store, 1],
    ['locklens_locks', store, 1],
    ['locklens_lock_holders', lock, hold ? 1 : 0],
    ['locklens_lock_waiters', lock, hold?.waiters ?? 0],
    ['locklens_lock_oldest_hold_seconds', lock, hold ? (Date.now() - hold.since) / 1000 : 0],
    ['locklens_lock_renewal_stalled', lock, 0],
    ['locklens_lock_holder_never_expires', lock, 0],
  ];
  return gauges.map(([name, labels, value]) => `# TYPE ${name} gauge\n${name}{${labels}} ${value}\n`).join('');
}

describe('Prometheus → the shipped rules → Alertmanager → a webhook', () => {
  let hold: Hold;
  let webhook: WebhookReceiver | undefined;
  let alertmanager: AlertmanagerServer | undefined;
  let target: StandInTarget | undefined;
  let prometheus: PrometheusServer | undefined;

  before(async () => {
    webhook = await WebhookReceiver.start();
    alertmanager = await startAlertmanager(quickAlertmanagerConfig(readFileSync(join(PROMETHEUS_DEPLOY, 'alertmanager.example.yml'), 'utf8'), webhook.url));
    target = await StandInTarget.start(() => hold);
    const rules = shortenRules(readFileSync(RULES_FILE, 'utf8'), { LockLensLockHeldTooLong: { threshold: ['600', String(HELD_TOO_LONG_S)], for: '2s' } });
    const config = quickPrometheusConfig(readFileSync(join(PROMETHEUS_DEPLOY, 'scrape.yml'), 'utf8'), {
      target: target.address,
      ruleFile: 'locklens-rules.yml',
      alertmanager: `127.0.0.1:${alertmanager.port}`,
    });
    prometheus = await startPrometheus(config, { 'locklens-rules.yml': rules });
  });

  after(async () => {
    await prometheus?.dispose();
    await target?.dispose();
    await alertmanager?.dispose();
    await webhook?.dispose();
  });

  test('a lock held too long with others waiting is delivered firing, then resolved once it is released', async () => {
    hold = { since: Date.now(), waiters: 2 };
    const isOurs = (a: { labels: Readonly<Record<string, string>> }) => a.labels.alertname === 'LockLensLockHeldTooLong' && a.labels.lock === LOCK.lock;

    const firing = await webhook!.waitFor('LockLensLockHeldTooLong firing', (a) => isOurs(a) && a.status === 'firing');
    assert.deepEqual(firing.labels, { alertname: 'LockLensLockHeldTooLong', severity: 'warning', job: 'locklens', instance: target!.address, ...LOCK });
    assert.match(firing.annotations.summary, /^Lock 42 held for [\d.]+s while others wait \(billing-db\)$/);
    assert.match(firing.annotations.description, /On connection billing-db \(postgres\), the queue lock 42 has been held for [\d.]+s, with 2 waiting behind it\./);
    assert.match(firing.annotations.inspect, /locklens list --url <billing-db's endpoints in locklens.yml> --prefix '42'/);

    // Released (as a force release would): no holder, no one waiting.
    hold = undefined;
    const resolved = await webhook!.waitFor('LockLensLockHeldTooLong resolved', (a) => isOurs(a) && a.status === 'resolved');
    assert.equal(resolved.startsAt, firing.startsAt, 'the same alert resolved');

    // A healthy store, renewing holders that expire: no other rule fired on the way.
    const others = webhook!.notifications.flatMap((n) => n.alerts).filter((a) => !isOurs(a));
    assert.deepEqual(others, [], `alerts of other rules: ${prometheus!.log.slice(-2000)}`);
  });
});

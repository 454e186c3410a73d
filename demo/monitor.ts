import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { sleep } from '../src/core/sleep';
import { repoRoot } from './codeServer';
import { freePort } from './ports';
import { Group } from './processes';
import {
  PROMETHEUS_DEPLOY,
  RULES_FILE,
  alertmanagerCommand,
  prometheusCommand,
  quickAlertmanagerConfig,
  quickPrometheusConfig,
  shortenRules,
  startWebhook,
  untilReady,
  type ServerCommand,
  type Webhook,
  type WebhookNotification,
} from './prometheus';

/**
 * The demo, always on: `locklens serve` (dist/locklens.js) watching the demo's own connections, and, when Debian's
 * prometheus and prometheus-alertmanager are installed, a Prometheus scraping it with the shipped rules (thresholds
 * shortened so that the stuck holders alert within a minute) and an Alertmanager, configured by the shipped example,
 * delivering to a webhook in the demo, which prints each alert as it fires and resolves. Every process is a Group of
 * the demo's run (processes.ts), stopped with the rest of the demo.
 */

/** The shipped rules' thresholds and `for`s, shortened for the demo. */
export const DEMO_RULES = {
  LockLensLockHeldTooLong: { threshold: ['600', '30'], for: '15s' },
  LockLensHolderNeverExpires: { threshold: ['3600', '60'], for: '15s' },
} as const;

export interface MonitorOptions {
  /** The demo's temp dir: the configs and Prometheus' data go in `monitor/` under it. */
  readonly root: string;
  readonly runId: string;
  /** What serve watches: the connections VS Code gets (connections.ts). */
  readonly connections: readonly Record<string, unknown>[];
  readonly log: (who: string, message: string) => void;
  /** Print every line serve logs, not only its warnings and errors. */
  readonly verbose: boolean;
}

export interface DemoMonitor {
  /** serve's /metrics. */
  readonly metricsUrl: string;
  /** Prometheus' and Alertmanager's base URLs; undefined when they are not installed. */
  readonly prometheusUrl?: string;
  readonly alertmanagerUrl?: string;
  stop(): Promise<void>;
}

function prometheusInstalled(): boolean {
  return spawnSync('sh', ['-c', 'command -v prometheus && command -v prometheus-alertmanager'], { stdio: 'ignore' }).status === 0;
}

/** The shortened rules in words, for the demo's output. */
export function demoRulesText(): string {
  return Object.entries(DEMO_RULES)
    .map(([alert, { threshold, for: pending }]) => `${alert} over ${threshold[1]} s (shipped: ${threshold[0]} s) for ${pending}`)
    .join(', ');
}

export async function startMonitor(options: MonitorOptions): Promise<DemoMonitor> {
  const dir = join(options.root, 'monitor');
  mkdirSync(dir, { recursive: true });
  const groups: Group[] = [];
  let webhook: Webhook | undefined;
  const stop = async () => {
    await Promise.all(groups.map((g) => g.stop(3000)));
    await webhook?.close();
  };
  try {
    const serve = await startServe(dir, options);
    groups.push(serve.group);
    if (!prometheusInstalled()) return { metricsUrl: `${serve.url}/metrics`, stop };

    webhook = await startWebhook(alertPrinter(options.log));
    const alertmanagerPort = await freePort();
    writeFileSync(join(dir, 'alertmanager.yml'), stringify(quickAlertmanagerConfig(readFileSync(join(PROMETHEUS_DEPLOY, 'alertmanager.example.yml'), 'utf8'), webhook.url)));
    const alertmanager = alertmanagerCommand(join(dir, 'alertmanager.yml'), join(dir, 'alertmanager-data'), alertmanagerPort);
    const alertmanagerUrl = await startServer('alertmanager', alertmanager, alertmanagerPort, options.runId, groups);

    const prometheusPort = await freePort();
    writeFileSync(join(dir, 'locklens-rules.yml'), shortenRules(readFileSync(RULES_FILE, 'utf8'), DEMO_RULES));
    const config = quickPrometheusConfig(readFileSync(join(PROMETHEUS_DEPLOY, 'scrape.yml'), 'utf8'), {
      target: new URL(serve.url).host,
      ruleFile: 'locklens-rules.yml',
      alertmanager: `127.0.0.1:${alertmanagerPort}`,
    });
    writeFileSync(join(dir, 'prometheus.yml'), stringify(config));
    const prometheus = prometheusCommand(join(dir, 'prometheus.yml'), join(dir, 'prometheus-data'), prometheusPort);
    const prometheusUrl = await startServer('prometheus', prometheus, prometheusPort, options.runId, groups);
    return { metricsUrl: `${serve.url}/metrics`, prometheusUrl, alertmanagerUrl, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** serve on a port the OS picks (it says which in its first log line); its warnings and errors go to the demo's output. */
async function startServe(dir: string, options: MonitorOptions): Promise<{ group: Group; url: string }> {
  const config = join(dir, 'serve.json');
  writeFileSync(config, JSON.stringify({ listen: '127.0.0.1:0', connections: options.connections }, null, 2));
  let url: string | undefined;
  const onLine = (line: string) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return options.log('locklens serve', line);
    }
    const { time: _, level, msg, ...fields } = entry;
    if (msg === 'serving') url = String(fields.metrics).replace(/\/metrics$/, '');
    if (level !== 'info' || options.verbose) options.log('locklens serve', `${String(level)}: ${String(msg)} ${JSON.stringify(fields)}`);
  };
  const group = new Group('locklens serve', process.execPath, [join(repoRoot, 'dist/locklens.js'), 'serve', '--config', config], options.runId, { onLine });
  const deadline = Date.now() + 20_000;
  while (url === undefined) {
    if (!group.running || Date.now() > deadline) {
      await group.stop(1000);
      throw new Error(`locklens serve did not start${group.running ? ' in 20 s' : ''}:\n${group.output.slice(-3000)}`);
    }
    await sleep(25);
  }
  return { group, url };
}

/** Starts Prometheus or Alertmanager in a Group (added to `groups` at once, so a failure stops it too); its URL once ready. */
async function startServer(name: string, { command, args }: ServerCommand, port: number, runId: string, groups: Group[]): Promise<string> {
  const group = new Group(name, command, args, runId);
  groups.push(group);
  const url = `http://127.0.0.1:${port}`;
  await untilReady(name, url, group);
  return url;
}

/** Prints each alert Alertmanager delivers as it turns firing or resolved (a group's notifications repeat its alerts). */
function alertPrinter(log: MonitorOptions['log']): (n: WebhookNotification) => void {
  const last = new Map<string, string>();
  return ({ alerts }) => {
    for (const a of alerts) {
      if (last.get(a.fingerprint) === a.status) continue;
      last.set(a.fingerprint, a.status);
      log('alert', `${a.labels.alertname} ${a.status}: ${a.annotations.summary ?? ''}`);
    }
  };
}

import { createServer, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { sleep } from '../src/core/sleep';
import { repoRoot } from './codeServer';
import { freePort } from './ports';

/**
 * Debian's Prometheus and Alertmanager (scripts/setup.sh installs them) run on the shipped deploy files made quick:
 * rules with shortened thresholds, a scrape and an evaluation every second, notifications grouped for a second. The
 * demo runs them to show an alert fire within a minute, the tests (test/harness/prometheus.ts) to check the alert path
 * end to end; both run the same command lines and the same rewrites of the shipped files. Here rather than under test/
 * for the same reason as codeServer.ts: the demo is bundled and may not import the test harness.
 */

export const PROMETHEUS_DEPLOY = join(repoRoot, 'deploy/prometheus');
export const RULES_FILE = join(PROMETHEUS_DEPLOY, 'locklens-rules.yml');

export interface RuleChange {
  /** The number in the rule's expression and what it becomes, e.g. ['600', '3']: it must occur there exactly once. */
  readonly threshold?: readonly [string, string];
  readonly for?: string;
}

interface RuleFile {
  groups: { name: string; rules: { alert?: string; expr: string; for?: string }[] }[];
}

/**
 * The shipped rules with some thresholds and `for`s shortened, so that an alert comes in seconds rather than minutes
 * while the expressions stay the shipped ones. A rule or number that is not found fails loudly: a rewrite that silently
 * matched nothing would show the wrong threshold.
 */
export function shortenRules(text: string, changes: Readonly<Record<string, RuleChange>>): string {
  const file = parse(text) as RuleFile;
  const rules = file.groups.flatMap((g) => g.rules);
  for (const [alert, change] of Object.entries(changes)) {
    const rule = rules.find((r) => r.alert === alert);
    if (!rule) throw new Error(`no rule ${alert} in the shipped rules`);
    if (change.threshold) {
      const [from, to] = change.threshold;
      const number = new RegExp(`(?<![\\w.])${from.replace('.', '\\.')}(?![\\w.])`, 'g');
      const found = rule.expr.match(number)?.length ?? 0;
      if (found !== 1) throw new Error(`${alert}: ${from} occurs ${found} times in ${rule.expr}, not once`);
      rule.expr = rule.expr.replace(number, to);
    }
    if (change.for) rule.for = change.for;
  }
  return stringify(file);
}

/** The shipped Alertmanager example, delivering to `webhookUrl` and grouping for about a second instead of minutes. */
export function quickAlertmanagerConfig(exampleText: string, webhookUrl: string): unknown {
  const config = parse(exampleText) as {
    route: Record<string, unknown> & { routes?: Record<string, unknown>[] };
    receivers: { webhook_configs?: { url: string }[] }[];
  };
  for (const route of [config.route, ...(config.route.routes ?? [])]) Object.assign(route, { group_wait: '1s', group_interval: '1s' });
  const webhooks = config.receivers.flatMap((r) => r.webhook_configs ?? []);
  if (webhooks.length !== 1) throw new Error(`the Alertmanager example should have one webhook, it has ${webhooks.length}`);
  webhooks[0].url = webhookUrl;
  return config;
}

/**
 * The shipped scrape config as a whole Prometheus config: scraping `target` every second, evaluating `ruleFile`
 * every second, and sending alerts to the Alertmanager at `alertmanager` (host:port).
 */
export function quickPrometheusConfig(scrapeText: string, options: { target: string; ruleFile: string; alertmanager: string }): unknown {
  const config = parse(scrapeText) as { scrape_configs: { static_configs: { targets: string[] }[] }[] } & Record<string, unknown>;
  const [job] = config.scrape_configs;
  Object.assign(job, { scrape_interval: '1s', scrape_timeout: '1s', static_configs: [{ targets: [options.target] }] });
  return {
    ...config,
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    rule_files: [options.ruleFile],
    alerting: { alertmanagers: [{ static_configs: [{ targets: [options.alertmanager] }] }] },
  };
}

/** A command line of Debian's servers: its program and arguments. */
export interface ServerCommand {
  readonly command: string;
  readonly args: string[];
}

/** Prometheus with `configFile`, its storage in `dataDir`, on 127.0.0.1:`port`. */
export function prometheusCommand(configFile: string, dataDir: string, port: number): ServerCommand {
  const args = [
    `--config.file=${configFile}`,
    `--storage.tsdb.path=${dataDir}`,
    `--web.listen-address=127.0.0.1:${port}`,
    // Firing alerts are sent again every resend delay (1m by default); quick alerts live for seconds.
    '--rules.alert.resend-delay=1s',
  ];
  return { command: 'prometheus', args };
}

/** Alertmanager with `configFile`, its storage in `dataDir`, on 127.0.0.1:`port`. */
export function alertmanagerCommand(configFile: string, dataDir: string, port: number): ServerCommand {
  // An empty cluster address: one Alertmanager, no gossip port.
  const args = [`--config.file=${configFile}`, `--storage.path=${dataDir}`, `--web.listen-address=127.0.0.1:${port}`, '--cluster.listen-address='];
  return { command: 'prometheus-alertmanager', args };
}

/** The HTTP status of a GET of `url` (the body read and dropped, so the connection is freed). */
async function statusOf(url: string): Promise<number> {
  const response = await fetch(url);
  await response.arrayBuffer();
  return response.status;
}

/**
 * Waits until the server at `url` answers 200 on /-/ready; fails with its output if it exits (`running` false) or
 * is not ready in time.
 */
export async function untilReady(name: string, url: string, server: { readonly running: boolean; readonly output: string }, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!server.running) throw new Error(`${name} exited: ${server.output.slice(-3000)}`);
    if ((await statusOf(`${url}/-/ready`).catch(() => undefined)) === 200) return;
    if (Date.now() > deadline) throw new Error(`${name} not ready in ${timeoutMs} ms: ${server.output.slice(-3000)}`);
    await sleep(100);
  }
}

/** One alert as Alertmanager's webhook delivers it. */
export interface WebhookAlert {
  readonly status: 'firing' | 'resolved';
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly startsAt: string;
  readonly fingerprint: string;
}

/** Alertmanager's webhook payload (version 4), the fields read here. */
export interface WebhookNotification {
  readonly alerts: readonly WebhookAlert[];
}

export interface Webhook {
  readonly url: string;
  close(): Promise<void>;
}

/** An HTTP server on a free loopback port that hands every notification Alertmanager posts to `path` to `onNotification`. */
export async function startWebhook(onNotification: (n: WebhookNotification) => void, path = '/locklens'): Promise<Webhook> {
  const port = await freePort();
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      if (req.method === 'POST' && req.url === path) onNotification(JSON.parse(body) as WebhookNotification);
      res.writeHead(req.url === path ? 200 : 404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}${path}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => resolve(body)).on('error', reject);
  });
}

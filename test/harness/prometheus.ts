import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { repoRoot } from '../../demo/codeServer';
import { Proc, type Result } from './cli';
import { eventually, sleep } from './etcd';
import { freePort } from './ports';
import { startOrDispose } from './processes';

/**
 * Debian's Prometheus and Alertmanager (installed by scripts/setup.sh) for the tests of the shipped deploy files: their
 * checkers (promtool, amtool), real servers on free loopback ports with temporary storage, and a webhook receiver that
 * records what Alertmanager delivers. Every process started here is killed when the test process exits (cli.ts's Proc).
 */

export const PROMETHEUS_DEPLOY = join(repoRoot, 'deploy/prometheus');
export const RULES_FILE = join(PROMETHEUS_DEPLOY, 'locklens-rules.yml');

/** Runs a checker (promtool, amtool, systemd-analyze) to its end; cli.ts's `show(result)` makes it a failure message. */
export function runTool(command: string, args: readonly string[], cwd?: string): Promise<Result> {
  const p = new Proc(`${command} ${args.join(' ')}`, command, args, process.env, cwd);
  p.child.stdin!.end();
  return p.wait();
}

export interface RuleChange {
  /** The number in the rule's expression and what it becomes, e.g. ['600', '3']: it must occur there exactly once. */
  readonly threshold?: readonly [string, string];
  readonly for?: string;
}

interface RuleFile {
  groups: { name: string; rules: { alert?: string; expr: string; for?: string }[] }[];
}

/**
 * The shipped rules with some thresholds and `for`s shortened, so that a test waits seconds rather than minutes while
 * the expressions stay the shipped ones. A rule or number that is not found fails loudly: a rewrite that silently
 * matched nothing would test the wrong threshold.
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

/** The HTTP status of a GET of `url` (the body read and dropped, so the connection is freed). */
async function statusOf(url: string): Promise<number> {
  const response = await fetch(url);
  await response.arrayBuffer();
  return response.status;
}

/** A Prometheus or Alertmanager process: started, polled on /-/ready, killed, its dir removed. */
abstract class PromServer {
  private proc?: Proc;
  protected readonly dir: string;

  constructor(
    private readonly name: string,
    readonly port: number,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), `locklens-${name}-`));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  get log(): string {
    return `${this.proc?.stdout ?? ''}${this.proc?.stderr ?? ''}`;
  }

  protected abstract command(): { command: string; args: string[] };

  async start(timeoutMs = 30_000): Promise<void> {
    const { command, args } = this.command();
    const proc = new Proc(this.name, command, args, process.env);
    this.proc = proc;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!proc.running) throw new Error(`${this.name} exited: ${this.log.slice(-3000)}`);
      if ((await statusOf(`${this.url}/-/ready`).catch(() => undefined)) === 200) return;
      if (Date.now() > deadline) throw new Error(`${this.name} not ready in ${timeoutMs} ms: ${this.log.slice(-3000)}`);
      await sleep(100);
    }
  }

  async dispose(): Promise<void> {
    await this.proc?.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export class AlertmanagerServer extends PromServer {
  private readonly configFile = join(this.dir, 'alertmanager.yml');

  constructor(port: number, config: unknown) {
    super('alertmanager', port);
    writeFileSync(this.configFile, stringify(config));
  }

  protected command() {
    // An empty cluster address: one Alertmanager, no gossip port.
    const args = [`--config.file=${this.configFile}`, `--storage.path=${join(this.dir, 'data')}`, `--web.listen-address=127.0.0.1:${this.port}`, '--cluster.listen-address='];
    return { command: 'prometheus-alertmanager', args };
  }
}

export class PrometheusServer extends PromServer {
  private readonly configFile = join(this.dir, 'prometheus.yml');

  /** `files` are written next to the config (rule files, credentials), which may name them relatively. */
  constructor(port: number, config: unknown, files: Readonly<Record<string, string>> = {}) {
    super('prometheus', port);
    writeFileSync(this.configFile, stringify(config));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(this.dir, name), text);
  }

  protected command() {
    const args = [
      `--config.file=${this.configFile}`,
      `--storage.tsdb.path=${join(this.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${this.port}`,
      // Firing alerts are sent again every resend delay (1m by default); a test's alerts live for seconds.
      '--rules.alert.resend-delay=1s',
    ];
    return { command: 'prometheus', args };
  }
}

/** One alert as Alertmanager's webhook delivers it. */
export interface WebhookAlert {
  readonly status: 'firing' | 'resolved';
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly startsAt: string;
}

/** Alertmanager's webhook payload (version 4), the fields the tests read. */
export interface WebhookNotification {
  readonly alerts: readonly WebhookAlert[];
}

/** An HTTP server in the test that records every notification Alertmanager posts to it. */
export class WebhookReceiver {
  readonly notifications: WebhookNotification[] = [];
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(path = '/locklens'): Promise<WebhookReceiver> {
    const port = await freePort();
    let receiver: WebhookReceiver | undefined;
    const server = createServer((req, res) => {
      void readBody(req).then((body) => {
        if (req.method === 'POST' && req.url === path) receiver!.notifications.push(JSON.parse(body) as WebhookNotification);
        res.writeHead(req.url === path ? 200 : 404).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    receiver = new WebhookReceiver(server, `http://127.0.0.1:${port}${path}`);
    return receiver;
  }

  /** Waits for a delivered alert that `match` accepts, and returns it. */
  waitFor(what: string, match: (alert: WebhookAlert) => boolean, timeoutMs = 60_000): Promise<WebhookAlert> {
    const delivered = () => this.notifications.flatMap((n) => n.alerts).find(match);
    return eventually(delivered, timeoutMs, `${what}; delivered so far: ${JSON.stringify(this.notifications)}`);
  }

  dispose(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => resolve(body)).on('error', reject);
  });
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

export async function startAlertmanager(config: unknown): Promise<AlertmanagerServer> {
  const server = new AlertmanagerServer(await freePort(), config);
  return startOrDispose(server);
}

export async function startPrometheus(config: unknown, files: Readonly<Record<string, string>> = {}): Promise<PrometheusServer> {
  const server = new PrometheusServer(await freePort(), config, files);
  return startOrDispose(server);
}

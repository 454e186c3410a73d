import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { alertmanagerCommand, prometheusCommand, startWebhook, untilReady, type ServerCommand, type Webhook, type WebhookAlert, type WebhookNotification } from '../../demo/prometheus';
import { Proc, type Result } from './cli';
import { eventually } from './etcd';
import { freePort } from './ports';
import { startOrDispose } from './processes';

// The shipped files made quick, the servers' command lines and the webhook are the demo's too: see demo/prometheus.ts.
export { PROMETHEUS_DEPLOY, RULES_FILE, quickAlertmanagerConfig, quickPrometheusConfig, shortenRules, type RuleChange, type WebhookAlert } from '../../demo/prometheus';

/**
 * Debian's Prometheus and Alertmanager (installed by scripts/setup.sh) for the tests of the shipped deploy files: their
 * checkers (promtool, amtool), real servers on free loopback ports with temporary storage, and a webhook receiver that
 * records what Alertmanager delivers. Every process started here is killed when the test process exits (cli.ts's Proc).
 */

/** Runs a checker (promtool, amtool, systemd-analyze) to its end; cli.ts's `show(result)` makes it a failure message. */
export function runTool(command: string, args: readonly string[], cwd?: string): Promise<Result> {
  const p = new Proc(`${command} ${args.join(' ')}`, command, args, process.env, cwd);
  p.child.stdin!.end();
  return p.wait();
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
  get running(): boolean {
    return this.proc?.running ?? false;
  }
  get output(): string {
    return `${this.proc?.stdout ?? ''}${this.proc?.stderr ?? ''}`;
  }

  protected abstract command(): ServerCommand;

  async start(timeoutMs = 30_000): Promise<void> {
    const { command, args } = this.command();
    this.proc = new Proc(this.name, command, args, process.env);
    await untilReady(this.name, this.url, this, timeoutMs);
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
    return alertmanagerCommand(this.configFile, join(this.dir, 'data'), this.port);
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
    return prometheusCommand(this.configFile, join(this.dir, 'data'), this.port);
  }
}

/** A webhook in the test that records every notification Alertmanager posts to it. */
export class WebhookReceiver {
  private constructor(
    private readonly webhook: Webhook,
    readonly notifications: WebhookNotification[],
  ) {}

  static async start(path = '/locklens'): Promise<WebhookReceiver> {
    const notifications: WebhookNotification[] = [];
    return new WebhookReceiver(await startWebhook((n) => notifications.push(n), path), notifications);
  }

  get url(): string {
    return this.webhook.url;
  }

  /** Waits for a delivered alert that `match` accepts, and returns it. */
  waitFor(what: string, match: (alert: WebhookAlert) => boolean, timeoutMs = 60_000): Promise<WebhookAlert> {
    const delivered = () => this.notifications.flatMap((n) => n.alerts).find(match);
    return eventually(delivered, timeoutMs, `${what}; delivered so far: ${JSON.stringify(this.notifications)}`);
  }

  dispose(): Promise<void> {
    return this.webhook.close();
  }
}

export async function startAlertmanager(config: unknown): Promise<AlertmanagerServer> {
  const server = new AlertmanagerServer(await freePort(), config);
  return startOrDispose(server);
}

export async function startPrometheus(config: unknown, files: Readonly<Record<string, string>> = {}): Promise<PrometheusServer> {
  const server = new PrometheusServer(await freePort(), config, files);
  return startOrDispose(server);
}

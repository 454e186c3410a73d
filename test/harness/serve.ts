import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Proc, Procs } from './cli';
import { eventually } from './etcd';

/**
 * For tests of `locklens serve`: starting it recording on a config of one connection, HTTP(S) requests to it, its JSON
 * log lines, and Prometheus' text exposition parsed
 * (samples with their labels; each family's HELP and TYPE), so tests assert on metrics rather than on text.
 */

export interface Response {
  readonly status: number;
  readonly body: string;
}

export function get(url: string, options: { headers?: Record<string, string>; ca?: Buffer } = {}): Promise<Response> {
  const request = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: options.headers, ca: options.ca, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** serve's log lines so far, parsed. */
export function logLines(p: Proc): Record<string, unknown>[] {
  return p.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The base URL serve said it listens on (its `serving` line), once it has said it. */
export async function servingUrl(p: Proc): Promise<string> {
  const line = await p.until((q) => logLines(q).find((l) => l.msg === 'serving'), 'serve to say where it listens');
  return String(line.metrics).replace(/\/metrics$/, '');
}

/** A connection of serve's config as a test writes it: its password only named, by the variable that holds it. */
export interface ConfigConnection {
  readonly name: string;
  readonly store: string;
  readonly endpoints: readonly string[];
  readonly prefixes: readonly string[];
  readonly passwordEnv?: string;
  /** How often a store that pushes nothing is read (serve's default, 5 s, would miss a hold of 3 s). */
  readonly pollSeconds?: number;
}

/**
 * Starts `locklens serve` on a config (written as `dir`/serve.json) watching `connection` and recording into `data`,
 * and waits until /readyz says its first full read is done: from then on what it found is recorded, and a later change
 * is seen as it happens.
 */
export async function startRecordingServe(
  procs: Procs,
  options: { dir: string; data: string; connection: ConfigConnection; env?: NodeJS.ProcessEnv },
): Promise<{ serve: Proc; base: string }> {
  const config = join(options.dir, 'serve.json');
  writeFileSync(config, JSON.stringify({ listen: '127.0.0.1:0', data: options.data, connections: [options.connection] }));
  const serve = procs.locklens(['serve', '--config', config], { env: options.env });
  const base = await servingUrl(serve);
  await eventually(async () => {
    if (!serve.running) throw new Error(`serve exited: ${serve.stdout} ${serve.stderr}`);
    return (await get(`${base}/readyz`)).status === 200;
  }, 30_000, 'serve ready');
  return { serve, base };
}

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly samples: readonly Sample[];
  readonly help: ReadonlyMap<string, string>;
  readonly type: ReadonlyMap<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Prometheus' text format (0.0.4); throws on a line it does not know. */
export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const help = new Map<string, string>();
  const type = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      (meta[1] === 'HELP' ? help : type).set(meta[2], meta[3]);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(LABEL)) labels[k] = v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return { samples, help, type };
}

/** The family a sample belongs to: a histogram's `_bucket`, `_sum` and `_count` are its family's. */
export function familyOf(e: Exposition, name: string): string {
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return e.type.get(base) === 'histogram' ? base : name;
}

/** The value of the one sample named so whose labels include `labels`; undefined when there is none. */
export function valueOf(e: Exposition, name: string, labels: Record<string, string>): number | undefined {
  return e.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

export async function scrape(base: string, options: { headers?: Record<string, string>; ca?: Buffer } = {}): Promise<Exposition> {
  const r = await get(`${base}/metrics`, options);
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}: ${r.body}`);
  return parseExposition(r.body);
}

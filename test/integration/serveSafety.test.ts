import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestCerts, removeTestCerts, type TestCerts } from '../harness/certs';
import { Procs, show } from '../harness/cli';
import { eventually, startEtcd, type EtcdServer } from '../harness/etcd';
import { freePort } from '../harness/ports';
import { get, logLines, scrape, servingUrl, valueOf } from '../harness/serve';

/**
 * `locklens serve`'s safety: a bad config is one clear message and exit 2; /metrics over TLS behind a bearer token; a
 * store that cannot be reached is tried again (never a crash loop) and keeps /readyz at 503 naming it; lock names that
 * must not leave the host, and the bound on lock series.
 */

describe('locklens serve: safe by default', () => {
  let etcd: EtcdServer;
  let certs: TestCerts;
  let dir: string;
  let procs: Procs;
  let n = 0;
  const config = (text: string) => {
    const path = join(dir, `serve${++n}.yml`);
    writeFileSync(path, text);
    return path;
  };

  before(async () => {
    etcd = await startEtcd();
    certs = makeTestCerts();
    dir = mkdtempSync(join(tmpdir(), 'locklens-serve-safety-'));
    procs = new Procs(etcd.url);
  });

  after(async () => {
    await procs?.dispose();
    await etcd?.dispose();
    removeTestCerts(certs);
    rmSync(dir, { recursive: true, force: true });
  });

  test('a bad config: the file, line and column, what to write, exit 2; nothing started', async () => {
    const conn = `connections:\n  - name: a\n    endpoints: [${etcd.url}]\n`;
    const cases: [string, RegExp][] = [
      ['connections:\n  - name: a\n    endpoints: [1.2.3.4:2379\n', /:\d+:\d+: not valid YAML or JSON: /],
      [`${conn}    prefix: [/locks/]\n`, /:4:5: connections\[0\]\.prefix: unknown field: write one of name, store, endpoints/],
      [`${conn}    dialTimeoutMs: soon\n`, /:4:20: connections\[0\]\.dialTimeoutMs: must be a whole number ≥ 1, e.g. dialTimeoutMs: 5000/],
      [`${conn}    password: hunter2\n`, /:4:5: connections\[0\]\.password: a password is never written in the config file: write passwordEnv: VARIABLE/],
      [`${conn}    passwordFile: /nonexistent/pw\n`, /:4:19: connections\[0\]\.passwordFile: cannot read \/nonexistent\/pw \(ENOENT\): write the path of the file that holds the password/],
    ];
    for (const [text, message] of cases) {
      const path = config(text);
      const r = await procs.run(['serve', '--config', path]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, new RegExp(`^locklens: ${path.replace(/[.]/g, '\\.')}${message.source}`), show(r));
      assert.ok(!r.stderr.includes('hunter2') && r.stdout === '', show(r));
    }
    const missing = await procs.run(['serve']);
    assert.deepEqual([missing.code, missing.stderr.trim()], [2, 'locklens: serve needs --config FILE (see locklens serve --help)']);
    const help = await procs.run(['serve', '--help']);
    assert.match(help.stdout, /^Usage: locklens serve --config FILE \[--listen HOST:PORT\] \[--max-locks N\]/);
  });

  test('TLS and a bearer token: 401 without the token or with another, 200 with it; probes stay open', async () => {
    const token = 'bearer-token-never-logged';
    writeFileSync(join(dir, 'token'), `${token}\n`);
    const serve = procs.locklens(['serve', '--config', config(`metrics:
  bearerTokenFile: ${join(dir, 'token')}
  tls: { certFile: ${certs.serverCert}, keyFile: ${certs.serverKey} }
connections:
  - name: etcd
    endpoints: [${etcd.url}]
`), '--listen', '127.0.0.1:0']);
    const base = await servingUrl(serve);
    assert.match(base, /^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = readFileSync(certs.caFile);
    assert.equal((await get(`${base}/metrics`, { ca })).status, 401);
    assert.equal((await get(`${base}/metrics`, { ca, headers: { authorization: 'Bearer nope' } })).status, 401);
    assert.equal((await get(`${base}/metrics`, { ca, headers: { authorization: `Bearer ${token}x` } })).status, 401);
    const m = await scrape(base, { ca, headers: { authorization: `Bearer ${token}` } });
    assert.equal(valueOf(m, 'locklens_build_info', {}), 1);
    assert.equal((await get(`${base}/healthz`, { ca })).status, 200);
    await assert.rejects(get(base.replace('https:', 'http:') + '/healthz'), 'no plain HTTP on the TLS port');
    assert.deepEqual(logLines(serve)[0].bearerToken, true);
    serve.signal('SIGTERM');
    assert.equal((await serve.wait()).code, 0);
    assert.ok(!serve.stdout.includes(token) && !serve.stderr.includes(token));
  });

  test('a store that cannot be reached: tried again with backoff, /readyz 503 naming it, store_up 0; SIGTERM still exits 0', async () => {
    const port = await freePort();
    const serve = procs.locklens(['serve', '--listen', '127.0.0.1:0', '--config', config(`connections:
  - name: gone
    store: redis
    endpoints: [redis://127.0.0.1:${port}]
  - name: etcd
    endpoints: [${etcd.url}]
`)]);
    const base = await servingUrl(serve);
    const retries = await serve.until((p) => {
      const tries = logLines(p).filter((l) => l.connection === 'gone' && l.msg === 'cannot watch the store; trying again');
      return tries.length >= 2 && tries;
    }, 'two tries logged');
    assert.ok(retries.every((l) => typeof l.retryInMs === 'number' && l.level === 'warn' && typeof l.error === 'string'));
    await eventually(async () => JSON.parse((await get(`${base}/readyz`)).body).waiting?.join() === 'gone', 10_000, 'only gone not ready');
    assert.equal((await get(`${base}/readyz`)).status, 503);
    const m = await scrape(base);
    assert.deepEqual([valueOf(m, 'locklens_store_up', { connection: 'gone' }), valueOf(m, 'locklens_store_up', { connection: 'etcd' })], [0, 1]);
    assert.equal(valueOf(m, 'locklens_store_watch_state', { connection: 'gone', state: 'reconnecting' }), 1);
    const started = Date.now();
    serve.signal('SIGTERM');
    assert.equal((await serve.wait()).code, 0);
    assert.ok(Date.now() - started < 5000);
  });

  test('--max-locks and lockNames: at most that many lock series, the rest and dropped names in __other__', async () => {
    for (const key of ['/bound/secret/a', '/bound/tenant-1/x', '/bound/tenant-2/x', '/bound/plain']) await etcd.etcdctl(['put', key, 'v']);
    const serve = procs.locklens(['serve', '--listen', '127.0.0.1:0', '--max-locks', '2', '--config', config(`lockNames:
  drop: ['/secret/']
  rewrite: [{ match: '^/bound/tenant-[0-9]+/', replace: '/bound/tenant-N/' }]
connections:
  - name: etcd
    endpoints: [${etcd.url}]
    prefixes: [/bound/]
`)]);
    const base = await servingUrl(serve);
    const m = await eventually(async () => {
      const e = await scrape(base);
      return valueOf(e, 'locklens_locks', { connection: 'etcd' }) === 4 && e;
    }, 15_000, 'the four locks');
    const held = m.samples.filter((s) => s.name === 'locklens_lock_holders');
    const text = (await get(`${base}/metrics`)).body;
    assert.ok(!text.includes('secret'), 'a dropped name is never shown');
    // Held as long (found at the first read), the locks rank in name order.
    assert.deepEqual(held.map((s) => s.labels.lock).sort(), ['/bound/plain', '/bound/tenant-N/x', '__other__']);
    assert.equal(valueOf(m, 'locklens_lock_holders', { lock: '/bound/tenant-N/x' }), 2, 'rewritten alike: one series');
    assert.equal(valueOf(m, 'locklens_lock_holders', { lock: '__other__' }), 1);
    assert.equal(valueOf(m, 'locklens_locks_unlisted', { connection: 'etcd' }), 1);
    serve.signal('SIGTERM');
    assert.equal((await serve.wait()).code, 0);
  });
});

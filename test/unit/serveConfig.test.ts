import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/cli/serve/config';

let dir: string;
let n = 0;
/** Writes `text` to a fresh config file and returns its path. */
function file(text: string, ext = 'yml'): string {
  const path = join(dir, `c${++n}.${ext}`);
  writeFileSync(path, text);
  return path;
}

/** The message loadConfig refuses `text` with, the file's path shown as FILE. */
function refusal(text: string, env: NodeJS.ProcessEnv = {}): string {
  const path = file(text);
  try {
    loadConfig(path, env);
  } catch (e) {
    assert.equal((e as { code?: string }).code, 'INVALID_ARGUMENT');
    return (e as Error).message.replace(path, 'FILE');
  }
  assert.fail('the config was taken');
}

describe('serve config', () => {
  before(() => (dir = mkdtempSync(join(tmpdir(), 'locklens-serve-config-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a whole config: defaults, secrets read from the environment and files, names policy, history bounds', () => {
    const secret = file('pg secret\n', 'txt');
    const config = loadConfig(
      file(`data: /var/lib/locklens
history: { maxAge: 30d, maxBytes: 1GiB }
lockNames:
  drop: ['^secret/']
  rewrite: [{ match: '^tenant-[0-9]+/', replace: 'tenant-N/' }]
connections:
  - name: prod-etcd
    endpoints: [127.0.0.1:2379]
    username: monitor
    passwordEnv: ETCD_PW
    prefixes: [/locks/]
  - name: billing-db
    store: postgres
    endpoints: [postgres://monitor@db:5432/billing]
    passwordFile: ${secret}
    pollSeconds: 2
`),
      { ETCD_PW: 'etcd secret' },
    );
    assert.deepEqual(config.listen, { host: '127.0.0.1', port: 9464 }, 'loopback unless told');
    assert.equal(config.maxLocks, 500);
    assert.deepEqual(config.history, { maxAgeMs: 30 * 86_400_000, maxBytes: 2 ** 30 });
    assert.equal(config.data, '/var/lib/locklens');
    assert.equal(config.bearerToken, undefined);
    assert.deepEqual(config.connections.map((c) => [c.settings.name, c.settings.store, c.settings.prefixes, c.secrets.password]), [
      ['prod-etcd', 'etcd', ['/locks/'], 'etcd secret'],
      ['billing-db', 'postgres', [''], 'pg secret'],
    ]);
    assert.deepEqual(config.connections.map((c) => c.pollMs), [5000, 2000], 'a store that pushes nothing is polled every 5 s unless told');
    assert.ok(config.lockNames.drop[0].test('secret/x'));
    assert.equal('tenant-42/jobs'.replace(config.lockNames.rewrite[0].match, config.lockNames.rewrite[0].replace), 'tenant-N/jobs');
  });

  test('JSON is read too, and a bearer token from the environment', () => {
    const config = loadConfig(file('{"listen": "[::1]:9999", "maxLocks": 10, "metrics": {"bearerTokenEnv": "TOKEN"}, "connections": [{"name": "r", "store": "redis", "endpoints": ["redis://127.0.0.1:6379"]}]}', 'json'), { TOKEN: 't0k' });
    assert.deepEqual(config.listen, { host: '::1', port: 9999 });
    assert.equal(config.maxLocks, 10);
    assert.equal(config.bearerToken, 't0k');
  });

  test('each mistake names its line and column, the field, and what to write', () => {
    const conn = 'connections:\n  - name: a\n    endpoints: [127.0.0.1:2379]\n';
    assert.match(refusal('connections: [\n  {name: a\n'), /^FILE:\d+:\d+: not valid YAML or JSON: /);
    assert.equal(refusal(`${conn}    prefix: [/locks/]\n`), 'FILE:4:5: connections[0].prefix: unknown field: write one of name, store, endpoints, username, namespace, prefixes, tls, dialTimeoutMs, pollSeconds, passwordEnv, passwordFile, keyPassphraseEnv, keyPassphraseFile');
    assert.equal(refusal(`listne: 1.2.3.4:5\n${conn}`), 'FILE:1:1: listne: unknown field: write one of listen, data, maxLocks, history, metrics, lockNames, lockTables, connections');
    assert.equal(refusal(`${conn}    prefixes: /locks/\n`), "FILE:4:15: connections[0].prefixes: must be a list of texts, e.g. prefixes: ['/locks/']");
    assert.equal(refusal(`maxLocks: many\n${conn}`), 'FILE:1:11: maxLocks: must be a whole number ≥ 1, e.g. maxLocks: 500');
    assert.match(refusal(`${conn}    password: hunter2\n`), /^FILE:4:5: connections\[0\]\.password: a password is never written in the config file: write passwordEnv: VARIABLE .* or passwordFile: /);
    assert.match(refusal(`${conn}    tls: { keyPassphrase: x }\n`), /^FILE:4:12: connections\[0\]\.tls\.keyPassphrase: a key passphrase is never written/);
    assert.match(refusal('connections:\n  - name: a\n    store: redis\n    endpoints: [redis://:hunter2@127.0.0.1:6379]\n'), /^FILE:4:16: connections\[0\]\.endpoints: a password is never written in an endpoint URL/);
    assert.equal(refusal(`${conn}    passwordFile: ${join(dir, 'nothing')}\n`), `FILE:4:19: connections[0].passwordFile: cannot read ${join(dir, 'nothing')} (ENOENT): write the path of the file that holds the password`);
    assert.equal(refusal(`${conn}    passwordEnv: NOT_SET\n`), 'FILE:4:18: connections[0].passwordEnv: the environment variable NOT_SET is not set: set it to the password, or write passwordFile: /path/to/file');
    assert.equal(refusal(`${conn}    store: etcd3\n`), 'FILE:4:12: connections[0].store: unknown store \'etcd3\': write one of etcd, redis, zookeeper, postgres, mysql');
    assert.equal(refusal('connections:\n  - name: a\n'), 'FILE:2:5: connections[0].endpoints: missing: write endpoints: [...], the addresses of the store, e.g. [127.0.0.1:2379]');
    assert.equal(refusal(`${conn}  - name: a\n    endpoints: [127.0.0.1:2380]\n`), "FILE:4:11: connections[1].name: 'a' names two connections: each needs its own name (it is the connection label of their metrics)");
    assert.equal(refusal('listen: localhost\n' + conn), "FILE:1:9: listen: 'localhost' is not HOST:PORT: write e.g. 127.0.0.1:9464");
    assert.equal(refusal('listen: 9464\n' + conn), 'FILE:1:9: listen: must be text, e.g. listen: 127.0.0.1:9464');
    assert.match(refusal('lockNames: { drop: ["(["] }\n' + conn), /^FILE:1:20: lockNames\.drop: '\(\[' is not a regular expression/);
    assert.equal(refusal('metrics: { tls: { certFile: /x } }\n' + conn), 'FILE:1:17: metrics.tls.keyFile: TLS needs both: write tls: { certFile: /path/cert.pem, keyFile: /path/key.pem }');
    assert.equal(refusal('listen: 127.0.0.1:1\n'), 'FILE:1:1: connections: no connection to watch: write connections: [{ name: …, store: …, endpoints: [...] }]');
    assert.equal(refusal('- a\n'), 'FILE:1:1: the config is a map of fields (listen, connections, …): see `locklens serve --help`');
  });

  test('a file that cannot be read says so', () => {
    assert.throws(() => loadConfig(join(dir, 'missing.yml')), /missing\.yml: cannot read the config file/);
  });
});

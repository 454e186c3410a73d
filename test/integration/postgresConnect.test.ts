import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { isLockLensError, type ErrorCode, type LockLensError } from '../../src/core/errors';
import type { ConnectionProfile, TlsOptions } from '../../src/core/profile';
import { PostgresBackend } from '../../src/core/postgres/postgresBackend';
import { makeTestCerts, removeTestCerts, type TestCerts } from '../harness/certs';
import { freePort } from '../harness/ports';
import { SUPERUSER_PASSWORD, startPostgres, type PostgresServer } from '../harness/postgres';
import { startAll } from '../harness/processes';

const DIAL_MS = 2000;

async function refused(profile: ConnectionProfile, code: ErrorCode): Promise<LockLensError> {
  const result = await PostgresBackend.open({ store: 'postgres', dialTimeoutMs: DIAL_MS, ...profile }).then(
    (b) => {
      b.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  assert.ok(isLockLensError(result, code), `expected ${code}, got ${String(result)}`);
  return result;
}

async function opens(profile: ConnectionProfile): Promise<void> {
  const backend = await PostgresBackend.open({ store: 'postgres', dialTimeoutMs: DIAL_MS, ...profile });
  try {
    assert.ok(Array.isArray((await backend.list([])).locks));
  } finally {
    backend.close();
  }
}

describe('connecting to PostgreSQL: what works, and why what fails fails', { timeout: 300_000 }, () => {
  let plain: PostgresServer;
  let tlsOnly: PostgresServer;
  let certs: TestCerts;
  let garbage: Server;
  let garbagePort: number;

  before(async () => {
    certs = makeTestCerts();
    [plain, tlsOnly] = await startAll([startPostgres(), startPostgres({ tls: 'required', certs })] as const);
    garbage = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n<html>no</html>');
    });
    garbagePort = await freePort();
    await new Promise<void>((resolve) => garbage.listen(garbagePort, '127.0.0.1', resolve));
  });
  after(async () => {
    garbage?.close();
    await Promise.all([plain?.dispose(), tlsOnly?.dispose()]);
    removeTestCerts(certs);
  });

  test('the right password opens', async () => {
    await opens({ endpoints: [plain.url()], password: SUPERUSER_PASSWORD });
  });

  test('a wrong password: AUTH, without the password in the message', async () => {
    const e = await refused({ endpoints: [plain.url()], password: 'not-the-password-4711' }, 'AUTH');
    assert.match(e.message, /refused role "postgres": wrong password, or no such role/);
    assert.doesNotMatch(e.message, /4711/);
  });

  test('a role that does not exist: AUTH', async () => {
    const e = await refused({ endpoints: [plain.url('nobody')], password: 'x' }, 'AUTH');
    assert.match(e.message, /"nobody"/);
  });

  test('a database that does not exist: INVALID_ARGUMENT naming it', async () => {
    const e = await refused({ endpoints: [plain.url('postgres', 'no_such_db')], password: SUPERUSER_PASSWORD }, 'INVALID_ARGUMENT');
    assert.match(e.message, /the database "no_such_db" does not exist/);
  });

  test('nothing listening: UNREACHABLE', async () => {
    const port = await freePort();
    const e = await refused({ endpoints: [`postgres://postgres@127.0.0.1:${port}/postgres`], password: 'x' }, 'UNREACHABLE');
    assert.match(e.message, new RegExp(`nothing listens on 127\\.0\\.0\\.1:${port}`));
  });

  test('not PostgreSQL on that port: says what answers', async () => {
    const e = await refused({ endpoints: [`postgres://postgres@127.0.0.1:${garbagePort}/postgres`], password: 'x' }, 'UNREACHABLE');
    assert.match(e.message, /is not a PostgreSQL server: it answered "HTTP\/1\.1 400 Bad Request"/);
  });

  test('sslmode asks for TLS from a server without it: TLS, saying so', async () => {
    const e = await refused({ endpoints: [plain.url('postgres', 'postgres', '?sslmode=require')], password: SUPERUSER_PASSWORD }, 'TLS');
    assert.match(e.message, /does not offer TLS, but sslmode=require asks for it/);
  });

  test('a server that requires TLS, with sslmode=disable: TLS, saying so', async () => {
    const e = await refused({ endpoints: [tlsOnly.url()], password: SUPERUSER_PASSWORD }, 'TLS');
    assert.match(e.message, /accepts only TLS connections from here: connect with sslmode=require/);
  });

  test('sslmode require encrypts without verifying; verify-ca checks the chain; verify-full the host name too', async () => {
    const url = (mode: string) => tlsOnly.url('postgres', 'postgres', `?sslmode=${mode}`);
    const profile = (mode: string, tls?: TlsOptions) => ({ endpoints: [url(mode)], password: SUPERUSER_PASSWORD, tls });
    await opens(profile('require'));
    await opens(profile('verify-full', { caFile: certs.caFile }));
    await opens(profile('verify-ca', { caFile: certs.caFile, serverName: 'db.example' }));
    const otherCa = await refused(profile('verify-ca', { caFile: certs.otherCaFile }), 'TLS');
    assert.match(otherCa.message, /certificate does not verify \(sslmode=verify-ca\)/);
    const wrongName = await refused(profile('verify-full', { caFile: certs.caFile, serverName: 'db.example' }), 'TLS');
    assert.match(wrongName.message, /db\.example/);
    await refused(profile('verify-full'), 'TLS');
  });

  test('insecureSkipVerify with verify-ca or verify-full is refused, not turned into trusting anyone; with require it encrypts unverified', async () => {
    const url = (mode: string) => tlsOnly.url('postgres', 'postgres', `?sslmode=${mode}`);
    const profile = (mode: string) => ({ endpoints: [url(mode)], password: SUPERUSER_PASSWORD, tls: { caFile: certs.otherCaFile, insecureSkipVerify: true } });
    for (const mode of ['verify-ca', 'verify-full']) {
      const e = await refused(profile(mode), 'INVALID_ARGUMENT');
      assert.match(e.message, new RegExp(`sslmode=${mode} asks to verify .* for encryption without verification, connect with sslmode=require`));
    }
    await opens(profile('require'));
  });

  test('one URL, a PostgreSQL one', async () => {
    await refused({ endpoints: [] }, 'INVALID_ARGUMENT');
    await refused({ endpoints: [plain.url(), plain.url()] }, 'INVALID_ARGUMENT');
    await refused({ endpoints: [`mysql://root@127.0.0.1:${plain.port}/x`] }, 'INVALID_ARGUMENT');
  });
});

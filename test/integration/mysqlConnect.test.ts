import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import type { ErrorCode } from '../../src/core/errors';
import { isLockLensError } from '../../src/core/errors';
import type { ConnectionProfile } from '../../src/core/profile';
import { MysqlBackend } from '../../src/core/mysql/mysqlBackend';
import { makeTestCerts, removeTestCerts, type TestCerts } from '../harness/certs';
import { ADMIN, startMariaDb, type MariaDbServer } from '../harness/mariadb';
import { freePort } from '../harness/ports';
import { startAll } from '../harness/processes';

const DIAL_MS = 1500;

async function refused(profile: Partial<ConnectionProfile> & { endpoints: string[] }, code: ErrorCode, message: RegExp): Promise<void> {
  const e = await MysqlBackend.open({ store: 'mysql', dialTimeoutMs: DIAL_MS, ...profile }).then(
    (b) => {
      b.close();
      return undefined;
    },
    (x: unknown) => x,
  );
  assert.ok(isLockLensError(e, code), `${code} expected, got ${String(e)}`);
  assert.match((e as Error).message, message);
  assert.doesNotMatch((e as Error).message, /secret/, 'the password is never in a message');
}

/** A TCP server that answers every connection with `greeting` (or says nothing when it is empty). */
async function fakeServer(greeting: string): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    socket.on('error', () => undefined);
    if (greeting) socket.write(greeting);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, port };
}

describe('connecting to MySQL/MariaDB: clear errors', { timeout: 120_000 }, () => {
  let plain: MariaDbServer;
  let secure: MariaDbServer;
  let certs: TestCerts;

  before(async () => {
    certs = makeTestCerts();
    [plain, secure] = await startAll([startMariaDb(), startMariaDb({ tls: certs, metadataLockInfo: false })] as const);
  });
  after(async () => {
    await Promise.all([plain?.dispose(), secure?.dispose()]);
    removeTestCerts(certs);
  });

  test('a wrong password: AUTH', () => refused({ endpoints: [plain.url()], password: 'secretly-wrong' }, 'AUTH', /access denied for user 'locklens'/));

  test('an unknown database: INVALID_ARGUMENT naming it', () =>
    refused({ endpoints: [plain.url(ADMIN.user, 'nosuchdb')], password: ADMIN.password }, 'INVALID_ARGUMENT', /there is no database 'nosuchdb'/));

  test('nothing listening: UNREACHABLE', async () => {
    const port = await freePort();
    await refused({ endpoints: [`mysql://u@127.0.0.1:${port}`] }, 'UNREACHABLE', new RegExp(`nothing listens on 127\\.0\\.0\\.1:${port}`));
  });

  test('not MySQL: a server that greets otherwise, and one that says nothing', async () => {
    const ssh = await fakeServer('SSH-2.0-OpenSSH_9.2p1 Debian\r\n');
    const silent = await fakeServer('');
    try {
      await refused({ endpoints: [`mysql://u@127.0.0.1:${ssh.port}`] }, 'UNREACHABLE', /is not a MySQL or MariaDB server: it answered "SSH-2\.0-OpenSSH_9\.2p1 Debian"/);
      await refused({ endpoints: [`mysql://u@127.0.0.1:${silent.port}`] }, 'UNREACHABLE', /sent no MySQL greeting/);
    } finally {
      ssh.server.close();
      silent.server.close();
    }
  });

  test('TLS asked of a server that offers none: TLS', () =>
    refused({ endpoints: [plain.url(ADMIN.user, 'app', '?ssl=true')], password: ADMIN.password }, 'TLS', /the server does not offer it/));

  // MariaDB answers a plain connection under require_secure_transport as it answers a wrong password (MySQL 8 has an
  // error of its own for it, which becomes TLS): the message says the server offers TLS.
  test('a server that requires TLS, asked without: access denied, with the hint that it offers TLS', async () => {
    await refused({ endpoints: [secure.url()], password: ADMIN.password }, 'AUTH', /the server offers TLS, and if it requires it \(require_secure_transport.*add \?ssl=true/);
    await refused({ endpoints: [plain.url()], password: 'wrong' }, 'AUTH', /wrong password, or the user may not connect from here$/);
  });

  test('TLS verified against the CA works; another CA is refused; files without ?ssl are refused', async () => {
    const backend = await MysqlBackend.open({ store: 'mysql', endpoints: [secure.url(ADMIN.user, 'app', '?ssl=verify-full')], password: ADMIN.password, tls: { caFile: certs.caFile }, dialTimeoutMs: DIAL_MS });
    try {
      assert.equal(backend.flavor, 'mariadb');
      const listing = await backend.list([]);
      assert.deepEqual(listing.locks, []);
    } finally {
      backend.close();
    }
    await refused({ endpoints: [secure.url(ADMIN.user, 'app', '?ssl=verify-ca')], password: ADMIN.password, tls: { caFile: certs.otherCaFile } }, 'TLS', /TLS handshake failed/);
    await refused({ endpoints: [secure.url()], password: ADMIN.password, tls: { caFile: certs.caFile } }, 'INVALID_ARGUMENT', /does not ask for TLS/);
  });

  test('insecureSkipVerify with verify-ca or verify-full is refused, not turned into trusting anyone; with ssl=true it encrypts unverified', async () => {
    const tls = { caFile: certs.otherCaFile, insecureSkipVerify: true };
    for (const mode of ['verify-ca', 'verify-full']) {
      await refused({ endpoints: [secure.url(ADMIN.user, 'app', `?ssl=${mode}`)], password: ADMIN.password, tls }, 'INVALID_ARGUMENT', new RegExp(`ssl=${mode} asks to verify .* connect with ssl=true`));
    }
    const backend = await MysqlBackend.open({ store: 'mysql', endpoints: [secure.url(ADMIN.user, 'app', '?ssl=true')], password: ADMIN.password, tls, dialTimeoutMs: DIAL_MS });
    backend.close();
  });

  test("a server name to verify is refused for verify-full (mysql2 checks the URL's host only); verify-ca checks no name", async () => {
    const tls = { caFile: certs.caFile, serverName: 'db.example' };
    await refused({ endpoints: [secure.url(ADMIN.user, 'app', '?ssl=verify-full')], password: ADMIN.password, tls }, 'INVALID_ARGUMENT', /db\.example: serverName, the CLI's --server-name\) cannot be given for MySQL: .*mysql:\/\/user@db\.example:\d+/);
    const backend = await MysqlBackend.open({ store: 'mysql', endpoints: [secure.url(ADMIN.user, 'app', '?ssl=verify-ca')], password: ADMIN.password, tls, dialTimeoutMs: DIAL_MS });
    backend.close();
  });

  test('one URL exactly, and a user', async () => {
    await refused({ endpoints: [plain.url(), plain.url()] }, 'INVALID_ARGUMENT', /exactly one URL/);
    await refused({ endpoints: [`mysql://127.0.0.1:${plain.port}/app`] }, 'INVALID_ARGUMENT', /no user/);
  });
});

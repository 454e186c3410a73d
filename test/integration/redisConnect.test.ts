import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { RedisBackend } from '../../src/core/redis/redisBackend';
import type { LockLensError } from '../../src/core/errors';
import type { ConnectionProfile } from '../../src/core/profile';
import { freePort } from '../harness/ports';
import { startRedis, type RedisServer } from '../harness/redis';
import { makeTestCerts, removeTestCerts, type TestCerts } from '../harness/certs';

const PASSWORD = 'pa55-w0rd-secret';
const ALICE = 'alice-secret-pw';

function listen(onConnection: (s: import('node:net').Socket) => void): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer(onConnection);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}
const portOf = (s: Server) => (s.address() as { port: number }).port;

async function openError(profile: ConnectionProfile): Promise<LockLensError> {
  const started = Date.now();
  try {
    const backend = await RedisBackend.open({ store: 'redis', dialTimeoutMs: 1500, ...profile });
    backend.close();
  } catch (e) {
    assert.ok(Date.now() - started < 10_000, 'no hang');
    return e as LockLensError;
  }
  assert.fail('opened');
}

describe('opening a Redis connection says why it failed', { timeout: 120_000 }, () => {
  let secured: RedisServer;
  let tlsServer: RedisServer;
  let mtlsServer: RedisServer;
  let certs: TestCerts;
  let http: Server;
  let silent: Server;

  before(async () => {
    certs = makeTestCerts();
    secured = await startRedis({ password: PASSWORD, users: [`alice on >${ALICE} ~* &* +@all`] });
    tlsServer = await startRedis({ tls: { certFile: certs.serverCert, keyFile: certs.serverKey } });
    mtlsServer = await startRedis({ tls: { certFile: certs.serverCert, keyFile: certs.serverKey, clientCaFile: certs.caFile } });
    http = await listen((s) => s.on('data', () => s.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n')));
    silent = await listen(() => undefined);
  });
  after(async () => {
    await secured?.dispose();
    await tlsServer?.dispose();
    await mtlsServer?.dispose();
    http?.close();
    silent?.close();
    removeTestCerts(certs);
  });

  test('connection refused: UNREACHABLE', async () => {
    const e = await openError({ endpoints: [`redis://127.0.0.1:${await freePort()}`] });
    assert.equal(e.code, 'UNREACHABLE');
    assert.match(e.message, /refused/);
  });

  test('a port that speaks HTTP: not a Redis server', async () => {
    const e = await openError({ endpoints: [`redis://127.0.0.1:${portOf(http)}`] });
    assert.match(e.message, /not a Redis server/);
    assert.match(e.message, /HTTP\/1\.1 400/);
  });

  test('a port that never answers: TIMEOUT within the deadline', async () => {
    const e = await openError({ endpoints: [`redis://127.0.0.1:${portOf(silent)}`] });
    assert.equal(e.code, 'TIMEOUT');
    assert.match(e.message, /no Redis answer within 1500 ms/);
  });

  test('no password to a requirepass server: AUTH saying one is needed (NOAUTH)', async () => {
    const e = await openError({ endpoints: [secured.url] });
    assert.equal(e.code, 'AUTH');
    assert.match(e.message, /requires a password/);
  });

  test('wrong password, wrong ACL user password: AUTH, never the password', async () => {
    const wrong = await openError({ endpoints: [secured.url], password: 'not-it-xyz' });
    assert.equal(wrong.code, 'AUTH');
    assert.match(wrong.message, /WRONGPASS/);
    assert.ok(!wrong.message.includes('not-it-xyz'));
    const user = await openError({ endpoints: [secured.url], username: 'alice', password: 'nope-123' });
    assert.equal(user.code, 'AUTH');
    assert.match(user.message, /user 'alice'/);
    assert.ok(!user.message.includes('nope-123'));
    const inUrl = await openError({ endpoints: [`redis://:url-secret-9@127.0.0.1:${secured.port}`] });
    assert.equal(inUrl.code, 'AUTH');
    assert.ok(!inUrl.message.includes('url-secret-9'));
  });

  test('right password, right ACL user: opens', async () => {
    for (const profile of [{ password: PASSWORD }, { username: 'alice', password: ALICE }]) {
      const backend = await RedisBackend.open({ store: 'redis', endpoints: [secured.url], ...profile });
      assert.deepEqual((await backend.list([Buffer.from('x')])).locks, []);
      backend.close();
    }
  });

  test('TLS mismatch both ways, a bad CA, and the right CA', async () => {
    const plainToTls = await openError({ endpoints: [`redis://127.0.0.1:${tlsServer.port}`] });
    assert.equal(plainToTls.code, 'TLS');
    assert.match(plainToTls.message, /speaks TLS: use rediss:\/\//);
    const tlsToPlain = await openError({ endpoints: [`rediss://127.0.0.1:${secured.port}`], tls: { caFile: certs.caFile } });
    assert.equal(tlsToPlain.code, 'TLS');
    assert.match(tlsToPlain.message, /plain Redis|does not speak TLS/);
    const badCa = await openError({ endpoints: [tlsServer.url], tls: { caFile: certs.otherCaFile } });
    assert.equal(badCa.code, 'TLS');
    assert.match(badCa.message, /not signed by the CA file/);
    const backend = await RedisBackend.open({ store: 'redis', endpoints: [tlsServer.url], tls: { caFile: certs.caFile } });
    await backend.list([Buffer.from('x')]);
    backend.close();
  });

  test('client certificates (tls-auth-clients yes): none, or one from another CA, is a TLS error saying so; the right one opens, its key encrypted too', async () => {
    const none = await openError({ endpoints: [mtlsServer.url], tls: { caFile: certs.caFile } });
    assert.equal(none.code, 'TLS');
    assert.match(none.message, /client certificate/);
    const otherCa = await openError({ endpoints: [mtlsServer.url], tls: { caFile: certs.caFile, certFile: certs.otherCaClientCert, keyFile: certs.otherCaClientKey } });
    assert.equal(otherCa.code, 'TLS');
    // TLS 1.3: the server's alert may arrive, or be lost to its close; either way the certificate is named.
    assert.match(otherCa.message, /rejected the TLS handshake or the client certificate|may not accept the client certificate/);
    const wrongPassphrase = await openError({
      endpoints: [mtlsServer.url],
      tls: { caFile: certs.caFile, certFile: certs.clientCert, keyFile: certs.clientKeyPkcs8Encrypted, keyPassphrase: 'not-the-passphrase' },
    });
    assert.equal(wrongPassphrase.code, 'TLS');
    assert.match(wrongPassphrase.message, /wrong passphrase/);
    assert.ok(!wrongPassphrase.message.includes('not-the-passphrase'));
    for (const keyFile of [certs.clientKeyPkcs1, certs.clientKeyPkcs8Encrypted]) {
      const backend = await RedisBackend.open({
        store: 'redis',
        endpoints: [mtlsServer.url],
        tls: { caFile: certs.caFile, certFile: certs.clientCert, keyFile, keyPassphrase: certs.clientKeyPassphrase },
      });
      assert.deepEqual((await backend.list([Buffer.from('x')])).locks, []);
      backend.close();
    }
  });

  test('a TLS server that hangs up after the handshake without a word (a client certificate check whose alert was lost): TLS, naming the certificate', async () => {
    const hangUp = createTlsServer({ cert: readFileSync(certs.serverCert), key: readFileSync(certs.serverKey) }, (socket) => socket.destroy());
    await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve));
    try {
      const url = `rediss://127.0.0.1:${(hangUp.address() as { port: number }).port}`;
      const none = await openError({ endpoints: [url], tls: { caFile: certs.caFile } });
      assert.equal(none.code, 'TLS');
      assert.match(none.message, /closed the TLS connection without answering: it may require a client certificate/);
      const given = await openError({ endpoints: [url], tls: { caFile: certs.caFile, certFile: certs.clientCert, keyFile: certs.clientKeyPkcs1 } });
      assert.equal(given.code, 'TLS');
      assert.match(given.message, /it may not accept the client certificate/);
    } finally {
      hangUp.close();
    }
  });
});

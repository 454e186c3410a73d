import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { GRPCUnavailableError } from 'etcd3';
import { EtcdConnection } from '../../src/core/etcd/connect';
import { LockLensError, type ErrorCode } from '../../src/core/errors';
import type { ConnectionProfile } from '../../src/core/profile';
import { makeTestCerts, removeTestCerts, type TestCerts } from '../harness/certs';
import { startEtcd, type EtcdServer } from '../harness/etcd';
import { freePort } from '../harness/ports';

/**
 * EtcdConnection.open against real etcd servers: plain, with auth, with TLS and with mutual TLS. Every failure must
 * carry the right LockLensError code and a message that names what is wrong; every success must carry a real put/get.
 */

// Short enough that the failing cases stay quick, long enough for a loaded CI machine to finish a TLS handshake.
const DIAL_MS = 4000;

let certs: TestCerts;
before(() => {
  certs = makeTestCerts();
});
after(() => removeTestCerts(certs));

/** Opens, proves the connection works with a real put and get, and closes it. */
async function connectsAndWorks(profile: ConnectionProfile): Promise<void> {
  const conn = await EtcdConnection.open({ dialTimeoutMs: DIAL_MS, ...profile });
  try {
    const key = `locklens-test/${randomUUID()}`;
    await conn.client.put(key).value('works');
    assert.equal(await conn.client.get(key).string(), 'works');
  } finally {
    conn.close();
  }
}

/** Opening fails with `code`, and the message contains every one of `says` (strings literally, regexps by match). */
async function failsWith(profile: ConnectionProfile, code: ErrorCode, ...says: (string | RegExp)[]): Promise<LockLensError> {
  let error: unknown;
  try {
    const conn = await EtcdConnection.open({ dialTimeoutMs: DIAL_MS, ...profile });
    conn.close();
  } catch (e) {
    error = e;
  }
  assert.ok(error !== undefined, `expected ${code}, but connecting to ${profile.endpoints.join(',')} succeeded`);
  assert.ok(error instanceof LockLensError, `expected a LockLensError, got ${String(error)}`);
  assert.equal(error.code, code, `wrong code for: ${error.message}`);
  for (const s of says) {
    if (typeof s === 'string') assert.ok(error.message.includes(s), `message should name '${s}': ${error.message}`);
    else assert.match(error.message, s);
  }
  return error;
}

describe('plain etcd', () => {
  let etcd: EtcdServer | undefined;
  let silent: Server | undefined;
  let silentPort = 0;
  const silentSockets = new Set<Socket>();

  before(async () => {
    etcd = await startEtcd();
    // Accepts TCP connections and never writes a byte: a stopped process behind a proxy, or the wrong service.
    silent = createServer((socket) => {
      silentSockets.add(socket);
      socket.on('close', () => silentSockets.delete(socket));
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as { port: number }).port;
  });
  after(async () => {
    silentSockets.forEach((s) => s.destroy());
    await new Promise<void>((resolve) => (silent ? silent.close(() => resolve()) : resolve()));
    await etcd?.dispose();
  });

  test('connects and reads back what it wrote', async () => {
    await connectsAndWorks({ endpoints: [etcd!.endpoint] });
    await connectsAndWorks({ endpoints: [etcd!.url] });
  });

  test('a port nobody listens on is UNREACHABLE: connection refused', async () => {
    const port = await freePort();
    // A long dial timeout: a refusal must end the attempt on its own, not by waiting the deadline out.
    const error = await failsWith({ endpoints: [`127.0.0.1:${port}`], dialTimeoutMs: 60_000 }, 'UNREACHABLE', `127.0.0.1:${port}`, /refused/);
    // What ended it was gRPC's UNAVAILABLE, not LockLens's own deadline (that would be a TIMEOUT LockLensError).
    assert.ok(error.cause instanceof GRPCUnavailableError, `ended by ${String(error.cause)}`);
  });

  test('a server that accepts TCP but never answers is TIMEOUT, and opening returns', { timeout: 60_000 }, async () => {
    await failsWith({ endpoints: [`127.0.0.1:${silentPort}`], dialTimeoutMs: 1000 }, 'TIMEOUT', `127.0.0.1:${silentPort}`, /accepts TCP connections but sent no answer/);
  });

  test('endpoint text that is not host:port is INVALID_ARGUMENT, naming it', async () => {
    for (const text of ['not an endpoint', '127.0.0.1:99999', 'ftp://127.0.0.1:2379', 'http://127.0.0.1:2379/v3/kv']) {
      await failsWith({ endpoints: [text] }, 'INVALID_ARGUMENT', `'${text}'`, /is not an etcd endpoint/);
    }
    await failsWith({ endpoints: [] }, 'INVALID_ARGUMENT', /no etcd endpoint/);
  });

  test('one dead endpoint and one alive: connects', async () => {
    const dead = `127.0.0.1:${await freePort()}`;
    // etcd3 shuffles its hosts on every call; several rounds make it all but certain the dead one is tried first.
    for (let i = 0; i < 4; i++) {
      await connectsAndWorks({ endpoints: [dead, etcd!.endpoint] });
      await connectsAndWorks({ endpoints: [etcd!.endpoint, dead] });
    }
  });

  test('a TLS profile against a plain server is TLS: the server does not speak TLS', async () => {
    await failsWith({ endpoints: [`https://${etcd!.endpoint}`], tls: { caFile: certs.caFile } }, 'TLS', etcd!.endpoint, /does not speak TLS/);
  });
});

describe('auth', () => {
  let etcd: EtcdServer | undefined;

  before(async () => {
    etcd = await startEtcd();
    await etcd.etcdctl(['user', 'add', 'root:rootpw']);
    await etcd.etcdctl(['auth', 'enable']);
  });
  after(async () => {
    await etcd?.dispose();
  });

  test('the right password connects', async () => {
    await connectsAndWorks({ endpoints: [etcd!.endpoint], username: 'root', password: 'rootpw' });
  });

  test('a wrong password is AUTH, without echoing the password', async () => {
    const error = await failsWith({ endpoints: [etcd!.endpoint], username: 'root', password: 'not-the-password' }, 'AUTH', /refused the credentials/, /invalid user ID or password/);
    assert.ok(!error.message.includes('not-the-password'), error.message);
  });

  test('an unknown user is AUTH', async () => {
    await failsWith({ endpoints: [etcd!.endpoint], username: 'nobody', password: 'rootpw' }, 'AUTH', /refused the credentials/);
  });

  test('no credentials on an auth-enabled etcd: AUTH at connect, saying credentials are needed', async () => {
    // etcd 3.4 answers Maintenance.Status without auth, so open() also reads one key when no user name is given.
    await assert.rejects(EtcdConnection.open({ endpoints: [etcd!.endpoint], dialTimeoutMs: DIAL_MS }), (e: unknown) => {
      assert.ok(e instanceof LockLensError);
      assert.equal(e.code, 'AUTH', e.message);
      assert.match(e.message, /authentication enabled: give a user name and password/);
      return true;
    });
  });
});

describe('TLS: server certificate signed by the CA, for 127.0.0.1', () => {
  let etcd: EtcdServer | undefined;
  let https = '';

  before(async () => {
    etcd = await startEtcd({ tls: { certFile: certs.serverCert, keyFile: certs.serverKey } });
    https = etcd.url;
  });
  after(async () => {
    await etcd?.dispose();
  });

  test('connects with the CA file', async () => {
    assert.match(https, /^https:\/\//);
    await connectsAndWorks({ endpoints: [https], tls: { caFile: certs.caFile } });
    // TLS settings alone turn TLS on, without https:// in the endpoint.
    await connectsAndWorks({ endpoints: [etcd!.endpoint], tls: { caFile: certs.caFile } });
  });

  test('without a CA file is TLS: not signed by the trusted roots', async () => {
    await failsWith({ endpoints: [https] }, 'TLS', https, /not signed by the system's trusted roots/, 'LockLens Test CA', /set the cluster's CA file/);
  });

  test('with an unrelated CA is TLS, naming that CA and the real issuer', async () => {
    await failsWith({ endpoints: [https], tls: { caFile: certs.otherCaFile } }, 'TLS', /is not signed by the CA file/, 'CN=Unrelated Test CA', 'issuer O=LockLens Tests, CN=LockLens Test CA');
  });

  test('a plain profile against the TLS server is TLS: the server speaks TLS', async () => {
    await failsWith({ endpoints: [etcd!.endpoint] }, 'TLS', etcd!.endpoint, /speaks TLS/, /https:\/\//);
  });

  test('insecureSkipVerify connects without a CA file', async () => {
    await connectsAndWorks({ endpoints: [https], tls: { insecureSkipVerify: true } });
  });

  test('a CA file that does not exist is TLS: does not exist', async () => {
    const missing = `${certs.dir}/no-such-ca.crt`;
    await failsWith({ endpoints: [https], tls: { caFile: missing } }, 'TLS', `CA file ${missing} does not exist`);
  });
});

describe('TLS: server certificate only for DNS:etcd.internal', () => {
  let etcd: EtcdServer | undefined;

  before(async () => {
    etcd = await startEtcd({ tls: { certFile: certs.sanMismatchCert, keyFile: certs.sanMismatchKey } });
  });
  after(async () => {
    await etcd?.dispose();
  });

  test('connecting to 127.0.0.1 is TLS, listing the names the certificate has', async () => {
    await failsWith({ endpoints: [etcd!.url], tls: { caFile: certs.caFile } }, 'TLS', "not valid for '127.0.0.1'", 'DNS:etcd.internal', /server name override/);
  });

  test("with serverName 'etcd.internal' connects", async () => {
    await connectsAndWorks({ endpoints: [etcd!.url], tls: { caFile: certs.caFile, serverName: 'etcd.internal' } });
  });

  test('a wrong serverName is TLS, naming it', async () => {
    await failsWith({ endpoints: [etcd!.url], tls: { caFile: certs.caFile, serverName: 'etcd.example' } }, 'TLS', "not valid for 'etcd.example'", 'DNS:etcd.internal');
  });

  test('insecureSkipVerify connects despite the mismatch, with or without the CA', async () => {
    await connectsAndWorks({ endpoints: [etcd!.url], tls: { caFile: certs.caFile, insecureSkipVerify: true } });
    await connectsAndWorks({ endpoints: [etcd!.url], tls: { insecureSkipVerify: true } });
  });
});

describe('TLS: expired server certificate', () => {
  let etcd: EtcdServer | undefined;

  before(async () => {
    etcd = await startEtcd({ tls: { certFile: certs.expiredCert, keyFile: certs.expiredKey } });
  });
  after(async () => {
    await etcd?.dispose();
  });

  test('is TLS: expired, with the date and subject', async () => {
    await failsWith({ endpoints: [etcd!.url], tls: { caFile: certs.caFile } }, 'TLS', /expired on Feb {1,2}1 00:00:00 2020 GMT/, 'CN=etcd-server-expired');
  });

  test('insecureSkipVerify connects anyway', async () => {
    await connectsAndWorks({ endpoints: [etcd!.url], tls: { caFile: certs.caFile, insecureSkipVerify: true } });
  });
});

describe('mutual TLS (etcd --client-cert-auth)', () => {
  let etcd: EtcdServer | undefined;
  let https = '';

  before(async () => {
    etcd = await startEtcd({ tls: { certFile: certs.serverCert, keyFile: certs.serverKey, clientCaFile: certs.caFile } });
    https = etcd.url;
  });
  after(async () => {
    await etcd?.dispose();
  });

  const client = (certFile: string, keyFile: string, keyPassphrase?: string): ConnectionProfile => ({
    endpoints: [https],
    tls: { caFile: certs.caFile, certFile, keyFile, keyPassphrase },
  });

  test('no client certificate is TLS: a client certificate is required', async () => {
    await failsWith({ endpoints: [https], tls: { caFile: certs.caFile } }, 'TLS', https, /requires a client certificate/, /--client-cert-auth/);
  });

  test('a plain profile against the mutual-TLS server is TLS: the server speaks TLS and wants a client certificate', async () => {
    // The server refuses this client with a TLS alert rather than serving it; that alert still proves it speaks TLS.
    await failsWith({ endpoints: [etcd!.endpoint] }, 'TLS', etcd!.endpoint, /speaks TLS/, /requires a client certificate/);
  });

  test('client certificate with a PKCS#1 key connects', async () => {
    await connectsAndWorks(client(certs.clientCert, certs.clientKeyPkcs1));
  });

  test('client certificate with a PKCS#8 key connects', async () => {
    await connectsAndWorks(client(certs.clientCert, certs.clientKeyPkcs8));
  });

  test('an encrypted PKCS#8 key with the right passphrase connects', async () => {
    await connectsAndWorks(client(certs.clientCert, certs.clientKeyPkcs8Encrypted, certs.clientKeyPassphrase));
  });

  test('an encrypted key without a passphrase is TLS: encrypted', async () => {
    await failsWith(client(certs.clientCert, certs.clientKeyPkcs8Encrypted), 'TLS', `key file ${certs.clientKeyPkcs8Encrypted} is encrypted`);
  });

  test('an encrypted key with a wrong passphrase is TLS: wrong passphrase', async () => {
    const error = await failsWith(client(certs.clientCert, certs.clientKeyPkcs8Encrypted, 'not it'), 'TLS', `key file ${certs.clientKeyPkcs8Encrypted}: wrong passphrase`);
    assert.ok(!error.message.includes('not it'), error.message);
  });

  test('an EC (SEC1) key connects', async () => {
    await connectsAndWorks(client(certs.ecClientCert, certs.ecClientKey));
  });

  test('a client certificate from an unrelated CA is TLS: the server rejected it', async () => {
    await failsWith(client(certs.otherCaClientCert, certs.otherCaClientKey), 'TLS', https, /the server rejected the client certificate/, /--trusted-ca-file/);
  });

  test('a certificate and a key that do not belong together is TLS, naming both files', async () => {
    await failsWith(client(certs.clientCert, certs.ecClientKey), 'TLS', certs.clientCert, certs.ecClientKey, /does not belong to/);
    await failsWith(client(certs.ecClientCert, certs.clientKeyPkcs1), 'TLS', certs.ecClientCert, certs.clientKeyPkcs1, /does not belong to/);
  });

  test('a CA file that does not exist is TLS: does not exist', async () => {
    const missing = `${certs.dir}/missing/ca.pem`;
    await failsWith({ endpoints: [https], tls: { caFile: missing, certFile: certs.clientCert, keyFile: certs.clientKeyPkcs8 } }, 'TLS', `CA file ${missing} does not exist`);
  });

  test('the key file given as the certificate file is TLS: it holds a private key', async () => {
    await failsWith(client(certs.clientKeyPkcs8, certs.clientKeyPkcs8), 'TLS', `client certificate file ${certs.clientKeyPkcs8} holds no PEM certificate`, /private key/);
  });

  test('the certificate given as the key file is TLS: it holds a certificate', async () => {
    await failsWith(client(certs.clientCert, certs.clientCert), 'TLS', `key file ${certs.clientCert} holds a certificate`);
  });

  test('a certificate without its key is TLS', async () => {
    await failsWith({ endpoints: [https], tls: { caFile: certs.caFile, certFile: certs.clientCert } }, 'TLS', /needs its key file/);
  });
});

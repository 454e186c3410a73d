import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Certificates and keys for the TLS tests, made with the `openssl` CLI (installed by scripts/setup.sh) in a temporary
 * directory. Every signing goes through `openssl ca`, the one OpenSSL 3.0 tool that takes explicit validity dates, so
 * the expired certificate is made the same way as the valid ones.
 */
export interface TestCerts {
  readonly dir: string;
  /** The CA that signs the servers and the client certificates the servers trust. */
  readonly caFile: string;
  /** A second CA that signed nothing the servers use. */
  readonly otherCaFile: string;
  /** Signed by the CA, SANs IP:127.0.0.1 and DNS:localhost. */
  readonly serverCert: string;
  readonly serverKey: string;
  /** Signed by the CA, SAN DNS:etcd.internal only: wrong for 127.0.0.1, right with a server name override. */
  readonly sanMismatchCert: string;
  readonly sanMismatchKey: string;
  /** Signed by the CA, SANs as serverCert, valid only in January 2020. */
  readonly expiredCert: string;
  readonly expiredKey: string;
  /** Client certificate signed by the CA; its one RSA key in three encodings. */
  readonly clientCert: string;
  /** `-----BEGIN RSA PRIVATE KEY-----` */
  readonly clientKeyPkcs1: string;
  /** `-----BEGIN PRIVATE KEY-----` */
  readonly clientKeyPkcs8: string;
  /** `-----BEGIN ENCRYPTED PRIVATE KEY-----`, passphrase `clientKeyPassphrase`. */
  readonly clientKeyPkcs8Encrypted: string;
  readonly clientKeyPassphrase: string;
  /** Client certificate signed by the CA for a P-256 key in SEC1 (`-----BEGIN EC PRIVATE KEY-----`). */
  readonly ecClientCert: string;
  readonly ecClientKey: string;
  /** Client certificate signed by the unrelated CA, with its own key. */
  readonly otherCaClientCert: string;
  readonly otherCaClientKey: string;
}

const SERVER_EXT = 'basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature, keyEncipherment\n';
// etcd 3.4's grpc-gateway dials its own gRPC port with the server certificate as client certificate, so servers get
// clientAuth too; without it a --client-cert-auth etcd rejects its own gateway.
const SERVER_EKU = 'extendedKeyUsage = serverAuth, clientAuth\n';
const CLIENT_EXT = 'basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature, keyEncipherment\nextendedKeyUsage = clientAuth\n';

function openssl(args: readonly string[]): string {
  try {
    return execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`openssl ${args.join(' ')} failed: ${err.stderr || err.message}`);
  }
}

interface Ca {
  readonly name: string;
  readonly cert: string;
  readonly key: string;
  readonly config: string;
}

/** A self-signed CA with the bookkeeping files `openssl ca` needs (index, serial, output dir). */
function makeCa(dir: string, name: string, subject: string): Ca {
  const base = join(dir, name);
  mkdirSync(`${base}-db`);
  writeFileSync(`${base}-db/index.txt`, '');
  writeFileSync(`${base}-db/serial`, '1000\n');
  const cert = `${base}.crt`;
  const key = `${base}.key`;
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '3650', '-subj', subject,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  const config = `${base}-ca.cnf`;
  writeFileSync(
    config,
    [
      '[ ca ]',
      'default_ca = test_ca',
      '[ test_ca ]',
      `database = ${base}-db/index.txt`,
      `serial = ${base}-db/serial`,
      `new_certs_dir = ${base}-db`,
      `certificate = ${cert}`,
      `private_key = ${key}`,
      'default_md = sha256',
      'policy = any_name',
      // Several certificates share a subject (the server and its expired twin).
      'unique_subject = no',
      'copy_extensions = none',
      '[ any_name ]',
      'commonName = supplied',
      '',
    ].join('\n'),
  );
  return { name, cert, key, config };
}

interface Validity {
  /** `YYYYMMDDHHMMSSZ` */
  readonly start: string;
  readonly end: string;
}

/** Signs a CSR for `keyFile` with `ca`; `extensions` is an openssl extension section body. */
function issue(dir: string, ca: Ca, name: string, keyFile: string, subject: string, extensions: string, validity?: Validity): string {
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  const cert = join(dir, `${name}.crt`);
  openssl(['req', '-new', '-key', keyFile, '-out', csr, '-subj', subject]);
  writeFileSync(ext, `[ v3 ]\n${extensions}`);
  // Valid ones start an hour ago, so a second's difference between openssl's clock and etcd's cannot matter.
  const { start, end } = validity ?? { start: opensslTime(Date.now() - 3600_000), end: opensslTime(Date.now() + 365 * 86400_000) };
  const dates = ['-startdate', start, '-enddate', end];
  openssl(['ca', '-batch', '-notext', '-config', ca.config, '-extfile', ext, '-extensions', 'v3', '-in', csr, '-out', cert, ...dates]);
  return cert;
}

/** `YYYYMMDDHHMMSSZ`, the form `openssl ca` takes. */
function opensslTime(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:T]/g, '').replace(/\.\d+Z$/, 'Z');
}

function rsaKey(dir: string, name: string): string {
  const key = join(dir, `${name}.key`);
  openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', key]);
  return key;
}

function expectPem(path: string, header: string): void {
  const text = readFileSync(path, 'latin1');
  if (!text.includes(`-----BEGIN ${header}-----`)) throw new Error(`${path} should be a PEM ${header}, it starts ${text.slice(0, 40)}`);
}

// Like the etcd harness's processes: removed at exit even if a test run dies before its after hooks.
const made = new Set<string>();
process.on('exit', () => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** Makes every certificate and key the TLS tests use; remove them with `removeTestCerts`. */
export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'locklens-certs-'));
  made.add(dir);
  try {
    return generate(dir);
  } catch (e) {
    removeTestCerts({ dir });
    throw e;
  }
}

export function removeTestCerts(certs: Pick<TestCerts, 'dir'> | undefined): void {
  if (!certs) return;
  rmSync(certs.dir, { recursive: true, force: true });
  made.delete(certs.dir);
}

function generate(dir: string): TestCerts {
  const ca = makeCa(dir, 'ca', '/O=LockLens Tests/CN=LockLens Test CA');
  const otherCa = makeCa(dir, 'other-ca', '/O=Somebody Else/CN=Unrelated Test CA');

  const serverKey = rsaKey(dir, 'server');
  const serverSans = 'subjectAltName = IP:127.0.0.1, DNS:localhost\n';
  const serverCert = issue(dir, ca, 'server', serverKey, '/CN=etcd-server', SERVER_EXT + SERVER_EKU + serverSans);

  const sanMismatchKey = rsaKey(dir, 'server-etcd-internal');
  const sanMismatchCert = issue(dir, ca, 'server-etcd-internal', sanMismatchKey, '/CN=etcd.internal',
    SERVER_EXT + SERVER_EKU + 'subjectAltName = DNS:etcd.internal\n');

  const expiredKey = rsaKey(dir, 'server-expired');
  const expiredCert = issue(dir, ca, 'server-expired', expiredKey, '/CN=etcd-server-expired', SERVER_EXT + SERVER_EKU + serverSans, {
    start: '20200101000000Z',
    end: '20200201000000Z',
  });
  // `-checkend 0` exits 0 only if the certificate is still valid now.
  let stillValid = true;
  try {
    openssl(['x509', '-in', expiredCert, '-noout', '-checkend', '0']);
  } catch {
    stillValid = false;
  }
  if (stillValid || new Date(new X509Certificate(readFileSync(expiredCert)).validTo) >= new Date()) {
    throw new Error(`${expiredCert} was meant to be expired but is not`);
  }

  // One client RSA key, written as PKCS#1, PKCS#8 and encrypted PKCS#8, so one certificate matches all three.
  const clientKeyPkcs1 = join(dir, 'client-pkcs1.key');
  openssl(['genrsa', '-traditional', '-out', clientKeyPkcs1, '2048']);
  expectPem(clientKeyPkcs1, 'RSA PRIVATE KEY');
  const clientKeyPkcs8 = join(dir, 'client-pkcs8.key');
  openssl(['pkcs8', '-topk8', '-nocrypt', '-in', clientKeyPkcs1, '-out', clientKeyPkcs8]);
  expectPem(clientKeyPkcs8, 'PRIVATE KEY');
  const clientKeyPassphrase = 'correct horse battery staple';
  const clientKeyPkcs8Encrypted = join(dir, 'client-pkcs8-encrypted.key');
  openssl(['pkcs8', '-topk8', '-v2', 'aes-256-cbc', '-in', clientKeyPkcs1, '-out', clientKeyPkcs8Encrypted, '-passout', `pass:${clientKeyPassphrase}`]);
  expectPem(clientKeyPkcs8Encrypted, 'ENCRYPTED PRIVATE KEY');
  const clientCert = issue(dir, ca, 'client', clientKeyPkcs1, '/CN=locklens-client', CLIENT_EXT);

  const ecClientKey = join(dir, 'client-ec.key');
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', ecClientKey]);
  expectPem(ecClientKey, 'EC PRIVATE KEY');
  const ecClientCert = issue(dir, ca, 'client-ec', ecClientKey, '/CN=locklens-client-ec', 'basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature\nextendedKeyUsage = clientAuth\n');

  const otherCaClientKey = rsaKey(dir, 'client-other-ca');
  const otherCaClientCert = issue(dir, otherCa, 'client-other-ca', otherCaClientKey, '/CN=locklens-client-other-ca', CLIENT_EXT);

  return {
    dir,
    caFile: ca.cert,
    otherCaFile: otherCa.cert,
    serverCert,
    serverKey,
    sanMismatchCert,
    sanMismatchKey,
    expiredCert,
    expiredKey,
    clientCert,
    clientKeyPkcs1,
    clientKeyPkcs8,
    clientKeyPkcs8Encrypted,
    clientKeyPassphrase,
    ecClientCert,
    ecClientKey,
    otherCaClientCert,
    otherCaClientKey,
  };
}

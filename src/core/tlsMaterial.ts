import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { LockLensError, errorMessage } from './errors';
import type { TlsOptions } from './profile';

/** The bytes Node and gRPC need, after every local check has passed. */
export interface TlsMaterial {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  /** Decrypted, as PKCS#8 PEM: gRPC cannot take a passphrase. */
  readonly key?: Buffer;
  readonly serverName?: string;
  readonly insecureSkipVerify: boolean;
  /** The CA certificates, kept to explain verification failures. */
  readonly caCerts: readonly X509Certificate[];
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function tlsError(message: string, cause?: unknown): LockLensError {
  return new LockLensError('TLS', message, { cause });
}

async function readPem(what: string, path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable (permissions)' : errorMessage(e);
    throw tlsError(`${what} file ${path} ${why}`, e);
  }
}

export function parseCertificates(what: string, path: string, pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('latin1').match(PEM_CERT);
  if (!blocks) {
    const hint = pem.includes('PRIVATE KEY') ? ' (it holds a private key: did you swap the certificate and key files?)' : '';
    throw tlsError(`${what} file ${path} holds no PEM certificate${hint}`);
  }
  return blocks.map((b) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      throw tlsError(`${what} file ${path} holds a certificate that cannot be parsed: ${errorMessage(e)}`, e);
    }
  });
}

function checkValidity(what: string, path: string, cert: X509Certificate, now: Date): void {
  if (new Date(cert.validTo) < now) throw tlsError(`${what} ${path} expired on ${cert.validTo} (subject ${oneLine(cert.subject)})`);
  if (new Date(cert.validFrom) > now) throw tlsError(`${what} ${path} is not valid before ${cert.validFrom}`);
}

function loadKey(path: string, pem: Buffer, passphrase: string | undefined): KeyObject {
  try {
    return createPrivateKey({ key: pem, passphrase });
  } catch (e) {
    const text = pem.toString('latin1');
    if (/ENCRYPTED/.test(text) && !passphrase) throw tlsError(`key file ${path} is encrypted: give its passphrase`, e);
    if (/ENCRYPTED/.test(text)) throw tlsError(`key file ${path}: wrong passphrase`, e);
    if (/BEGIN CERTIFICATE/.test(text)) throw tlsError(`key file ${path} holds a certificate, not a private key`, e);
    throw tlsError(`key file ${path} is not a PEM private key (PKCS#1, PKCS#8 or SEC1): ${errorMessage(e)}`, e);
  }
}

export function oneLine(dn: string): string {
  return dn.split('\n').join(', ');
}

/**
 * Reads and checks the TLS files of a profile before any connection is tried, so that a wrong path, an expired
 * certificate, a wrong passphrase or a certificate that does not belong to its key are named precisely.
 */
export async function loadTlsMaterial(tls: TlsOptions, now = new Date()): Promise<TlsMaterial> {
  if (!!tls.certFile !== !!tls.keyFile) {
    throw tlsError(tls.certFile ? 'a client certificate needs its key file too' : 'a client key needs its certificate file too');
  }
  let ca: Buffer | undefined;
  let caCerts: X509Certificate[] = [];
  if (tls.caFile) {
    ca = await readPem('CA', tls.caFile);
    caCerts = parseCertificates('CA', tls.caFile, ca);
    for (const c of caCerts) checkValidity('CA certificate in', tls.caFile, c, now);
  }
  let cert: Buffer | undefined;
  let key: Buffer | undefined;
  if (tls.certFile && tls.keyFile) {
    cert = await readPem('client certificate', tls.certFile);
    const [leaf] = parseCertificates('client certificate', tls.certFile, cert);
    checkValidity('client certificate', tls.certFile, leaf, now);
    const keyObject = loadKey(tls.keyFile, await readPem('key', tls.keyFile), tls.keyPassphrase);
    if (!leaf.checkPrivateKey(keyObject)) {
      throw tlsError(`client certificate ${tls.certFile} does not belong to key ${tls.keyFile}`);
    }
    key = Buffer.from(keyObject.export({ type: 'pkcs8', format: 'pem' }));
  }
  return { ca, cert, key, caCerts, serverName: tls.serverName || undefined, insecureSkipVerify: !!tls.insecureSkipVerify };
}

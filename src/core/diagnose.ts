import { createConnection, type Socket } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { errorMessage } from './errors';
import type { Endpoint } from './profile';
import { oneLine, type TlsMaterial } from './tlsMaterial';

/**
 * Why an endpoint did not answer, found by talking TCP and TLS to it directly. gRPC reports every such failure as
 * "UNAVAILABLE"; users of etcd GUIs ask above all for the real reason, so LockLens asks the socket.
 */
export interface EndpointDiagnosis {
  readonly endpoint: Endpoint;
  readonly kind: 'ok' | 'unreachable' | 'silent' | 'tls';
  readonly reason: string;
}

export async function diagnoseEndpoint(endpoint: Endpoint, tls: TlsMaterial | undefined, timeoutMs: number): Promise<EndpointDiagnosis> {
  const tcp = await probeTcp(endpoint, timeoutMs);
  if (tcp) return { endpoint, kind: 'unreachable', reason: tcp };
  const handshake = await probeTls(endpoint, tls, timeoutMs);
  if (!tls) {
    if (handshake.kind === 'ok') return { endpoint, kind: 'tls', reason: 'the server speaks TLS here: use https:// or set a CA file' };
    if (handshake.kind === 'timeout') return { endpoint, kind: 'silent', reason: silentReason(timeoutMs) };
    return { endpoint, kind: 'ok', reason: 'answers plain TCP' };
  }
  if (handshake.kind === 'ok') return { endpoint, kind: 'ok', reason: 'TLS handshake succeeded' };
  if (handshake.kind === 'timeout') return { endpoint, kind: 'silent', reason: silentReason(timeoutMs) };
  return { endpoint, kind: 'tls', reason: await explainTlsFailure(endpoint, tls, handshake.error) };
}

function silentReason(timeoutMs: number): string {
  return `accepts TCP connections but sent no answer within ${timeoutMs} ms (not an etcd client port, or the server is stopped)`;
}

function probeTcp(endpoint: Endpoint, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket: Socket = createConnection({ host: endpoint.host, port: endpoint.port });
    const done = (reason: string | undefined) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(timeoutMs, () => done(`no TCP answer within ${timeoutMs} ms`));
    socket.once('connect', () => done(undefined));
    socket.once('error', (e: NodeJS.ErrnoException) => {
      const reason =
        e.code === 'ECONNREFUSED' ? 'connection refused (nothing listens on that port)'
        : e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN' ? `host ${endpoint.host} not found`
        : e.code === 'EHOSTUNREACH' || e.code === 'ENETUNREACH' ? 'host unreachable'
        : errorMessage(e);
      done(reason);
    });
  });
}

type Handshake = { kind: 'ok'; socket?: TLSSocket } | { kind: 'timeout' } | { kind: 'error'; error: NodeJS.ErrnoException };

function probeTls(endpoint: Endpoint, tls: TlsMaterial | undefined, timeoutMs: number): Promise<Handshake> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: endpoint.host,
      port: endpoint.port,
      servername: tls?.serverName ?? (isIp(endpoint.host) ? undefined : endpoint.host),
      ca: tls?.ca,
      cert: tls?.cert,
      key: tls?.key,
      ALPNProtocols: ['h2'],
      rejectUnauthorized: tls ? !tls.insecureSkipVerify : false,
      checkServerIdentity: (host, cert) => checkServerIdentity(tls?.serverName ?? host, cert),
    });
    const done = (h: Handshake) => {
      socket.destroy();
      resolve(h);
    };
    socket.setTimeout(timeoutMs, () => done({ kind: 'timeout' }));
    // TLS 1.3 servers reject a client certificate after the handshake: wait for the first read to see it.
    socket.once('secureConnect', () => setTimeout(() => done({ kind: 'ok' }), 50));
    socket.once('error', (e: NodeJS.ErrnoException) => done({ kind: 'error', error: e }));
  });
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}

async function explainTlsFailure(endpoint: Endpoint, tls: TlsMaterial, error: NodeJS.ErrnoException): Promise<string> {
  const code = error.code ?? '';
  const message = error.message;
  if (/wrong version number|packet length too long|unknown protocol|http request/i.test(message)) {
    return 'the server does not speak TLS here: use http://, or turn TLS off for this connection';
  }
  if (/certificate required|alert handshake failure|alert bad certificate|alert certificate unknown|unknown ca/i.test(message)) {
    return tls.cert
      ? 'the server rejected the client certificate (is it signed by the CA the server trusts with --trusted-ca-file?)'
      : 'the server requires a client certificate (etcd runs with --client-cert-auth): set the certificate and key files';
  }
  const peer = await peerCertificate(endpoint, tls);
  const subject = peer ? `the server's certificate (subject ${oneLine(peer.subject)})` : "the server's certificate";
  switch (code) {
    case 'CERT_HAS_EXPIRED':
      return `${subject} expired on ${peer?.validTo ?? 'an earlier date'}`;
    case 'CERT_NOT_YET_VALID':
      return `${subject} is not valid before ${peer?.validFrom ?? 'a later date'}`;
    case 'ERR_TLS_CERT_ALTNAME_INVALID': {
      const names = peer?.subjectAltName ?? 'no subject alternative names';
      const wanted = tls.serverName ?? endpoint.host;
      return `${subject} is not valid for '${wanted}': it names ${names}. Connect by one of those names, set the server name override, or reissue the certificate with this address in its SANs`;
    }
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
    case 'UNABLE_TO_GET_ISSUER_CERT': {
      const issuer = peer ? ` (issuer ${oneLine(peer.issuer)})` : '';
      const trusted = tls.caCerts.length
        ? `the CA file (${tls.caCerts.map((c) => oneLine(c.subject)).join('; ')})`
        : "the system's trusted roots: set the cluster's CA file";
      return `${subject}${issuer} is not signed by ${trusted}`;
    }
    default:
      return `TLS handshake failed: ${message}`;
  }
}

/** The server's certificate, fetched without verification, to say what is wrong with it. */
function peerCertificate(endpoint: Endpoint, tls: TlsMaterial): Promise<X509Certificate | undefined> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: endpoint.host,
      port: endpoint.port,
      servername: tls.serverName ?? (isIp(endpoint.host) ? undefined : endpoint.host),
      rejectUnauthorized: false,
      ALPNProtocols: ['h2'],
    });
    const done = (cert: PeerCertificate | undefined) => {
      socket.destroy();
      resolve(cert?.raw ? new X509Certificate(cert.raw) : undefined);
    };
    socket.setTimeout(2000, () => done(undefined));
    socket.once('secureConnect', () => done(socket.getPeerCertificate()));
    socket.once('error', () => done(undefined));
  });
}

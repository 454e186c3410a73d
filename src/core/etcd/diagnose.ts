import { createConnection, type Socket } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { errorMessage } from '../errors';
import type { Endpoint } from '../profile';
import { oneLine, type TlsMaterial } from '../tlsMaterial';

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
    // A server that finished the handshake, or answered with a TLS alert, speaks TLS even though it refused us.
    if (handshake.handshaken || isTlsAlert(handshake.error)) {
      const mtls = CLIENT_CERT_REJECTED.test(handshake.error.message) ? ' and requires a client certificate (etcd runs with --client-cert-auth)' : '';
      return { endpoint, kind: 'tls', reason: `the server speaks TLS here${mtls}: use https:// and set a CA file${mtls ? ', certificate and key' : ''}` };
    }
    return { endpoint, kind: 'ok', reason: 'answers plain TCP' };
  }
  if (handshake.kind === 'ok') return { endpoint, kind: 'ok', reason: 'TLS handshake succeeded' };
  if (handshake.kind === 'timeout') return { endpoint, kind: 'silent', reason: silentReason(timeoutMs) };
  return { endpoint, kind: 'tls', reason: await explainTlsFailure(endpoint, tls, handshake.error, timeoutMs) };
}

/** TLS alerts a server sends when it does not accept the client certificate, or got none. */
const CLIENT_CERT_REJECTED = /certificate required|alert handshake failure|alert bad certificate|alert certificate unknown|unknown ca/i;

/** The server dropped the connection mid-handshake, without a TLS alert. */
function isHangUp(error: NodeJS.ErrnoException): boolean {
  return error.code === 'ECONNRESET' || error.code === 'EPIPE' || /disconnected before secure TLS|closed the connection/i.test(error.message);
}

function isTlsAlert(error: NodeJS.ErrnoException): boolean {
  return /^ERR_SSL_.*ALERT/.test(error.code ?? '') || /\balert\b/i.test(error.message);
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

type Handshake =
  | { kind: 'ok' }
  | { kind: 'timeout' }
  /** `handshaken`: the failure came after the handshake completed on our side (a TLS 1.3 server's late refusal). */
  | { kind: 'error'; error: NodeJS.ErrnoException; handshaken: boolean };

/** The HTTP/2 client preface and an empty SETTINGS frame: what a gRPC client sends first. */
const H2_PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);
const H2_SETTINGS = 4;

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
    let handshaken = false;
    const done = (h: Handshake) => {
      socket.destroy();
      resolve(h);
    };
    // After the handshake a silent server is not a TLS problem: only a silent handshake is.
    socket.setTimeout(timeoutMs, () => done(handshaken ? { kind: 'ok' } : { kind: 'timeout' }));
    // TLS 1.3 servers reject a client certificate after the client's side of the handshake is done, so "connected" proves
    // nothing yet. Talk HTTP/2 as gRPC would and wait for the server's first bytes (etcd answers with SETTINGS) or its
    // alert, rather than guessing how long an alert may take.
    socket.once('secureConnect', () => {
      handshaken = true;
      socket.write(H2_PREFACE);
    });
    socket.once('data', () => done({ kind: 'ok' }));
    socket.once('error', (e: NodeJS.ErrnoException) => done({ kind: 'error', error: e, handshaken }));
    // A close without an error after the handshake: TLS worked, whatever the server thought of HTTP/2.
    socket.once('close', () => done(handshaken ? { kind: 'ok' } : { kind: 'error', error: new Error('the server closed the connection'), handshaken }));
  });
}

/**
 * Whether the endpoint answers HTTP in the clear: an HTTP/2 SETTINGS frame (a plain etcd's gRPC port) or an HTTP/1
 * status line. etcd's port multiplexer closes the connection on a TLS ClientHello without a word, so a failed
 * handshake alone cannot tell "not TLS" from other failures; asking in plain HTTP can.
 */
function speaksPlainHttp(endpoint: Endpoint, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket: Socket = createConnection({ host: endpoint.host, port: endpoint.port });
    const done = (yes: boolean) => {
      socket.destroy();
      resolve(yes);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => socket.write(H2_PREFACE));
    socket.once('data', (d: Buffer) => done((d.length >= 9 && d[3] === H2_SETTINGS) || /^HTTP\/\d/.test(d.toString('latin1', 0, 8))));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}

const NOT_TLS = 'the server does not speak TLS here: use http://, or turn TLS off for this connection';

async function explainTlsFailure(endpoint: Endpoint, tls: TlsMaterial, error: NodeJS.ErrnoException, timeoutMs: number): Promise<string> {
  const code = error.code ?? '';
  const message = error.message;
  if (/wrong version number|packet length too long|unknown protocol|http request/i.test(message)) return NOT_TLS;
  if (isHangUp(error)) {
    if (await speaksPlainHttp(endpoint, timeoutMs)) return NOT_TLS;
    return 'the server closed the connection during the TLS handshake without saying why (is this its TLS client port?)';
  }
  if (CLIENT_CERT_REJECTED.test(message)) {
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
      const issued = peer ? `the server's certificate (subject ${oneLine(peer.subject)}, issuer ${oneLine(peer.issuer)})` : subject;
      const trusted = tls.caCerts.length
        ? `the CA file (${tls.caCerts.map((c) => oneLine(c.subject)).join('; ')})`
        : "the system's trusted roots: set the cluster's CA file";
      return `${issued} is not signed by ${trusted}`;
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

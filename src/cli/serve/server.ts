/**
 * serve's HTTP(S) endpoint: `/metrics` for Prometheus (behind a bearer token when one is set), `/healthz` (200 while the
 * process runs) and `/readyz` (200 once every connection has done its first full read; 503 naming those that have
 * not). Loopback unless told otherwise; nothing here reads a store.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { LockLensError } from '../../core/errors';
import type { Listen } from './config';

export interface ServerOptions {
  readonly listen: Listen;
  readonly bearerToken?: string;
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
  /** The exposition text and its content type. */
  readonly metrics: () => Promise<{ readonly text: string; readonly contentType: string }>;
  /** The connections whose first full read is not done yet. */
  readonly notReady: () => readonly string[];
}

export interface MetricsServer {
  /** Where it listens, as a URL (the port chosen when 0 was asked). */
  readonly url: string;
  close(): Promise<void>;
}

export async function startServer(options: ServerOptions): Promise<MetricsServer> {
  const handler = (req: IncomingMessage, res: ServerResponse) => void respond(options, req, res);
  const server: Server = options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, handler) : createHttpServer(handler);
  const { host, port } = options.listen;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(new LockLensError('INVALID_ARGUMENT', `cannot listen on ${host}:${port} (${e.code ?? e.message}): give another address with --listen HOST:PORT or listen: in the config`)),
    );
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `${options.tls ? 'https' : 'http'}://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function respond(options: ServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'only GET and HEAD\n', { allow: 'GET, HEAD' });
  if (path === '/healthz') return send(res, 200, 'text/plain', 'ok\n');
  if (path === '/readyz') {
    const waiting = options.notReady();
    return send(res, waiting.length ? 503 : 200, 'application/json', JSON.stringify(waiting.length ? { ready: false, waiting } : { ready: true }) + '\n');
  }
  if (path !== '/metrics') return send(res, 404, 'text/plain', 'not found: /metrics, /healthz, /readyz\n');
  if (options.bearerToken !== undefined && !authorized(req.headers.authorization, options.bearerToken)) {
    return send(res, 401, 'text/plain', 'a bearer token is required\n', { 'www-authenticate': 'Bearer realm="locklens"' });
  }
  try {
    const { text, contentType } = await options.metrics();
    send(res, 200, contentType, text);
  } catch (e) {
    send(res, 500, 'text/plain', `${(e as Error).message}\n`);
  }
}

/** Compared in constant time: digests of equal length, whatever was sent. */
function authorized(header: string | undefined, token: string): boolean {
  const sent = /^Bearer (.+)$/i.exec(header ?? '')?.[1] ?? '';
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(sent), digest(token));
}

function send(res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...headers });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/**
 * Redis endpoints as users write them: `redis://[user[:password]@]host[:port][/db]`, `rediss://…` for TLS, or a bare
 * `host:port`. Credentials in a URL are accepted (that is how Redis URLs are copied around) but a profile's username
 * and password win, and neither ever appears in a message.
 */
import { LockLensError } from '../errors';
import { redact } from '../redact';

export interface RedisEndpoint {
  readonly host: string;
  readonly port: number;
  readonly db: number;
  readonly tls: boolean;
  readonly username?: string;
  readonly password?: string;
  /** host:port, for messages: never the credentials. */
  readonly label: string;
}

const BARE = /^(\[[0-9a-fA-F:.]+\]|[^:/\s[\]@]+)(?::(\d{1,5}))?$/;

export function parseRedisEndpoint(text: string): RedisEndpoint {
  const trimmed = text.trim();
  const bad = () =>
    new LockLensError('INVALID_ARGUMENT', `'${redact(trimmed)}' is not a Redis endpoint: write redis://host:port[/db] or rediss://host:port for TLS`);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) {
    const m = BARE.exec(trimmed);
    if (!m) throw bad();
    return endpoint(m[1].replace(/^\[|\]$/g, ''), m[2] === undefined ? 6379 : Number(m[2]), 0, false, undefined, undefined, bad);
  }
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw bad();
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new LockLensError('INVALID_ARGUMENT', `'${redact(trimmed)}': a Redis endpoint starts with redis:// or rediss:// (TLS), not ${url.protocol}//`);
  }
  const path = url.pathname.replace(/^\//, '');
  if (path !== '' && !/^\d{1,5}$/.test(path)) throw bad();
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!host) throw bad();
  const port = url.port === '' ? 6379 : Number(url.port);
  return endpoint(host, port, path === '' ? 0 : Number(path), url.protocol === 'rediss:', dec(url.username), dec(url.password), bad);
}

function dec(s: string): string | undefined {
  if (!s) return undefined;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function endpoint(host: string, port: number, db: number, tls: boolean, username: string | undefined, password: string | undefined, bad: () => LockLensError): RedisEndpoint {
  if (port < 1 || port > 65535) throw bad();
  const label = `${host.includes(':') ? `[${host}]` : host}:${port}${db ? `/${db}` : ''}`;
  return { host, port, db, tls, username, password, label };
}

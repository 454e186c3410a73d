/**
 * `zookeeper://host:port[,host:port…][/chroot][?sessionTimeout=ms]`, checked and split. Pure (no client library), so
 * the host bundles can check what a user types.
 */
import { LockLensError } from '../errors';

export const DEFAULT_PORT = 2181;
export interface ZooKeeperServer {
  readonly host: string;
  readonly port: number;
}

export interface ZooKeeperUrl {
  readonly servers: readonly ZooKeeperServer[];
  /** Every path is read and written below it (ZooKeeper's own chroot suffix of a connect string). */
  readonly chroot: string | undefined;
  readonly sessionTimeoutMs: number | undefined;
}

const HOST_PORT = /^([^:[\]/\s@]+)(?::(\d{1,5}))?$/;

function invalid(text: string, why: string): LockLensError {
  return new LockLensError('INVALID_ARGUMENT', `'${text}' is not a ZooKeeper URL: ${why} (write zookeeper://host:port[,host:port][/chroot])`);
}

/** Checks and splits a `zookeeper://` URL. */
export function parseZooKeeperUrl(text: string): ZooKeeperUrl {
  const m = /^zookeeper:\/\/([^/?]*)(\/[^?]*)?(?:\?(.*))?$/i.exec(text.trim());
  if (!m) throw invalid(text, 'it does not start with zookeeper://');
  if (m[1].includes('@')) throw invalid(text, "credentials go in the connection's username and password, not in the URL");
  if (m[1].includes('[')) throw invalid(text, 'IPv6 literals are not supported by the ZooKeeper client: use a host name');
  const servers = m[1].split(',').map((part) => {
    const hp = HOST_PORT.exec(part.trim());
    const port = hp?.[2] === undefined ? DEFAULT_PORT : Number(hp[2]);
    if (!hp || port < 1 || port > 65535) throw invalid(text, `'${part}' is not host:port`);
    return { host: hp[1], port };
  });
  let chroot = m[2]?.replace(/\/+$/, '') || undefined;
  if (chroot !== undefined && chroot.split('/').slice(1).some((s) => s === '' || s === '.' || s === '..')) {
    throw invalid(text, `the chroot '${m[2]}' has an empty, '.' or '..' segment`);
  }
  if (chroot === '/') chroot = undefined;
  let sessionTimeoutMs: number | undefined;
  for (const pair of (m[3] ?? '').split('&').filter(Boolean)) {
    const [key, value] = pair.split('=');
    if (key !== 'sessionTimeout' || !/^\d+$/.test(value ?? '') || Number(value) < 1) {
      throw invalid(text, `unknown option '${pair}' (the one option is sessionTimeout=<ms>)`);
    }
    sessionTimeoutMs = Number(value);
  }
  return { servers, chroot, sessionTimeoutMs };
}


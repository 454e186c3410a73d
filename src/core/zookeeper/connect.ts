/**
 * Connecting to ZooKeeper: `zookeeper://host:port[,host:port…][/chroot][?sessionTimeout=ms]`, digest credentials from
 * the profile, a deadline on the handshake, and when it fails, a look at the socket to say why in words (nothing
 * listens, not ZooKeeper, a ZooKeeper that is not serving). The watch's session is renewed when the ensemble expires
 * it (ZkConnection); an acquire's session is its own and is never renewed: its expiry is the loss of the lock.
 */
import { createConnection } from 'node:net';
import { Emitter } from '../emitter';
import { LockLensError, errorMessage } from '../errors';
import { DEFAULT_DIAL_TIMEOUT_MS, type ConnectionProfile } from '../profile';
import { sleep } from '../sleep';
import { firstLine, printable, probe, probeBudgetMs } from '../socketProbe';
import { ZkClient, type SessionSpec, type SessionState } from './client';
import { parseZooKeeperUrl, type ZooKeeperServer, type ZooKeeperUrl } from './url';

/** Curator's default is 60 s, kazoo's 10 s: the watch's session only decides how soon a lost client is noticed. */
export const DEFAULT_SESSION_TIMEOUT_MS = 30_000;

function serverLabel(s: ZooKeeperServer): string {
  return `${s.host}:${s.port}`;
}

/** The ensemble of a profile (every endpoint a URL; their servers together, one chroot). */
export function ensembleOf(profile: ConnectionProfile): { url: ZooKeeperUrl; spec: SessionSpec } {
  if (profile.endpoints.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'no ZooKeeper URL given');
  const urls = profile.endpoints.map(parseZooKeeperUrl);
  const chroot = urls[0].chroot;
  if (urls.some((u) => u.chroot !== chroot)) {
    throw new LockLensError('INVALID_ARGUMENT', 'the ZooKeeper URLs name different chroots: one connection has one chroot');
  }
  const servers = urls.flatMap((u) => u.servers);
  const url = { servers, chroot, sessionTimeoutMs: urls.find((u) => u.sessionTimeoutMs !== undefined)?.sessionTimeoutMs };
  const hosts = servers.map(serverLabel).join(',');
  return {
    url,
    spec: {
      connectionString: hosts + (chroot ?? ''),
      label: hosts + (chroot ?? ''),
      username: profile.username || undefined,
      password: profile.username || profile.password ? (profile.password ?? '') : undefined,
      sessionTimeoutMs: url.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS,
      timeoutMs: profile.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS,
    },
  };
}

/** Opens a session, or throws a LockLensError saying why not, within the dial timeout (and a probe's worth more). */
export async function openSession(spec: SessionSpec, servers: readonly ZooKeeperServer[]): Promise<ZkClient> {
  const client = new ZkClient(spec);
  try {
    // The library retries refused connections until the deadline: when every server refuses, say so at once.
    await Promise.race([client.connect(), refusedEverywhere(servers, spec.timeoutMs)]);
    return client;
  } catch (e) {
    void client.close();
    if (e instanceof LockLensError && e.code === 'AUTH') throw e;
    throw await explainOpenFailure(spec, servers, e);
  }
}

/** Rejects when no server accepts a TCP connection (refused, or no such host); otherwise never settles. */
async function refusedEverywhere(servers: readonly ZooKeeperServer[], timeoutMs: number): Promise<never> {
  const outcomes = await Promise.all(
    servers.map((s) => {
      const socket = createConnection({ host: s.host, port: s.port });
      return probe<string>(socket, timeoutMs, 'silent', (done) => {
        socket.once('connect', () => done('open'));
        socket.once('error', (e: NodeJS.ErrnoException) => done(e.code ?? 'error'));
      });
    }),
  );
  if (outcomes.every((o) => o === 'ECONNREFUSED' || o === 'ENOTFOUND' || o === 'EAI_AGAIN')) {
    throw new LockLensError('UNREACHABLE', 'no server accepts connections');
  }
  return new Promise<never>(() => undefined);
}

type Probe = { kind: 'zookeeper' | 'closed' | 'silent' } | { kind: 'other'; text: string } | { kind: 'error'; code: string; message: string };

/** ZooKeeper's ConnectRequest for a new session: protocol 0, no zxid seen, a timeout, session 0, an empty password. */
function connectRequest(timeoutMs: number): Buffer {
  const body = Buffer.alloc(45);
  body.writeInt32BE(timeoutMs, 12);
  body.writeInt32BE(16, 24);
  const frame = Buffer.alloc(4);
  frame.writeInt32BE(body.length);
  return Buffer.concat([frame, body]);
}

/**
 * Sends the handshake a client sends and reads the first bytes back: a ZooKeeper server answers a 36- or 37-byte
 * ConnectResponse with protocol 0. (It sets up a session, which the server ends after its timeout: only on failure.)
 */
function probeHandshake(server: ZooKeeperServer, timeoutMs: number): Promise<Probe> {
  const socket = createConnection({ host: server.host, port: server.port });
  return probe<Probe>(socket, timeoutMs, { kind: 'silent' }, (done) => {
    let got = Buffer.alloc(0);
    socket.once('connect', () => socket.write(connectRequest(4000)));
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length < 8) return;
      const size = got.readInt32BE(0);
      if ((size === 36 || size === 37) && got.readInt32BE(4) === 0) return done({ kind: 'zookeeper' });
      done({ kind: 'other', text: firstLine(got) });
    });
    socket.once('error', (e: NodeJS.ErrnoException) => done({ kind: 'error', code: e.code ?? '', message: e.message }));
    socket.once('close', () => done(got.length ? { kind: 'other', text: printable(got.toString('latin1')) } : { kind: 'closed' }));
  });
}

function findingOf(server: ZooKeeperServer, p: Probe, timeoutMs: number): { code: 'UNREACHABLE' | 'TIMEOUT'; text: string } {
  const at = serverLabel(server);
  switch (p.kind) {
    case 'zookeeper':
      return { code: 'TIMEOUT', text: `${at} answers the ZooKeeper handshake, but no session was set up within ${timeoutMs} ms (overloaded?)` };
    case 'other':
      return { code: 'UNREACHABLE', text: `${at} is not a ZooKeeper server: it answered ${JSON.stringify(p.text)}` };
    case 'closed':
      return { code: 'UNREACHABLE', text: `${at} accepted the connection and closed it without a session: a ZooKeeper server that is not serving (no quorum, or still starting), or not ZooKeeper` };
    case 'silent':
      return { code: 'TIMEOUT', text: `${at} accepted the TCP connection but gave no ZooKeeper answer within ${timeoutMs} ms: not a ZooKeeper server, or a stuck one` };
    case 'error':
      if (p.code === 'ECONNREFUSED') return { code: 'UNREACHABLE', text: `nothing listens on ${at} (connection refused)` };
      if (p.code === 'ENOTFOUND' || p.code === 'EAI_AGAIN') return { code: 'UNREACHABLE', text: `${server.host} is not a known host name` };
      return { code: 'UNREACHABLE', text: `${at}: ${p.message}` };
  }
}

async function explainOpenFailure(spec: SessionSpec, servers: readonly ZooKeeperServer[], cause: unknown): Promise<LockLensError> {
  const probeMs = probeBudgetMs(spec.timeoutMs);
  const findings = await Promise.all(servers.map(async (s) => findingOf(s, await probeHandshake(s, probeMs), probeMs)));
  const text = findings.length === 1 ? findings[0].text : findings.map((f) => f.text).join('; ');
  const code = findings.every((f) => f.code === 'TIMEOUT') ? 'TIMEOUT' : 'UNREACHABLE';
  return new LockLensError(code, `cannot connect to ZooKeeper at ${spec.label}: ${text}`, { cause });
}

export type ConnectionState = SessionState | 'renewed';

/**
 * The backend's own session, for reading and watching: when the ensemble expires it (a long partition, a paused
 * process), a new one is opened, and `renewed` tells the watches to read everything again and set their watches anew
 * (watches belong to a session). The library reconnects a live session by itself (`disconnected`, then `connected`).
 */
export class ZkConnection {
  private readonly stateEmitter = new Emitter<ConnectionState>();
  readonly onDidChangeState = this.stateEmitter.event;
  private closed = false;
  private renewing = false;

  private constructor(
    private current: ZkClient,
    readonly spec: SessionSpec,
    readonly servers: readonly ZooKeeperServer[],
    private readonly log?: (message: string) => void,
  ) {
    this.follow(current);
  }

  static async open(spec: SessionSpec, servers: readonly ZooKeeperServer[], log?: (message: string) => void): Promise<ZkConnection> {
    return new ZkConnection(await openSession(spec, servers), spec, servers, log);
  }

  get client(): ZkClient {
    if (this.closed) throw new LockLensError('CLOSED', 'the ZooKeeper connection is closed');
    return this.current;
  }

  private follow(client: ZkClient): void {
    let away: NodeJS.Timeout | undefined;
    client.onDidChangeState((state) => {
      if (this.closed || client !== this.current) return clearTimeout(away);
      clearTimeout(away);
      if (state === 'disconnected') {
        // Away for a whole session timeout, the session is gone on the server, whatever the library will hear when it
        // is back; and a restarted server that lost our last zxid refuses the session for ever. A new one either way.
        away = setTimeout(() => this.expire(client), client.sessionTimeoutMs);
        away.unref?.();
      }
      this.stateEmitter.fire(state);
      if (state === 'expired') void this.renew(client);
    });
  }

  private expire(client: ZkClient): void {
    if (this.closed || client !== this.current || client.state === 'connected') return;
    this.log?.(`ZooKeeper at ${this.spec.label}: no connection for the session timeout; opening a new session`);
    this.stateEmitter.fire('expired');
    void this.renew(client);
  }

  private async renew(expired: ZkClient): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    void expired.close();
    for (let attempt = 1; !this.closed; attempt++) {
      try {
        const fresh = await openSession(this.spec, this.servers);
        if (this.closed) return void fresh.close();
        this.current = fresh;
        this.renewing = false;
        this.follow(fresh);
        this.stateEmitter.fire('renewed');
        return;
      } catch (e) {
        this.log?.(`ZooKeeper session expired; a new one could not be opened yet: ${errorMessage(e)}`);
        await sleep(Math.min(200 * attempt, 2000));
      }
    }
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.stateEmitter.dispose();
    return this.current.close();
  }
}

/**
 * Which sessions have a client connected, and when each server last heard from it: ZooKeeper's `cons` four-letter
 * word, asked of every server of the URL. A server lists only the connections it serves, so a session is known to have
 * no connection only when every server answered. Servers since 3.5 answer only the words in
 * `4lw.commands.whitelist`; where `cons` is not there, nothing is claimed and the listing says what to enable.
 */
import { createConnection } from 'node:net';
import type { ClientConnection, LockState } from '../lockState';
import { members } from '../lockState';
import { probe } from '../socketProbe';
import type { ZooKeeperServer } from './url';

/** One client connection as `cons` prints it. */
export interface ConsEntry {
  /** host:port of the client. */
  readonly client: string;
  /** The session in lowercase hex without 0x, as members' owners are. */
  readonly session: string;
  /** The session timeout the server granted (ms). */
  readonly timeoutMs: number;
  /**
   * The server's last response to it on our clock (epoch ms); absent before its first. `cons` prints it on the server's
   * monotonic clock, which says nothing of the time of day: it is placed against the server's most recent response to
   * any connection, LockLens's own reading session's among them (it has just read), taken as the time of asking.
   */
  readonly lastResponseAt?: number;
}

/**
 * ` /127.0.0.1:40312[1](queued=0,recved=9,sent=9,sid=0x1000…,lop=PING,est=…,to=4000,…,lresp=1700000000000,…)`.
 * A connection still in its handshake has no sid and is not a session's.
 */
export function parseCons(text: string, askedAt: number): ConsEntry[] {
  const entries: (ConsEntry & { lresp?: number })[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*\/?(\S+?)\[\d+\]\((.*)\)\s*$/.exec(line);
    if (!m) continue;
    const fields = new Map(m[2].split(',').map((f) => f.split('=', 2) as [string, string]));
    const sid = fields.get('sid');
    const to = Number(fields.get('to'));
    if (!sid || !/^0x[0-9a-f]+$/i.test(sid) || !Number.isFinite(to)) continue;
    const lresp = Number(fields.get('lresp'));
    entries.push({ client: m[1], session: BigInt(sid).toString(16), timeoutMs: to, ...(lresp > 0 ? { lresp } : {}) });
  }
  const latest = Math.max(0, ...entries.map((e) => e.lresp ?? 0));
  return entries.map(({ lresp, ...e }) => (lresp === undefined ? e : { ...e, lastResponseAt: askedAt - (latest - lresp) }));
}

/** What a server answered: its connections, or why it would not say. */
type Answer = { readonly entries: ConsEntry[] } | { readonly refused: string };

function ask(server: ZooKeeperServer, timeoutMs: number): Promise<Answer> {
  const socket = createConnection({ host: server.host, port: server.port });
  let out = '';
  return probe<Answer>(socket, timeoutMs, { refused: `${server.host}:${server.port} did not answer cons` }, (done) => {
    socket.once('connect', () => socket.write('cons'));
    socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
    socket.once('error', (e) => done({ refused: `${server.host}:${server.port}: ${e.message}` }));
    socket.once('close', () =>
      done(/not in the whitelist|not executed/i.test(out) ? { refused: `${server.host}:${server.port} does not allow cons` } : { entries: parseCons(out, Date.now()) }),
    );
  });
}

export interface Connections {
  /** Sessions' connections, where every server answered (else a session's absence says nothing). */
  readonly bySession?: ReadonlyMap<string, ConsEntry>;
  /** Why liveness is not known, with what to enable. */
  readonly hidden?: string;
}

export async function readConnections(servers: readonly ZooKeeperServer[], timeoutMs = 2000): Promise<Connections> {
  const answers = await Promise.all(servers.map((s) => ask(s, timeoutMs)));
  const refused = answers.flatMap((a) => ('refused' in a ? [a.refused] : []));
  if (refused.length) {
    return {
      hidden:
        `whether each holder's session is connected is not known (${refused.join('; ')}): ` +
        'allow the cons four-letter word on every server (4lw.commands.whitelist=srvr,cons) to see it',
    };
  }
  return { bySession: new Map(answers.flatMap((a) => ('entries' in a ? a.entries : [])).map((e) => [e.session, e])) };
}

/**
 * Java's client and kazoo ping when idle for a third of the session timeout; half of it leaves room for a slow
 * response before a connected client is called silent.
 */
const QUIET_SHARE = 0.5;

/** The locks with each session-owned member's connection set, as `cons` on `source` showed them. */
export function withConnections(locks: readonly LockState[], connections: ReadonlyMap<string, ConsEntry>, source: string): LockState[] {
  return locks.map((lock) => {
    if (!members(lock).some((m) => m.expiresWith === 'session')) return lock;
    const set = <M extends { readonly owner: string; readonly expiresWith: string }>(m: M): M => {
      if (m.expiresWith !== 'session') return m;
      const e = connections.get(m.owner);
      const connection: ClientConnection = e
        ? { client: e.client, lastHeardAt: e.lastResponseAt, quietLimitMs: e.timeoutMs * QUIET_SHARE, source }
        : { quietLimitMs: 0, source };
      return { ...m, connection };
    };
    return {
      ...lock,
      holder: lock.holder && set(lock.holder),
      ...(lock.sharedWith ? { sharedWith: lock.sharedWith.map(set) } : {}),
      waiters: lock.waiters.map(set),
    };
  });
}

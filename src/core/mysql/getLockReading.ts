/**
 * Reading the GET_LOCK locks of a server, with the sessions behind them, per poll.
 *
 * MySQL 8: performance_schema.metadata_locks has a row per user-level lock and connection, GRANTED (the holder) or
 * PENDING (a waiter), joined with performance_schema.threads for the session. Names are as the server keys them:
 * MySQL lowercases GET_LOCK names (they are case-insensitive there).
 *
 * MariaDB (10.11 checked): holders are in information_schema.METADATA_LOCK_INFO (plugin metadata_lock_info), LOCK_TYPE
 * 'User lock', the name in TABLE_SCHEMA (non-BMP characters already '?' there: the server keeps names in utf8mb3);
 * waiters are not, only the processlist's threads in state "User lock", whose lock is read from their statement
 * (getLockCall.ts). MariaDB 10.11 keys GET_LOCK names case-sensitively, whatever its documentation says ('Foo' and
 * 'foo' are two locks, held at once by two connections): names are kept exactly as given. Without the plugin, the
 * holder of each lock someone waits for is IS_USED_LOCK(name), and held locks nobody waits for cannot be seen.
 *
 * Waiters are ordered by how long their statement has run (longest first), then by connection id: the server's MDL
 * queue itself is not readable.
 */
import { isUtf8, keyId } from '../keys';
import { NO_VALUE, type LockMember, type LockState, type SessionInfo } from '../lockState';
import type { MysqlFlavor } from './connect';
import { serverErrno } from './connect';
import { getLockName } from './getLockCall';
import { rowText, type SqlSession } from '../sql/session';

export const GET_LOCK_CONVENTION = 'mysql-get-lock';

/** The processlist state of a thread waiting in GET_LOCK (MariaDB 10.11 and MySQL 8 alike). */
const USER_LOCK_STATE = 'User lock';

const QUERY_PREVIEW_BYTES = 4096;
const ER_UNKNOWN_TABLE = 1109;
/**
 * A lock source found unreadable (performance_schema off or not granted, metadata_lock_info not installed) is asked
 * again only every this many reads, not on every poll: a plugin installed or a grant given shows up within that many.
 */
const RECHECK_EVERY_READS = 10;

/** Whether an optional source of locks is worth asking on this read, from how the last attempt went. */
class SourceCheck {
  private missing = false;
  private readsSinceMissing = 0;

  due(): boolean {
    return !this.missing || ++this.readsSinceMissing >= RECHECK_EVERY_READS;
  }

  record(readable: boolean): void {
    this.missing = !readable;
    this.readsSinceMissing = 0;
  }
}

/** One connection as the processlist shows it. */
export interface ProcessRow {
  readonly id: number;
  readonly user?: string;
  readonly host?: string;
  readonly command?: string;
  readonly state?: string;
  /** How long its current statement has run, in ms. */
  readonly timeMs: number;
  readonly info?: Buffer;
}

export interface GetLockReading {
  readonly locks: LockState[];
  /** Sentences saying what could not be seen. */
  readonly hidden: string[];
}

/** What a reader can see, found out once at connect. */
export interface Visibility {
  readonly flavor: MysqlFlavor;
  /** PROCESS privilege: every connection in the processlist, not only this user's own. */
  readonly seesAllConnections: boolean;
  readonly user: string;
}

/** The connections this user may see (`one`: the one whose ID is the statement's parameter), as processRow reads them. */
export function processListQuery(flavor: MysqlFlavor, one: boolean): string {
  // MariaDB has the running time in ms and the statement as sent (bytes); MySQL whole seconds and text.
  const time = flavor === 'mariadb' ? 'TIME_MS' : 'TIME * 1000';
  const info = flavor === 'mariadb' ? 'INFO_BINARY' : 'BINARY INFO';
  return `SELECT ID AS id, USER AS user, HOST AS host, COMMAND AS command, STATE AS state, ${time} AS timeMs, ${info} AS info FROM information_schema.PROCESSLIST${
    one ? ' WHERE ID = ?' : ''
  }`;
}

/** MariaDB's metadata_lock_info plugin: every granted user lock, by its holder's connection id. */
export const GRANTED_USER_LOCKS_QUERY = "SELECT THREAD_ID AS id, BINARY TABLE_SCHEMA AS name FROM information_schema.METADATA_LOCK_INFO WHERE LOCK_TYPE = 'User lock'";

export function memberKey(connectionId: number | string): Buffer {
  return Buffer.from(`connection ${connectionId}`);
}

function sessionOf(proc: ProcessRow | undefined, waitingSince: number | undefined): SessionInfo | undefined {
  if (!proc) return undefined;
  const state = [proc.command, proc.state].filter(Boolean).join(': ');
  const session: { -readonly [K in keyof SessionInfo]: SessionInfo[K] } = {};
  if (proc.user) session.user = proc.user;
  if (proc.host) session.client = proc.host;
  if (state) session.state = state;
  if (proc.info?.length) session.query = proc.info.subarray(0, QUERY_PREVIEW_BYTES).toString('utf8');
  if (waitingSince !== undefined) session.waitingSince = waitingSince;
  return session;
}

/** A connection as a lock's member: its id is its owner and what its lock goes with (see mysqlBackend.ts). */
export function connectionMember(id: number, proc: ProcessRow | undefined, waitingSince?: number): LockMember {
  const session = sessionOf(proc, waitingSince);
  return {
    key: memberKey(id),
    convention: GET_LOCK_CONVENTION,
    owner: String(id),
    expiresWith: 'connection',
    lease: String(id),
    token: null,
    // Re-entrant (a connection may GET_LOCK a name it holds, and must release it as often), but no server table says
    // how many times.
    holds: null,
    ...(session ? { session } : {}),
    valuePreview: NO_VALUE,
    valueSize: 0,
  };
}

function bytes(v: unknown): Buffer | undefined {
  if (v === null || v === undefined) return undefined;
  return Buffer.isBuffer(v) ? v : Buffer.from(String(v));
}

export function processRow(r: Record<string, unknown>): ProcessRow {
  return {
    id: Number(r.id),
    user: rowText(r.user),
    host: rowText(r.host),
    command: rowText(r.command),
    state: rowText(r.state),
    timeMs: Number(r.timeMs ?? 0),
    info: bytes(r.info),
  };
}

/** Waiters first by how long they have waited, then by connection id. */
export function byWaitOrder(a: ProcessRow, b: ProcessRow): number {
  return b.timeMs - a.timeMs || a.id - b.id;
}

/** A lock's holder and waiters as found, before they become a LockState. */
interface Found {
  /** keyId of the name */
  readonly id: string;
  readonly name: Buffer;
  holder?: number;
  readonly waiters: ProcessRow[];
}

/**
 * Keeps a waiter's start as first estimated (now minus the statement's running time), so that the estimate's jitter
 * from poll to poll does not show as a change.
 */
class WaitStarts {
  private known = new Map<string, number>();
  private seen = new Map<string, number>();

  of(proc: ProcessRow, name: Buffer, now: number): number {
    const key = `${proc.id}/${keyId(name)}`;
    const estimate = Math.round(now - proc.timeMs);
    const before = this.known.get(key);
    const start = before !== undefined && Math.abs(before - estimate) < 2000 ? before : estimate;
    this.seen.set(key, start);
    return start;
  }

  /** Forgets the waits not seen in this reading. */
  settle(): void {
    this.known = this.seen;
    this.seen = new Map();
  }
}

function lockName(name: Buffer): string | Buffer {
  return isUtf8(name) ? name.toString('utf8') : name;
}

type Findings = { byName: Map<string, Found>; processes: Map<number, ProcessRow> };

/** The entry of `name` in `byName`, added when missing. */
function entry(byName: Map<string, Found>, name: Buffer): Found {
  const id = keyId(name);
  let f = byName.get(id);
  if (!f) byName.set(id, (f = { id, name, waiters: [] }));
  return f;
}

export class GetLockReader {
  private readonly waitStarts = new WaitStarts();
  /** MySQL's performance_schema, or MariaDB's metadata_lock_info: where holders nobody waits for are seen. */
  private readonly lockSource = new SourceCheck();

  constructor(
    private readonly db: SqlSession,
    private readonly visibility: Visibility,
  ) {}

  private get flavor(): MysqlFlavor {
    return this.visibility.flavor;
  }

  async read(): Promise<GetLockReading> {
    const hidden: string[] = [];
    if (!this.visibility.seesAllConnections) {
      hidden.push(
        `only the connections of ${this.visibility.user} are visible: without the PROCESS privilege the server hides other users' sessions, ` +
          `so their waiters are not shown${this.flavor === 'mariadb' ? '' : ' and their holders show no session'} (GRANT PROCESS ON *.* TO the user)`,
      );
    }
    const now = Date.now();
    const found = this.flavor === 'mysql' && this.lockSource.due() ? await this.readPerformanceSchema() : undefined;
    const { byName, processes } = found ?? (await this.readProcesslist(hidden));
    // A connection is the same holder of every name it holds: its member is built once and shared by those locks.
    const holders = new Map<number, LockMember>();
    const locks: LockState[] = [];
    // Loops, not callbacks made per read: see byName (lockState.ts) on what V8 does with those at every poll.
    for (const f of byName.values()) locks.push(this.lockOf(f, holders, processes, now));
    this.waitStarts.settle();
    return { locks, hidden };
  }

  private lockOf(f: Found, holders: Map<number, LockMember>, processes: ReadonlyMap<number, ProcessRow>, now: number): LockState {
    let holder: LockMember | null = null;
    if (f.holder !== undefined) {
      holder = holders.get(f.holder) ?? connectionMember(f.holder, processes.get(f.holder));
      holders.set(f.holder, holder);
    }
    const waiters: LockMember[] = [];
    for (const w of f.waiters.sort(byWaitOrder)) waiters.push(connectionMember(w.id, w, this.waitStarts.of(w, f.name, now)));
    return { id: f.id, name: f.name, kind: 'queue', holder, waiters };
  }

  /** Which of these connections the server still has, where this user may see them all (PROCESS); undefined otherwise. */
  async connections(ids: readonly string[]): Promise<Set<string> | undefined> {
    if (!this.visibility.seesAllConnections) return undefined;
    const rows = await this.db.query('SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID IN (?)', [ids.map(Number)]);
    return new Set(rows.map((r) => String(r.id)));
  }

  /** The connection holding `name` now, with what the processlist shows of it; undefined when the name is free. */
  async holderOf(name: string): Promise<LockMember | undefined> {
    const [row] = await this.db.query('SELECT IS_USED_LOCK(?) AS holder', [name]);
    if (row.holder === null || row.holder === undefined) return undefined;
    const id = Number(row.holder);
    const [proc] = await this.processes(id);
    return connectionMember(id, proc);
  }

  /** Every connection this user may see, or the one of id `only`. */
  private async processes(only?: number): Promise<ProcessRow[]> {
    const rows = await this.db.query(processListQuery(this.flavor, only !== undefined), only === undefined ? [] : [only]);
    return rows.map(processRow);
  }

  /**
   * MariaDB's metadata_lock_info: every granted user lock, or undefined when the plugin is not installed (or was not
   * when last asked, see RECHECK_EVERY_READS).
   */
  private async grantedUserLocks(): Promise<{ id: number; name: Buffer }[] | undefined> {
    if (!this.lockSource.due()) return undefined;
    try {
      const rows = await this.db.query(GRANTED_USER_LOCKS_QUERY);
      this.lockSource.record(true);
      const granted: { id: number; name: Buffer }[] = [];
      for (const r of rows) granted.push({ id: Number(r.id), name: bytes(r.name)! });
      return granted;
    } catch (e) {
      if (serverErrno(e) !== ER_UNKNOWN_TABLE) throw e;
      this.lockSource.record(false);
      return undefined;
    }
  }

  /** Holders from metadata_lock_info (or IS_USED_LOCK), waiters from the processlist. */
  private async readProcesslist(hidden: string[]): Promise<Findings> {
    const [rows, granted] = await Promise.all([this.processes(), this.flavor === 'mariadb' ? this.grantedUserLocks() : Promise.resolve(undefined)]);
    const processes = new Map(rows.map((p) => [p.id, p]));
    const byName = new Map<string, Found>();
    for (const g of granted ?? []) entry(byName, g.name).holder = g.id;
    let unnamed = 0;
    for (const p of rows) {
      if (p.state !== USER_LOCK_STATE) continue;
      const parsed = p.info && getLockName(p.info);
      if (!parsed) {
        unnamed++;
        continue;
      }
      // MySQL keys names lowercased; MariaDB as given (see above).
      const name = this.flavor === 'mysql' && isUtf8(parsed) ? Buffer.from(parsed.toString('utf8').toLowerCase()) : parsed;
      entry(byName, name).waiters.push(p);
    }
    const unknownHolders = [...byName.values()].filter((f) => f.holder === undefined);
    if (unknownHolders.length) {
      const columns = unknownHolders.map((_, i) => `IS_USED_LOCK(?) AS h${i}`).join(', ');
      const [row] = await this.db.query(`SELECT ${columns}`, unknownHolders.map((f) => lockName(f.name)));
      unknownHolders.forEach((f, i) => {
        const holder = row[`h${i}`];
        if (holder !== null && holder !== undefined) f.holder = Number(holder);
      });
    }
    if (granted === undefined) {
      hidden.push(
        this.flavor === 'mariadb'
          ? "held locks nobody waits for are not visible: the metadata_lock_info plugin is not installed (INSTALL SONAME 'metadata_lock_info', which needs SUPER or INSERT on mysql.plugin)"
          : 'held locks nobody waits for are not visible: performance_schema.metadata_locks cannot be read (performance_schema off, or no SELECT on it)',
      );
    }
    if (unnamed) {
      hidden.push(`${unnamed} connection${unnamed > 1 ? 's wait' : ' waits'} in GET_LOCK for a name that is not in the statement (a variable or a prepared statement's parameter): not shown`);
    }
    return { byName, processes };
  }

  /**
   * MySQL 8: holders and waiters from performance_schema; undefined when it cannot be read (then the processlist, until
   * it is asked again: see RECHECK_EVERY_READS).
   */
  private async readPerformanceSchema(): Promise<Findings | undefined> {
    let rows;
    try {
      rows = await this.db.query(
        'SELECT BINARY ml.OBJECT_NAME AS name, ml.LOCK_STATUS AS status, t.PROCESSLIST_ID AS id, t.PROCESSLIST_USER AS user, t.PROCESSLIST_HOST AS host, ' +
          't.PROCESSLIST_COMMAND AS command, t.PROCESSLIST_STATE AS state, t.PROCESSLIST_TIME * 1000 AS timeMs, BINARY t.PROCESSLIST_INFO AS info ' +
          'FROM performance_schema.metadata_locks ml JOIN performance_schema.threads t ON t.THREAD_ID = ml.OWNER_THREAD_ID ' +
          "WHERE ml.OBJECT_TYPE = 'USER LEVEL LOCK' AND ml.LOCK_STATUS IN ('GRANTED', 'PENDING')",
      );
    } catch (e) {
      if (serverErrno(e) === undefined) throw e;
      this.lockSource.record(false);
      return undefined;
    }
    this.lockSource.record(true);
    const processes = new Map<number, ProcessRow>();
    const byName = new Map<string, Found>();
    for (const r of rows) {
      const proc = processRow(r);
      if (!Number.isFinite(proc.id)) continue;
      processes.set(proc.id, proc);
      const f = entry(byName, bytes(r.name)!);
      if (r.status === 'GRANTED') f.holder = proc.id;
      else f.waiters.push(proc);
    }
    return { byName, processes };
  }
}

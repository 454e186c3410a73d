import { sleep } from '../src/core/sleep';
import { PythonServices, type PythonServicesOptions, type ReportLevel } from './pythonServices';

/**
 * The demo's PostgreSQL services: real psycopg2 clients (Debian's python3-psycopg2 for /usr/bin/python3) on the
 * database `app`, each session named by its `application_name` (see docs: lock-backends.md, SQL):
 *
 * - advisory lock `42` (`pg_advisory_lock(42)`): the incident. `billing-worker` holds it for minutes at a time, its
 *   session idle meanwhile; `report-export` and `ledger-sync` wait behind it, in that order, in `pg_advisory_lock`.
 *   Force-released (its session terminated), the next waiter takes it and billing-worker connects again and queues;
 *   the waiters hold a few seconds each, so it holds again soon after, for minutes;
 * - advisory lock `7:1` (`pg_advisory_lock(7, 1)`, an int pair): three `sync-worker-N` sessions contending, holding
 *   1-3 s, for a live timeline;
 * - `databasechangeloglock/1`: Liquibase's lock table, made with Liquibase's own DDL for PostgreSQL, its row 1 locked
 *   by `migrator-7f3c (10.0.4.17)` as a migration killed mid-way leaves it: nothing will ever unlock it. Once someone
 *   does (LOCKED false), a migration crashes holding it again 30 s later;
 * - `shedlock/nightly-report`: ShedLock's table, the job locked with ShedLock's own statements (the database's clock)
 *   every 30 s: lockAtMostFor 60 s, well beyond the job's few seconds as ShedLock advises, and lockAtLeastFor 20 s, so
 *   its unlock moves lock_until back to 20 s after locked_at: each run held for 20 s, then free for 10.
 */

export const POSTGRES_LOCKS = {
  incident: '42',
  contended: '7:1',
  liquibase: 'databasechangeloglock/1',
  shedlock: 'shedlock/nightly-report',
} as const;
/** Who holds `42` and who waits behind it, in queue order (their application_name). */
export const INCIDENT_HOLDER = 'billing-worker';
export const INCIDENT_WAITERS = ['report-export', 'ledger-sync'] as const;
/** Liquibase's LOCKEDBY: the host name and address of the migration that died holding the lock. */
export const LIQUIBASE_LOCKED_BY = 'migrator-7f3c (10.0.4.17)';
const SHEDLOCK_LOCKED_BY = 'scheduler-2b9d';

/** The modes of every psycopg2 peer (see PythonServices): `postgres-peers.py MODE URL ARGS…`. */
const MODES = String.raw`
import contextlib, random, select, threading, time
import psycopg2, psycopg2.extensions, psycopg2.extras

# Statements wait in Python's select(), not inside libpq: SIGTERM's handler then runs while a session waits for a
# lock, and the session is closed on the way out instead of the process being killed after the demo's grace period.
psycopg2.extensions.set_wait_callback(psycopg2.extras.wait_select)

@contextlib.contextmanager
def session(who):
    conn = psycopg2.connect(url, application_name=who)
    conn.autocommit = True
    try:
        yield conn
    finally:
        conn.close()

def advisory(cur, function, key):
    # '42' is pg_advisory_*(bigint), '7:1' pg_advisory_*(int, int).
    args = [int(k) for k in key.split(':')]
    cur.execute('SELECT %s(%s)' % (function, ', '.join(['%s'] * len(args))), args)
    return cur.fetchone()[0]

def report_waiting(who, pid, key):
    # Said once the request is in pg_locks, not granted: its place in the queue is taken. Seen from a session of its
    # own, since this one is blocked in pg_advisory_lock.
    def probe():
        with session(who) as conn:
            cur = conn.cursor()
            while True:
                cur.execute("SELECT granted FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (pid,))
                row = cur.fetchone()
                if row is not None:
                    if not row[0]:
                        say('ready', 'waits for %s as pid %d' % (key, pid))
                    return
                time.sleep(0.05)
    threading.Thread(target=probe, daemon=True).start()

def held_to_the_end(conn, seconds):
    # The session sits idle holding the lock. Its socket turns readable only when the server ends it
    # (pg_terminate_backend: a force release).
    readable, _, _ = select.select([conn], [], [], seconds)
    return not readable

def take_turns(key, who, hold_min, hold_max, announce):
    # A service's life with an advisory lock: take it (waiting its turn), hold it a while, release it, pause, again.
    # Its session terminated, it connects again and queues.
    while True:
        with session(who) as conn:
            cur = conn.cursor()
            cur.execute('SELECT pg_backend_pid()')
            pid = cur.fetchone()[0]
            while True:
                if not advisory(cur, 'pg_try_advisory_lock', key):
                    if announce == 'announce':
                        report_waiting(who, pid, key)
                    advisory(cur, 'pg_advisory_lock', key)
                say('ready', 'holds %s as pid %d' % (key, pid))
                if not held_to_the_end(conn, random.uniform(float(hold_min), float(hold_max))):
                    say('info', 'its session (pid %d) was terminated while it held %s: it connects again and queues' % (pid, key))
                    break
                advisory(cur, 'pg_advisory_unlock', key)
                say('debug', 'released %s' % key)
                time.sleep(random.uniform(0.3, 1.5))

# Liquibase's DDL, initialisation and lock for PostgreSQL (its CreateDatabaseChangeLogLockTable,
# InitializeDatabaseChangeLogLock and LockDatabaseChangeLog statements).
LIQUIBASE_CREATE = 'CREATE TABLE public.databasechangeloglock (ID INTEGER NOT NULL, LOCKED BOOLEAN NOT NULL, LOCKGRANTED TIMESTAMP WITHOUT TIME ZONE, LOCKEDBY VARCHAR(255), CONSTRAINT databasechangeloglock_pkey PRIMARY KEY (ID))'
LIQUIBASE_INIT = ['DELETE FROM public.databasechangeloglock', 'INSERT INTO public.databasechangeloglock (ID, LOCKED) VALUES (1, FALSE)']
LIQUIBASE_LOCK = 'UPDATE public.databasechangeloglock SET LOCKED = TRUE, LOCKEDBY = %s, LOCKGRANTED = NOW() WHERE ID = 1 AND LOCKED = FALSE'

def liquibase_lock(locked_by):
    # A migration that takes Liquibase's lock and is killed before it unlocks (here: it just exits).
    with session('liquibase') as conn:
        cur = conn.cursor()
        cur.execute("SELECT to_regclass('public.databasechangeloglock')")
        if cur.fetchone()[0] is None:
            cur.execute(LIQUIBASE_CREATE)
            for statement in LIQUIBASE_INIT:
                cur.execute(statement)
        cur.execute(LIQUIBASE_LOCK, (locked_by,))
        cur.execute('SELECT LOCKEDBY FROM public.databasechangeloglock WHERE ID = 1 AND LOCKED')
        row = cur.fetchone()
        say('ready', 'locked by %s' % (row[0] if row else ''))

def liquibase_wait_unlocked():
    with session('demo-watch') as conn:
        cur = conn.cursor()
        while True:
            cur.execute('SELECT LOCKED FROM public.databasechangeloglock WHERE ID = 1')
            row = cur.fetchone()
            if not (row and row[0]):
                return
            time.sleep(1)

# ShedLock's PostgreSQL statements on the database's clock (PostgresSqlServerTimeStatementsSource).
SHEDLOCK_LOCK = ("INSERT INTO shedlock(name, lock_until, locked_at, locked_by) VALUES(%(name)s, timezone('utc', CURRENT_TIMESTAMP) + cast(%(lockAtMostForInterval)s as interval), timezone('utc', CURRENT_TIMESTAMP), %(lockedBy)s)"
    " ON CONFLICT (name) DO UPDATE SET lock_until = timezone('utc', CURRENT_TIMESTAMP) + cast(%(lockAtMostForInterval)s as interval), locked_at = timezone('utc', CURRENT_TIMESTAMP), locked_by = %(lockedBy)s"
    " WHERE shedlock.name = %(name)s AND shedlock.lock_until <= timezone('utc', CURRENT_TIMESTAMP)")
SHEDLOCK_UNLOCK = ("UPDATE shedlock SET lock_until = CASE WHEN locked_at + cast(%(lockAtLeastForInterval)s as interval) > timezone('utc', CURRENT_TIMESTAMP)"
    " THEN locked_at + cast(%(lockAtLeastForInterval)s as interval) ELSE timezone('utc', CURRENT_TIMESTAMP) END WHERE name = %(name)s AND locked_by = %(lockedBy)s")

def shedlock(name, locked_by):
    with session('report-scheduler') as conn:
        cur = conn.cursor()
        # ShedLock's documented table for PostgreSQL.
        cur.execute('CREATE TABLE IF NOT EXISTS shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))')
        # The unlock after the job leaves the row held until lockAtLeastFor; lockAtMostFor is only for a job that hangs.
        params = {'name': name, 'lockedBy': locked_by, 'lockAtMostForInterval': '60000 milliseconds', 'lockAtLeastForInterval': '20000 milliseconds'}
        while True:
            started = time.time()
            cur.execute(SHEDLOCK_LOCK, params)
            if cur.rowcount == 1:
                say('ready', 'holds %s for 20 s' % name)
                time.sleep(random.uniform(3, 6))
                cur.execute(SHEDLOCK_UNLOCK, params)
            time.sleep(max(0, 30 - (time.time() - started)))

MODES = {'advisory': take_turns, 'liquibase-lock': liquibase_lock, 'liquibase-wait-unlocked': liquibase_wait_unlocked, 'shedlock': shedlock}
`;

/** Hold times in seconds: the incident's holder keeps it for minutes, its waiters and the contenders for seconds. */
const HOLDS = { incident: ['480', '720'], waiter: ['4', '8'], contender: ['1', '3'] } as const;

export class PostgresWorkload extends PythonServices {
  /** billing-worker's backend pid while it holds `42`. */
  holderPid?: number;
  /** LOCKEDBY of Liquibase's row while it is locked. */
  liquibaseLockedBy?: string;
  private readonly waiting = new Set<string>();
  private holds = 0;
  private readyChanged?: () => void;

  /** `url`: postgres://postgres@127.0.0.1:PORT/app */
  constructor(options: PythonServicesOptions) {
    super(options, 'postgres-peers.py', MODES);
  }

  /** Starts every service; resolves once `42` is held with its two waiters queued in order, and Liquibase's row locked. */
  async start(): Promise<void> {
    this.run('migrator', () => this.liquibase());
    this.run('report-scheduler', () => this.peer('report-scheduler', ['shedlock', 'nightly-report', SHEDLOCK_LOCKED_BY]));
    for (const who of ['sync-worker-1', 'sync-worker-2', 'sync-worker-3']) {
      this.run(who, () => this.peer(who, ['advisory', POSTGRES_LOCKS.contended, who, ...HOLDS.contender, 'quiet']));
    }
    this.run(INCIDENT_HOLDER, () => this.peer(INCIDENT_HOLDER, ['advisory', POSTGRES_LOCKS.incident, INCIDENT_HOLDER, ...HOLDS.incident, 'announce'], (level, message) => this.onHolderReport(level, message)));
    await this.until(() => !!this.holderPid && !!this.liquibaseLockedBy, `hold ${POSTGRES_LOCKS.incident} and lock ${POSTGRES_LOCKS.liquibase}`);

    // The waiters queue one after the other, behind the holder: each once the one before it is in pg_locks.
    for (const who of INCIDENT_WAITERS) {
      this.run(who, () =>
        this.peer(who, ['advisory', POSTGRES_LOCKS.incident, who, ...HOLDS.waiter, 'announce'], (level, message) => {
          this.log(who, message, level === 'debug' || level === 'ready');
          if (level === 'ready' && message.startsWith('waits')) {
            this.waiting.add(who);
            this.readyChanged?.();
          }
        }),
      );
      await this.until(() => this.waiting.has(who), `queue ${who} for ${POSTGRES_LOCKS.incident}`);
    }
  }

  /** Waits (20 s at most) until `done()`, checked at each ready report. */
  private async until(done: () => boolean, what: string): Promise<void> {
    const ready = new Promise<void>((resolve) => (this.readyChanged = () => done() && resolve()));
    await Promise.race([ready, sleep(20_000, this.abort.signal)]);
    if (!this.stopping && !done()) throw new Error(`the PostgreSQL workload did not ${what} within 20 s`);
  }

  private onHolderReport(level: ReportLevel, message: string): void {
    const holds = /^holds \S+ as pid (\d+)$/.exec(message);
    if (level === 'ready' && holds) {
      this.holderPid = Number(holds[1]);
      this.log(INCIDENT_HOLDER, `holds ${POSTGRES_LOCKS.incident} ${this.holds++ ? 'again ' : ''}as pid ${holds[1]}, for minutes, idle meanwhile: force-release it`);
      this.readyChanged?.();
      return;
    }
    if (/terminated/.test(message)) this.holderPid = undefined;
    this.log(INCIDENT_HOLDER, message, level === 'debug' || level === 'ready');
  }

  /** The stuck Liquibase lock: a migration locks it and dies; once someone unlocks it, back in 30 s. */
  private async liquibase(): Promise<void> {
    const who = 'migrator';
    let lockedBy: string | undefined;
    await this.runPeer(who, ['liquibase-lock', LIQUIBASE_LOCKED_BY], (level, message) => {
      const m = /^locked by (.+)$/.exec(message);
      if (level === 'ready' && m) lockedBy = m[1];
      else this.log(who, message);
    });
    if (this.stopping) return;
    if (!lockedBy) throw new Error(`could not lock ${POSTGRES_LOCKS.liquibase}`);
    this.liquibaseLockedBy = lockedBy;
    this.log(who, `locked ${POSTGRES_LOCKS.liquibase} (Liquibase) as ${lockedBy} and was killed mid-migration: force-release it`);
    this.readyChanged?.();
    await this.runPeer(`${who}-watch`, ['liquibase-wait-unlocked'], (_, message) => this.log(who, message));
    if (this.stopping) return;
    this.liquibaseLockedBy = undefined;
    this.log(who, `${POSTGRES_LOCKS.liquibase} was unlocked; a migration crashes holding it again in 30 s`);
    await sleep(30_000, this.abort.signal);
  }
}

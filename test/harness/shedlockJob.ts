import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PythonPeer } from './pythonPeer';

/**
 * A scheduled job locked the way ShedLock's JDBC provider locks it with usingDbTime(), as an interop peer (see
 * PythonPeer): psycopg2 (Debian's python3-psycopg2) or PyMySQL (python3-pymysql) issuing ShedLock's own statements
 * (PostgresSqlServerTimeStatementsSource, MySqlServerTimeStatementsSource) as StorageBasedLockProvider does: an
 * insert the first time, then the update that takes the row only where `lock_until <= now`, and at the end of the job
 * the unlock that keeps the row locked until `locked_at + lockAtLeastFor`.
 *
 * Run i starts once the test allows it (`allow(i)`: a scheduler's next tick, ordered by what the test saw); it prints
 * `locked i <locked_at>` (or `busy i` when the row was not free), `unlocked i` after its work, and `free i` once
 * the database's clock has passed the row's lock_until, as ShedLock's next update would find it; after its last run,
 * `done`.
 */
const PEER = String.raw`
import os, sys, time
gate, dialect, target, name, locked_by, runs, at_most_ms, at_least_ms, work_ms = sys.argv[1:10]
params = {'name': name, 'lockedBy': locked_by}
if dialect == 'postgres':
    import psycopg2
    conn = psycopg2.connect(target)
    now = "timezone('utc', CURRENT_TIMESTAMP)"
    at_most = now + ' + make_interval(secs => %(lockAtMostForInterval)s)'
    at_least = 'make_interval(secs => %(lockAtLeastForInterval)s)'
    params.update(lockAtMostForInterval=int(at_most_ms) / 1000, lockAtLeastForInterval=int(at_least_ms) / 1000)
    update_clause = (' SET lock_until = ' + at_most + ', locked_at = ' + now + ', locked_by = %(lockedBy)s'
        ' WHERE shedlock.name = %(name)s AND shedlock.lock_until <= ' + now)
    INSERT = ('INSERT INTO shedlock(name, lock_until, locked_at, locked_by) VALUES(%(name)s, ' + at_most + ', ' + now +
        ', %(lockedBy)s) ON CONFLICT (name) DO UPDATE' + update_clause)
    UPDATE = 'UPDATE shedlock' + update_clause
    UNLOCK = ('UPDATE shedlock SET lock_until = CASE WHEN locked_at + ' + at_least + ' > ' + now + ' THEN locked_at + ' +
        at_least + ' ELSE ' + now + ' END WHERE name = %(name)s AND locked_by = %(lockedBy)s')
else:
    import pymysql
    host, port, user, password, database = target.split(' ')
    conn = pymysql.connect(host=host, port=int(port), user=user, password=password, database=database)
    now = 'UTC_TIMESTAMP(3)'
    at_most = 'TIMESTAMPADD(MICROSECOND, %(lockAtMostForMicros)s, ' + now + ')'
    at_least = 'TIMESTAMPADD(MICROSECOND, %(lockAtLeastForMicros)s, locked_at)'
    params.update(lockAtMostForMicros=int(at_most_ms) * 1000, lockAtLeastForMicros=int(at_least_ms) * 1000)
    INSERT = 'INSERT IGNORE INTO shedlock(name, lock_until, locked_at, locked_by) VALUES(%(name)s, ' + at_most + ', ' + now + ', %(lockedBy)s)'
    UPDATE = ('UPDATE shedlock SET lock_until = ' + at_most + ', locked_at = ' + now + ', locked_by = %(lockedBy)s'
        ' WHERE name = %(name)s AND lock_until <= ' + now)
    UNLOCK = ('UPDATE shedlock SET lock_until = IF (' + at_least + ' > ' + now + ' , ' + at_least + ', ' + now + ')'
        ' WHERE name = %(name)s AND locked_by = %(lockedBy)s')
FREE = 'SELECT lock_until <= ' + now + ' FROM shedlock WHERE name = %(name)s'
# As the database writes it as text (LockLens reads it so), not as Python would print the datetime.
LOCKED_AT = 'SELECT CAST(locked_at AS ' + ('text' if dialect == 'postgres' else 'CHAR') + ') FROM shedlock WHERE name = %(name)s'

def say(*words):
    print(*words, flush=True)

# Each statement in a transaction of its own, committed, as ShedLock's TransactionTemplate (REQUIRES_NEW) runs it.
def execute(sql):
    with conn.cursor() as cur:
        cur.execute(sql, params)
        changed = cur.rowcount
    conn.commit()
    return changed

def query(sql):
    with conn.cursor() as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    conn.commit()
    return row

created = False
for i in range(int(runs)):
    while not os.path.exists(os.path.join(os.path.dirname(gate), 'run-%d' % i)):
        time.sleep(0.02)
    # StorageBasedLockProvider: the insert until it knows the row exists, then only the update.
    locked = (execute(INSERT) > 0) if not created else False
    created = True
    if not locked:
        locked = execute(UPDATE) > 0
    if not locked:
        say('busy', i)
        continue
    say('locked', i, query(LOCKED_AT)[0])
    time.sleep(int(work_ms) / 1000)
    execute(UNLOCK)
    say('unlocked', i)
    while not query(FREE)[0]:
        time.sleep(0.02)
    say('free', i)
say('done')
`;

export type ShedLockTarget = { readonly dialect: 'postgres'; readonly dsn: string } | { readonly dialect: 'mysql'; readonly port: number; readonly user: string; readonly password: string; readonly database: string };

export interface ShedLockSchedule {
  readonly runs: number;
  readonly lockAtMostForMs: number;
  readonly lockAtLeastForMs: number;
  readonly workMs: number;
}

export class ShedLockJob extends PythonPeer {
  constructor(target: ShedLockTarget, name: string, lockedBy: string, schedule: ShedLockSchedule) {
    const connect = target.dialect === 'postgres' ? target.dsn : ['127.0.0.1', target.port, target.user, target.password, target.database].join(' ');
    const { runs, lockAtMostForMs, lockAtLeastForMs, workMs } = schedule;
    super('ShedLock job', PEER, [target.dialect, connect, name, lockedBy, String(runs), String(lockAtMostForMs), String(lockAtLeastForMs), String(workMs)]);
  }

  /** Lets run `i` start. */
  allow(i: number): void {
    writeFileSync(join(dirname(this.gate), `run-${i}`), '');
  }

  /** Resolves with what run `i` printed after `word` ('locked', 'unlocked', 'free'): for 'locked', its locked_at. */
  async said(word: 'locked' | 'unlocked' | 'free', i: number, timeoutMs = 30_000): Promise<string> {
    let exited = false;
    void this.exited.then(() => (exited = true));
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.find((l) => l === `${word} ${i}` || l.startsWith(`${word} ${i} `));
      if (line) return line.split(' ').slice(2).join(' ');
      if (this.lines.some((l) => l.startsWith('busy '))) throw new Error(`the ShedLock job found its row taken: ${this.lines.join(' | ')}`);
      if (exited || Date.now() > deadline) throw new Error(`the ShedLock job did not say '${word} ${i}': ${this.lines.join(' | ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

import { PythonPeer, STAY_PY } from './pythonPeer';

/**
 * psycopg2 (Debian's python3-psycopg2) taking a PostgreSQL advisory lock as an interop peer: see PythonPeer. The key
 * is a bigint (`42`) or an int pair (`1:2`); `shared` takes pg_advisory_lock_shared. It prints `pid <backend pid>`
 * once connected, then `waiting` before a blocking lock (or, `try`, `busy` when the lock is taken), `acquired` once
 * it holds, and after its gate `released` (or `release-failed <error>` when its session was terminated meanwhile).
 */
const PEER = STAY_PY + String.raw`
import os, sys, time, psycopg2
gate, dsn, key, mode, shared, app = sys.argv[1:7]
conn = psycopg2.connect(dsn, application_name=app)
conn.autocommit = True
cur = conn.cursor()
def say(*words):
    print(*words, flush=True)
args = [int(k) for k in key.split(':')]
placeholders = ', '.join(['%s'] * len(args))
suffix = '_shared' if shared == 'shared' else ''
cur.execute('SELECT pg_backend_pid()')
say('pid', cur.fetchone()[0])
if mode == 'try':
    cur.execute('SELECT pg_try_advisory_lock%s(%s)' % (suffix, placeholders), args)
    if not cur.fetchone()[0]:
        say('busy')
        sys.exit(0)
else:
    say('waiting')
    cur.execute('SELECT pg_advisory_lock%s(%s)' % (suffix, placeholders), args)
say('acquired')
while not os.path.exists(gate):
    time.sleep(0.02)
try:
    cur.execute('SELECT pg_advisory_unlock%s(%s)' % (suffix, placeholders), args)
    say('released')
except Exception as e:
    say('release-failed', type(e).__name__)
stay()
`;

export class PsycopgLock extends PythonPeer {
  /** `stay`: its connection lives on after the release, until `leave()`. */
  constructor(dsn: string, key: string, options: { mode?: 'hold' | 'try'; shared?: boolean; application?: string; stay?: boolean } = {}) {
    const { mode = 'hold', shared = false, application = 'psycopg-peer', stay = false } = options;
    super('psycopg2', PEER, [dsn, key, mode, shared ? 'shared' : 'exclusive', application], stay);
  }

  /** The peer's backend pid, as pg_locks shows it. */
  async pid(): Promise<number> {
    return Number((await this.until(['pid'])).split(' ')[1]);
  }
}

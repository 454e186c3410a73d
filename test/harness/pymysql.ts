import { PythonPeer, STAY_PY } from './pythonPeer';

/**
 * A PyMySQL client (Debian's python3-pymysql) taking a GET_LOCK lock, as an interop peer: see PythonPeer. It prints
 * `connected <connection id>`, then `acquired <id>` once GET_LOCK returned 1 (or `busy` in try mode, when it returned
 * 0); after its gate, `released <RELEASE_LOCK's answer>` (1: it still held it), or `release-failed <error>` when its
 * connection is gone (killed). Given a log file, it appends `<identifier> acquired` and `<identifier> releasing`, so a
 * test proves the order of holds across processes.
 */
const PEER = STAY_PY + String.raw`
import os, sys, time, pymysql
gate, host, port, user, password, name, mode, ident, log = sys.argv[1:10]
conn = pymysql.connect(host=host, port=int(port), user=user, password=password, charset='utf8mb4', autocommit=True)
cur = conn.cursor()
def say(*words):
    print(*words, flush=True)
def mark(word):
    if log:
        with open(log, 'a') as f:
            f.write('%s %s\n' % (ident, word))
say('connected', conn.thread_id())
cur.execute('SELECT GET_LOCK(%s, %s)', (name, 0 if mode == 'try' else 60))
if cur.fetchone()[0] != 1:
    say('busy')
    sys.exit(0)
mark('acquired')
say('acquired', conn.thread_id())
while not os.path.exists(gate):
    time.sleep(0.02)
mark('releasing')
try:
    cur.execute('SELECT RELEASE_LOCK(%s)', (name,))
    say('released', cur.fetchone()[0])
except Exception as e:
    say('release-failed', type(e).__name__)
stay()
`;

export interface PyMysqlTarget {
  readonly port: number;
  readonly user: string;
  readonly password: string;
}

export class PyMysqlLock extends PythonPeer {
  /** `stay`: its connection lives on after the release, until `leave()`. */
  constructor(target: PyMysqlTarget, name: string, options: { mode?: 'hold' | 'try'; identifier?: string; log?: string; stay?: boolean } = {}) {
    const { mode = 'hold', identifier = 'pymysql-peer', log = '', stay = false } = options;
    super('PyMySQL', PEER, ['127.0.0.1', String(target.port), target.user, target.password, name, mode, identifier, log], stay);
  }

  /** The connection id it holds or waits with. */
  async connectionId(): Promise<string> {
    return (await this.until(['connected'])).split(' ')[1];
  }
}

import { PythonPeer, STAY_PY } from './pythonPeer';

/**
 * kazoo's own `Lock`, `ReadLock` and `WriteLock` (Debian's python3-kazoo) as an interop peer: see PythonPeer. It prints
 * `waiting <session hex>` before a blocking acquire, `acquired <node name> <session hex>` and `contenders <json list of
 * identifiers>` once it holds (or `busy`), and after its gate `contenders-at-release <json>`, then `released`.
 * Given a log file, it also appends `<identifier> acquired` once it holds and `<identifier> releasing` just before it
 * releases, so that a test proves the order of holds across processes by the lines other processes append there.
 */
const PEER = STAY_PY + String.raw`
import json, os, sys, time
from kazoo.client import KazooClient
gate, hosts, path, kind, mode, ident, timeout, log, extra = sys.argv[1:10]
zk = KazooClient(hosts=hosts, timeout=float(timeout))
zk.start(timeout=15)
def say(*words):
    print(*words, flush=True)
def mark(word):
    if log:
        with open(log, 'a') as f:
            f.write('%s %s\n' % (ident, word))
lock = {'lock': zk.Lock, 'read': zk.ReadLock, 'write': zk.WriteLock}[kind](path, ident, extra_lock_patterns=json.loads(extra))
session = '%x' % zk.client_id[0]
if mode == 'try':
    ok = lock.acquire(blocking=False)
else:
    say('waiting', session)
    ok = lock.acquire(blocking=True, timeout=60)
if not ok:
    say('busy')
    sys.exit(0)
mark('acquired')
say('acquired', lock.node, session)
say('contenders', json.dumps(lock.contenders()))
while not os.path.exists(gate):
    time.sleep(0.02)
say('contenders-at-release', json.dumps(lock.contenders()))
mark('releasing')
lock.release()
say('released')
stay()
zk.stop()
`;

export type KazooKind = 'lock' | 'read' | 'write';

export class KazooLock extends PythonPeer {
  /** `hosts`: kazoo's `host:port[,…][/chroot]`; `sessionSeconds`: kazoo's session timeout; `log`: see above. */
  /**
   * `stay`: its session lives on after the release, until `leave()`; `extraLockPatterns`: kazoo's own option, the
   * node names of other clients it counts as contenders (`-lock-`: Curator's).
   */
  constructor(
    hosts: string,
    path: string,
    options: { kind?: KazooKind; mode?: 'hold' | 'try'; identifier?: string; sessionSeconds?: number; log?: string; stay?: boolean; extraLockPatterns?: readonly string[] } = {},
  ) {
    const { kind = 'lock', mode = 'hold', identifier = 'kazoo-peer', sessionSeconds = 4, log = '', stay = false, extraLockPatterns = [] } = options;
    super('kazoo', PEER, [hosts, path, kind, mode, identifier, String(sessionSeconds), log, JSON.stringify(extraLockPatterns)], stay);
  }

  /** The identifiers kazoo's `contenders()` listed when it acquired (or, `atRelease`, when told to release), in its order. */
  async contenders(atRelease = false): Promise<string[]> {
    const word = atRelease ? 'contenders-at-release' : 'contenders';
    return JSON.parse((await this.until([word])).slice(word.length + 1)) as string[];
  }
}

/**
 * kazoo's own `Semaphore` as an interop peer: it prints `waiting <session hex>` before a blocking acquire (or tries
 * once, `mode` 'try'), then `acquired <lease node name> <session hex>` and `holders <json of lease_holders()>` once it
 * holds a permit (or `busy`); after its gate `released`. A `max_leases` that differs from the one stored makes it print
 * `refused <kazoo's message>`.
 */
const SEMAPHORE_PEER = String.raw`
import json, os, sys, time
from kazoo.client import KazooClient
gate, hosts, path, ident, leases, mode, timeout = sys.argv[1:8]
zk = KazooClient(hosts=hosts, timeout=float(timeout))
zk.start(timeout=15)
def say(*words):
    print(*words, flush=True)
semaphore = zk.Semaphore(path, ident, max_leases=int(leases))
session = '%x' % zk.client_id[0]
try:
    if mode == 'try':
        ok = semaphore.acquire(blocking=False)
    else:
        say('waiting', session)
        ok = semaphore.acquire(blocking=True, timeout=60)
except ValueError as e:
    say('refused', str(e))
    sys.exit(0)
if not ok:
    say('busy')
    sys.exit(0)
say('acquired', semaphore.create_path.rsplit('/', 1)[1], session)
say('holders', json.dumps(sorted(semaphore.lease_holders())))
while not os.path.exists(gate):
    time.sleep(0.02)
semaphore.release()
say('released')
zk.stop()
`;

export class KazooSemaphore extends PythonPeer {
  /** `hosts`: kazoo's `host:port[,…][/chroot]`; `maxLeases`: kazoo's `max_leases`; `sessionSeconds`: its session timeout. */
  constructor(hosts: string, path: string, options: { identifier?: string; maxLeases?: number; mode?: 'hold' | 'try'; sessionSeconds?: number } = {}) {
    const { identifier = 'kazoo-peer', maxLeases = 1, mode = 'hold', sessionSeconds = 4 } = options;
    super('kazoo Semaphore', SEMAPHORE_PEER, [hosts, path, identifier, String(maxLeases), mode, String(sessionSeconds)]);
  }

  /** The identifiers of the permit holders kazoo's `lease_holders()` listed when it acquired, sorted. */
  async holders(): Promise<string[]> {
    return JSON.parse((await this.until(['holders'])).slice('holders '.length)) as string[];
  }
}

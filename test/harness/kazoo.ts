import { PythonPeer } from './pythonPeer';

/**
 * kazoo's own `Lock`, `ReadLock` and `WriteLock` (Debian's python3-kazoo) as an interop peer: see PythonPeer. It prints
 * `waiting <session hex>` before a blocking acquire, `acquired <node name> <session hex>` and `contenders <json list of
 * identifiers>` once it holds (or `busy`), and after its gate `contenders-at-release <json>`, then `released`.
 */
const PEER = String.raw`
import json, os, sys, time
from kazoo.client import KazooClient
gate, hosts, path, kind, mode, ident, timeout = sys.argv[1:8]
zk = KazooClient(hosts=hosts, timeout=float(timeout))
zk.start(timeout=15)
def say(*words):
    print(*words, flush=True)
lock = {'lock': zk.Lock, 'read': zk.ReadLock, 'write': zk.WriteLock}[kind](path, ident)
session = '%x' % zk.client_id[0]
if mode == 'try':
    ok = lock.acquire(blocking=False)
else:
    say('waiting', session)
    ok = lock.acquire(blocking=True, timeout=60)
if not ok:
    say('busy')
    sys.exit(0)
say('acquired', lock.node, session)
say('contenders', json.dumps(lock.contenders()))
while not os.path.exists(gate):
    time.sleep(0.02)
say('contenders-at-release', json.dumps(lock.contenders()))
lock.release()
say('released')
zk.stop()
`;

export type KazooKind = 'lock' | 'read' | 'write';

export class KazooLock extends PythonPeer {
  /** `hosts`: kazoo's `host:port[,…][/chroot]`; `sessionSeconds`: kazoo's session timeout. */
  constructor(hosts: string, path: string, options: { kind?: KazooKind; mode?: 'hold' | 'try'; identifier?: string; sessionSeconds?: number } = {}) {
    super('kazoo', PEER, [hosts, path, options.kind ?? 'lock', options.mode ?? 'hold', options.identifier ?? 'kazoo-peer', String(options.sessionSeconds ?? 4)]);
  }

  /** The identifiers kazoo's `contenders()` listed when it acquired (or, `atRelease`, when told to release), in its order. */
  async contenders(atRelease = false): Promise<string[]> {
    const word = atRelease ? 'contenders-at-release' : 'contenders';
    return JSON.parse((await this.until([word])).slice(word.length + 1)) as string[];
  }
}

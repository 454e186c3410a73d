import { PythonPeer } from './pythonPeer';

/**
 * python-etcd3's own `Lock` (Debian's python3-etcd3) as an interop peer: see PythonPeer. Its key is `/locks/<name>`,
 * one key put with a lease of its own if it was never created. It prints `waiting` when a blocking acquire has to wait,
 * `acquired <lease hex>` once it holds (a `try` prints `busy` instead when the key is held), and after its gate
 * `released <true|false>` (whether the key was still its own).
 *
 * Debian pairs python3-etcd3 0.12 with a newer tenacity, under which `acquire` with a timeout fails with a TypeError as
 * soon as it has to wait (its wait callback has tenacity's old signature). The blocking acquire is therefore
 * python-etcd3's own one-attempt acquire (`timeout=0`: the transaction on `create_revision == 0`) in the loop
 * `acquire` runs, waiting on `watch_once` of the key between attempts as its wait callback does; the watch's timeout
 * covers a delete that came between the try and the watch.
 */
const PEER = String.raw`
import os, sys, time, etcd3
gate, endpoint, name, mode, ttl = sys.argv[1:6]
host, port = endpoint.rsplit(':', 1)
client = etcd3.client(host=host, port=int(port))
lock = client.lock(name, ttl=int(ttl))
def say(*words):
    print(*words, flush=True)
ok = lock.acquire(timeout=0)
if mode != 'try' and not ok:
    say('waiting')
    while not ok:
        try:
            client.watch_once(lock.key, timeout=1)
        except etcd3.exceptions.WatchTimedOut:
            pass
        ok = lock.acquire(timeout=0)
if not ok:
    say('busy')
    sys.exit(0)
say('acquired', '%x' % lock.lease.id)
while not os.path.exists(gate):
    time.sleep(0.02)
say('released', str(lock.release()).lower())
`;

export class PythonEtcd3Lock extends PythonPeer {
  /** `endpoint`: host:port; `mode`: wait for the key (`hold`) or give up at once (`try`); `ttl`: its lease's seconds. */
  constructor(endpoint: string, name: string, mode: 'hold' | 'try' = 'hold', ttl = 30) {
    super('python-etcd3', PEER, [endpoint, name, mode, String(ttl)]);
  }
}

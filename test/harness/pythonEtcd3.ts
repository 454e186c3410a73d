import { PythonPeer } from './pythonPeer';

/**
 * python-etcd3's own `Lock` (Debian's python3-etcd3) as an interop peer: see PythonPeer. Its key is `/locks/<name>`,
 * one key put with a lease of its own if it was never created. It prints `waiting` when a blocking acquire has to wait,
 * `acquired` once it holds (or `busy`), and after its gate `released` (or `release-failed` if the key was not its own).
 *
 * Debian pairs python3-etcd3 0.12 with a newer tenacity, under which `acquire` with a timeout fails with a TypeError as
 * soon as it has to wait (its wait callback has tenacity's old signature). The blocking acquire is therefore
 * python-etcd3's own one-attempt acquire (`timeout=0`: the transaction on `create_revision == 0`) in the loop
 * `acquire` runs, waiting on `watch_once` of the key between attempts as its wait callback does.
 */
const PEER = String.raw`
import os, sys, time, etcd3
gate, host, port, name, mode = sys.argv[1:6]
client = etcd3.client(host=host, port=int(port))
lock = client.lock(name, ttl=30)
def say(*words):
    print(*words, flush=True)
ok = lock.acquire(timeout=0)
if mode != 'try' and not ok:
    say('waiting')
    deadline = time.time() + 60
    while not ok and time.time() < deadline:
        try:
            client.watch_once(lock.key, timeout=1)
        except etcd3.exceptions.WatchTimedOut:
            pass
        ok = lock.acquire(timeout=0)
if not ok:
    say('busy')
    sys.exit(0)
say('acquired')
while not os.path.exists(gate):
    time.sleep(0.02)
say('released' if lock.release() else 'release-failed')
`;

export class PythonEtcd3Lock extends PythonPeer {
  /** `endpoint`: etcd's `http://host:port`; `name`: the Lock's name, whose key is `/locks/<name>`. */
  constructor(endpoint: string, name: string, mode: 'hold' | 'try') {
    const { hostname, port } = new URL(endpoint);
    super('python-etcd3', PEER, [hostname, port, name, mode]);
  }
}

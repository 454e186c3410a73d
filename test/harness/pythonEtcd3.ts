import { PythonPeer } from './pythonPeer';

/**
 * python-etcd3's own `Lock` (Debian's python3-etcd3) as an interop peer: see PythonPeer. Its key is `/locks/<name>`
 * with a lease. It prints `waiting` before a blocking acquire (it waits for the key's delete, without a timeout),
 * `acquired <lease hex>` once it holds, and after its gate `released <true|false>` (whether its key was still its own).
 */
const PEER = String.raw`
import os, sys, time
import etcd3
gate, endpoint, name, ttl = sys.argv[1:5]
host, port = endpoint.rsplit(':', 1)
client = etcd3.client(host=host, port=int(port))
lock = client.lock(name, ttl=int(ttl))
print('waiting', flush=True)
# A held key: python-etcd3 watches it for a change and tries again. Its own waiting (timeout > 0) fails on Debian,
# whose tenacity calls the wait function with one argument (TypeError), so this loop does the same wait itself; the
# watch's timeout covers a delete that came between the try and the watch, as python-etcd3's does.
while not lock.acquire(timeout=0):
    try:
        client.watch_once(lock.key, timeout=1)
    except etcd3.exceptions.WatchTimedOut:
        pass
print('acquired', '%x' % lock.lease.id, flush=True)
while not os.path.exists(gate):
    time.sleep(0.02)
print('released', str(lock.release()).lower(), flush=True)
`;

export class PythonEtcd3Lock extends PythonPeer {
  /** `endpoint`: host:port; `ttl`: its lease's seconds. */
  constructor(endpoint: string, name: string, ttl = 10) {
    super('python-etcd3', PEER, [endpoint, name, String(ttl)]);
  }
}

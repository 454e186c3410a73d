import { PythonPeer } from './pythonPeer';

/**
 * redis-py's own `redis.lock.Lock` (Debian's python3-redis) as an interop peer: see PythonPeer. It prints `waiting`,
 * `acquired <token>` or `busy`, and after its gate `released` (or `release-failed` if its lock was gone).
 */
const PEER = String.raw`
import os, sys, time, redis, redis.cluster
gate, url, name, mode, timeout = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
r = redis.cluster.RedisCluster.from_url(url) if sys.argv[6:] == ['cluster'] else redis.Redis.from_url(url)
lock = r.lock(name, timeout=(float(timeout) if timeout != 'none' else None), sleep=0.05)
def say(*words):
    print(*words, flush=True)
if mode == 'try':
    ok = lock.acquire(blocking=False)
else:
    say('waiting')
    ok = lock.acquire(blocking=True, blocking_timeout=60)
if not ok:
    say('busy')
    sys.exit(0)
say('acquired', lock.local.token.decode())
while not os.path.exists(gate):
    time.sleep(0.02)
try:
    lock.release()
    say('released')
except Exception as e:
    say('release-failed', type(e).__name__)
`;

export class RedisPyLock extends PythonPeer {
  /** `cluster`: through redis-py's RedisCluster (redis.cluster), url being any node of the cluster. */
  constructor(url: string, name: string, mode: 'hold' | 'try', timeoutSeconds: number | null, cluster = false) {
    super('redis-py', PEER, [url, name, mode, timeoutSeconds === null ? 'none' : String(timeoutSeconds), ...(cluster ? ['cluster'] : [])]);
  }
}

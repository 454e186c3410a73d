import { PythonPeer } from '../../harness/pythonPeer';

/**
 * One kazoo session that takes two locks in order, as a service that nests them does: it prints `holds <node>
 * <session hex>` once it holds the first, waits for its gate (so that a test lines two sessions up before either
 * blocks), prints `waiting`, blocks in the second lock's queue, and prints `holds-both` once it holds that too. It
 * keeps both until it is disposed.
 */
const PEER = String.raw`
import os, sys, time
from kazoo.client import KazooClient
gate, hosts, first, second, ident = sys.argv[1:6]
zk = KazooClient(hosts=hosts, timeout=10.0)
zk.start(timeout=15)
session = '%x' % zk.client_id[0]
a = zk.Lock(first, ident)
a.acquire(blocking=True, timeout=60)
print('holds', a.node, session, flush=True)
while not os.path.exists(gate):
    time.sleep(0.02)
print('waiting', flush=True)
b = zk.Lock(second, ident)
if b.acquire(blocking=True, timeout=120):
    print('holds-both', flush=True)
while True:
    time.sleep(1)
`;

export class KazooPair extends PythonPeer {
  constructor(hosts: string, first: string, second: string, identifier: string) {
    super('kazoo pair', PEER, [hosts, first, second, identifier]);
  }

  /** Holds the first lock: its session (hex). */
  async holdsFirst(): Promise<string> {
    return (await this.until(['holds'])).split(' ')[2];
  }

  /** Lets it block in the second lock's queue. */
  waitForSecond(): void {
    this.release();
  }
}

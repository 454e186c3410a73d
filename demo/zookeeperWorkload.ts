import { sleep } from '../src/core/sleep';
import { PythonServices, type PythonServicesOptions, type ReportLevel } from './pythonServices';

/**
 * The demo's ZooKeeper services: real kazoo clients (Debian's python3-kazoo for /usr/bin/python3), each with a session
 * of its own, under /app/locks (see docs: lock-backends.md, ZooKeeper):
 *
 * - `/app/locks/nightly-report`: three kazoo `Lock` processes (`report-a/b/c`), blocking acquire, hold 1-3 s,
 *   release, again: `<uuid hex>__lock__<seq>` nodes, the identifier as data;
 * - `/app/locks/ledger-migration`: the incident: a node in Curator's InterProcessMutex layout (`_c_<uuid>-lock-<seq>`,
 *   the host's IP as data, as Curator writes it), taken by a service that then hangs: its client keeps the session
 *   alive but it never releases. Behind it waits `ledger-standby`, a kazoo `Lock` told to count Curator's nodes
 *   (kazoo's `extra_lock_patterns`, as kazoo documents for sharing a lock with another library); it takes the lock
 *   when the stuck node is force-released, and holds it 3-6 s at a time from then on. ZooKeeper tells the stuck
 *   service nothing: the demo watches its node only to bring the incident back 30 s later;
 * - `/app/locks/catalog`: kazoo's `ReadLock` and `WriteLock`: two readers that overlap and a writer that waits for
 *   both (one process with a session per contender: three threads cost less than three more processes).
 * - `/app/locks/export-slots`: a kazoo `Semaphore` of 2 permits and 4 exporters (threads of one process, a session
 *   each): two hold a permit, the others wait in its Lock (`export-slots-__lock__`), in turn.
 */

export const ZOOKEEPER_PREFIX = '/app';
export const ZOOKEEPER_LOCKS = {
  report: '/app/locks/nightly-report',
  stuck: '/app/locks/ledger-migration',
  catalog: '/app/locks/catalog',
  slots: '/app/locks/export-slots',
} as const;

/** How many permits the export slots have, and how many exporters contend for them. */
const SLOTS = { permits: 2, exporters: 4 };

/** The modes of every kazoo peer (see PythonServices): `zookeeper-peers.py MODE URL ARGS…`. */
const MODES = String.raw`
import contextlib, random, re, socket, threading, time, uuid
from kazoo.client import KazooClient

# kazoo takes the URL's host:port[,host:port…][/chroot] as it is.
HOSTS = url[len('zookeeper://'):]
# Contenders of a lock in kazoo's layout and in Curator's, as the stuck service and its standby both count them.
CONTENDER = re.compile(r'(?:-lock-|__lock__)(-?\d{10})$')

def connect(timeout=10):
    zk = KazooClient(hosts=HOSTS, timeout=timeout)
    zk.start(timeout=15)
    return zk

@contextlib.contextmanager
def session(timeout=10):
    # Closed on the way out (SIGTERM included), so that its nodes go at once rather than when the session times out.
    zk = connect(timeout)
    try:
        yield zk
    finally:
        zk.stop()

def session_of(zk):
    return '%x' % zk.client_id[0]

def wait_for(event):
    # In slices, so that SIGTERM's handler runs promptly.
    while not event.wait(1):
        pass

def take_turns(lock, hold, pause, take=None):
    # A service's life with a lock: take it (waiting its turn), hold it a while, release it, pause, again.
    while True:
        if take:
            take()
        else:
            lock.acquire()
            say('debug', 'holds %s' % lock.node)
        time.sleep(random.uniform(*hold))
        lock.release()
        say('debug', 'released %s' % lock.path)
        time.sleep(random.uniform(*pause))

def contend(path, who):
    with session() as zk:
        take_turns(zk.Lock(path, who), (1, 3), (0.2, 1.0))

def local_ip():
    # What Curator writes as a contender's data: the host's address.
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return '127.0.0.1'

def stuck(path):
    # The shortest session the server grants (2 ticks): were the process gone, its node would go within 4 s; it stays
    # because the client keeps answering for the session.
    with session(timeout=4) as zk:
        while True:
            node = zk.create('%s/_c_%s-lock-' % (path, uuid.uuid4()), local_ip().encode(), ephemeral=True, sequence=True, makepath=True)
            name = node.rsplit('/', 1)[1]
            # Curator's wait: the lowest sequence holds; a contender watches only the node just ahead of it.
            while True:
                contenders = sorted((m.group(1), c) for c in zk.get_children(path) for m in [CONTENDER.search(c)] if m)
                names = [c for _, c in contenders]
                index = names.index(name)
                if index == 0:
                    break
                gone = threading.Event()
                if zk.exists('%s/%s' % (path, names[index - 1]), watch=lambda _: gone.set()):
                    wait_for(gone)
            say('ready', 'holds %s %s %d' % (node, session_of(zk), zk.exists(node).czxid))
            # Stuck: nothing here releases; kazoo's client keeps the session alive on its own.
            while True:
                changed = threading.Event()
                if not zk.exists(node, watch=lambda _: changed.set()):
                    break
                wait_for(changed)
            say('info', 'its node %s was deleted (force-released); it hangs holding %s again in 30 s' % (name, path))
            time.sleep(30)

def standby(path, who):
    with session() as zk:
        lock = zk.Lock(path, who, extra_lock_patterns=['-lock-'])
        def take():
            # Said when it has to wait: a take after waiting is the news (the holder ahead went); one on a free lock
            # is routine.
            if lock.acquire(blocking=False):
                say('debug', 'took %s as %s' % (path, lock.node))
                return
            say('ready', 'waiting for %s as session %s' % (path, session_of(zk)))
            lock.acquire()
            say('info', 'took %s as %s once the holder ahead had gone' % (path, lock.node))
        take_turns(lock, (3, 6), (1, 2), take)

def in_threads(what, contenders):
    # Each contender runs on a session of its own, in a thread: cheaper than a process each.
    clients = []
    def run(contender):
        zk = connect()
        clients.append(zk)
        contender(zk)
    threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in contenders]
    for t in threads:
        t.start()
    try:
        while all(t.is_alive() for t in threads):
            time.sleep(0.5)
        raise RuntimeError('a %s contender failed' % what)
    finally:
        for zk in clients:
            zk.stop()

def catalog(path):
    def contender(make, who, hold):
        return lambda zk: take_turns(make(zk)(path, who), hold, (0.5, 2))
    in_threads('catalog', [contender(lambda zk: zk.ReadLock, 'catalog-reader-1', (2, 5)), contender(lambda zk: zk.ReadLock, 'catalog-reader-2', (2, 5)), contender(lambda zk: zk.WriteLock, 'catalog-writer', (1, 2))])

def slots(path, permits, exporters):
    def exporter(who):
        def run(zk):
            semaphore = zk.Semaphore(path, who, max_leases=int(permits))
            take_turns(semaphore, (2, 5), (0.3, 1.5), semaphore.acquire)
        return run
    in_threads('export-slots', [exporter('exporter-%d' % i) for i in range(1, int(exporters) + 1)])

MODES = {'contend': contend, 'stuck': stuck, 'standby': standby, 'catalog': catalog, 'slots': slots}
`;

/** The stuck holder's node in Curator's layout, its session and its fencing token (czxid). */
export interface StuckNode {
  readonly node: string;
  readonly session: string;
  readonly token: number;
}

export class ZooKeeperWorkload extends PythonServices {
  /** The stuck holder while it holds. */
  stuck?: StuckNode;
  private standbyWaiting = false;
  private readyChanged?: () => void;

  /** `url`: zookeeper://127.0.0.1:PORT */
  constructor(options: PythonServicesOptions) {
    super(options, 'zookeeper-peers.py', MODES);
  }

  /** Starts every service; resolves once the stuck holder holds and its standby waits behind it. */
  async start(): Promise<void> {
    const stuckHeld = new Promise<void>((resolve) => (this.readyChanged = () => this.stuck && resolve()));
    this.run('ledger-migration', () => this.peer('ledger-migration', ['stuck', ZOOKEEPER_LOCKS.stuck], (level, message) => this.onStuckReport(level, message)));
    for (const who of ['report-a', 'report-b', 'report-c']) this.run(who, () => this.peer(who, ['contend', ZOOKEEPER_LOCKS.report, who]));
    this.run('catalog', () => this.peer('catalog', ['catalog', ZOOKEEPER_LOCKS.catalog]));
    this.run('export-slots', () => this.peer('export-slots', ['slots', ZOOKEEPER_LOCKS.slots, String(SLOTS.permits), String(SLOTS.exporters)]));
    await Promise.race([stuckHeld, sleep(20_000, this.abort.signal)]);
    if (this.stopping) return;
    if (!this.stuck) throw new Error(`the ZooKeeper workload did not take ${ZOOKEEPER_LOCKS.stuck} within 20 s`);

    // The standby queues only once the stuck service holds: it is the waiter behind the incident, not its cause.
    const standbyQueued = new Promise<void>((resolve) => (this.readyChanged = () => this.standbyWaiting && resolve()));
    this.run('ledger-standby', () =>
      this.peer('ledger-standby', ['standby', ZOOKEEPER_LOCKS.stuck, 'ledger-standby'], (level, message) => {
        this.log('ledger-standby', message, level === 'debug' || level === 'ready');
        if (level === 'ready') {
          this.standbyWaiting = true;
          this.readyChanged?.();
        }
      }),
    );
    await Promise.race([standbyQueued, sleep(20_000, this.abort.signal)]);
    if (!this.stopping && !this.standbyWaiting) throw new Error(`the ZooKeeper workload's standby did not queue for ${ZOOKEEPER_LOCKS.stuck} within 20 s`);
  }

  private onStuckReport(level: ReportLevel, message: string): void {
    const who = 'ledger-migration';
    const held = /^holds (\S+) ([0-9a-f]+) (\d+)$/.exec(message);
    if (level !== 'ready' || !held) {
      if (/was deleted/.test(message)) this.stuck = undefined;
      this.log(who, message);
      return;
    }
    this.stuck = { node: held[1], session: held[2], token: Number(held[3]) };
    this.log(who, `holds ${ZOOKEEPER_LOCKS.stuck} in Curator's layout (${held[1]}, session ${held[2]}, token ${held[3]}) and will never release it: force-release it`);
    this.readyChanged?.();
  }
}

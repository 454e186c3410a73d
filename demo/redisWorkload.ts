import { sleep } from '../src/core/sleep';
import { PythonServices, type PythonServicesOptions } from './pythonServices';

/**
 * The demo's Redis services: real clients (redis-py, Debian's python3-redis for /usr/bin/python3) writing the layouts
 * that real libraries write, under the key prefix `app:` (see docs: lock-backends.md):
 *
 * - `app:billing-lock`: a Redisson `RLock`, re-entrant: two services (`billing-worker-1`, `billing-worker-2`) run
 *   Redisson's own lock Lua twice (hold count 2) with a field `<client uuid>:<thread id>`, renew it every 10 s with
 *   `PEXPIRE 30000` like Redisson's watchdog, and release it (decrement twice; at 0 `DEL` and `PUBLISH 0` on
 *   `redisson_lock__channel:{app:billing-lock}`) after 10-25 s. The other waits on that channel (Redisson keeps no
 *   waiters in the store) and takes it next;
 * - `app:report-fair-lock`: a Redisson `RFairLock` held by one field, with two waiters in
 *   `redisson_lock_queue:{app:report-fair-lock}` (the LIST, FIFO) and their deadlines (epoch ms, now + 5 min and on,
 *   refreshed) in `redisson_lock_timeout:{app:report-fair-lock}` (the ZSET). Force-released, the head of the queue
 *   takes it and a new waiter joins the tail;
 * - `app:export-job`: three redis-py `redis.lock.Lock(r, 'app:export-job', timeout=8)` processes (`export-a/b/c`),
 *   blocking acquire, hold 1-3 s, release (a STRING = `uuid1().hex` set with `SET NX PX 8000`);
 * - `app:sync-invoices`: a TTL too short for the work: two redis-py `Lock(r, 'app:sync-invoices', timeout=8)` processes
 *   (`invoice-sync-1/2`, no renewal) whose job takes 9-12 s, so each hold expires while it still works and the other
 *   gets in; their release then fails (redis-py's LockNotOwnedError). LockLens's TTL fit flags it once it has
 *   measured a hold from start to end;
 * - `app:stuck-migration`: the incident: a redis-py token (`uuid1().hex`) set with `SET NX` and no expiry by a
 *   process that then exits, so it is held forever. Once someone force-releases it, it comes back 30 s later;
 * - `semaphore:app:thumbnails` (under a prefix of its own, `semaphore:app:`, as npm redis-semaphore names a
 *   `Semaphore(client, 'app:thumbnails', 3)`): five workers (`thumbnailer-1..5`) contending for 3 permits with
 *   redis-semaphore's own acquire and refresh Lua, each a random identifier in the sorted set scored by its last
 *   refresh (every 8 s of its 10 s lockTimeout), holding 4-12 s, then `ZREM`; the two left over poll every 100 ms.
 */

export const REDIS_PREFIX = 'app:';
/** Where redis-semaphore keeps the demo's semaphores (`semaphore:` + their key), watched beside REDIS_PREFIX. */
export const REDIS_SEMAPHORE_PREFIX = 'semaphore:app:';
export const REDIS_LOCKS = {
  billing: 'app:billing-lock',
  report: 'app:report-fair-lock',
  export: 'app:export-job',
  stuck: 'app:stuck-migration',
  shortTtl: 'app:sync-invoices',
  thumbnails: 'semaphore:app:thumbnails',
} as const;
/** The thumbnail semaphore's limit, which every one of its clients states (Acquire Lock asks for it). */
export const THUMBNAIL_PERMITS = 3;
/** The Redisson fair lock's waiter queue and deadlines (they are outside the prefix's lock names but under `redisson_lock_`). */
export const REDISSON_KEYS = {
  channel: `redisson_lock__channel:{${REDIS_LOCKS.billing}}`,
  queue: `redisson_lock_queue:{${REDIS_LOCKS.report}}`,
  timeout: `redisson_lock_timeout:{${REDIS_LOCKS.report}}`,
} as const;

/** The modes of every Redis peer (see PythonServices): `redis-peers.py MODE URL ARGS…`. */
const MODES = String.raw`
import random, time, uuid
import redis
from redis.exceptions import LockError

r = redis.Redis.from_url(url, decode_responses=True)

def redisson_field():
    # Redisson's lock entry: <the client's UUID>:<the Java thread id>.
    return '%s:%d' % (uuid.uuid4(), random.randint(30, 200))

# Redisson 3.x RedissonLock / RedissonBaseLock, verbatim.
LOCK = "if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
RENEW = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;"
UNLOCK = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;"
LEASE_MS = 30000
WATCHDOG_S = 10

def redisson(name, who):
    field = redisson_field()
    channel = 'redisson_lock__channel:{%s}' % name
    sub = r.pubsub(ignore_subscribe_messages=True)
    sub.subscribe(channel)

    def lock():
        while True:
            ttl = r.eval(LOCK, 1, name, LEASE_MS, field)
            if ttl is None:
                return
            # Held by another: wait for its unlock message (or its expiry), then try again.
            deadline = time.time() + max(ttl, 100) / 1000.0
            while time.time() < deadline:
                if sub.get_message(timeout=min(1.0, max(0.01, deadline - time.time()))):
                    break

    while True:
        lock()
        lock()  # re-entrant: the same thread takes it again (an outer and an inner call): hold count 2
        say('debug', 'holds %s twice as %s' % (name, field))
        end = time.time() + random.uniform(10, 25)
        renew = time.time() + WATCHDOG_S
        lost = False
        while time.time() < end and not lost:
            time.sleep(0.2)
            if time.time() >= renew:
                renew += WATCHDOG_S
                lost = r.eval(RENEW, 1, name, LEASE_MS, field) == 0
            elif not r.hexists(name, field):
                lost = True
        if lost:
            say('info', 'lost %s while holding it (force-released?); takes it again when it can' % name)
        else:
            r.eval(UNLOCK, 2, name, channel, 0, LEASE_MS, field)
            r.eval(UNLOCK, 2, name, channel, 0, LEASE_MS, field)
            say('debug', 'released %s' % name)
        time.sleep(random.uniform(2, 5))

WAIT_MS = 5 * 60 * 1000

def fair(name):
    queue = 'redisson_lock_queue:{%s}' % name
    timeouts = 'redisson_lock_timeout:{%s}' % name
    holder = redisson_field()
    waiters = [redisson_field(), redisson_field()]
    p = r.pipeline()
    p.delete(name, queue, timeouts)
    p.hset(name, holder, 1)
    p.pexpire(name, LEASE_MS)
    p.rpush(queue, *waiters)
    p.execute()

    def refresh():
        # As RedissonFairLock computes them: the first waiter's deadline is the holder's ttl + 5 min from now, each
        # next one 5 min after the one ahead.
        now = int(time.time() * 1000)
        ttl = max(r.pttl(name), 0)
        deadline = now + ttl + WAIT_MS
        p = r.pipeline()
        if r.hexists(name, holder):
            p.pexpire(name, LEASE_MS)
        for w in r.lrange(queue, 0, -1):
            p.zadd(timeouts, {w: deadline})
            deadline += WAIT_MS
        p.execute()

    refresh()
    say('ready', '%s held by %s, waiting: %s' % (name, holder, ', '.join(waiters)))
    renew = time.time() + WATCHDOG_S
    while True:
        time.sleep(0.5)
        if not r.hexists(name, holder):
            # Force-released (or expired): the head of the queue takes it, and a new waiter joins the tail.
            head = r.lpop(queue) or redisson_field()
            holder = head
            newcomer = redisson_field()
            p = r.pipeline()
            p.zrem(timeouts, head)
            p.hset(name, holder, 1)
            p.pexpire(name, LEASE_MS)
            p.rpush(queue, newcomer)
            p.execute()
            refresh()
            say('info', '%s: %s took it from the head of the queue; %s queued behind' % (name, holder, newcomer))
            renew = time.time() + WATCHDOG_S
        elif time.time() >= renew:
            renew += WATCHDOG_S
            refresh()

def token(name, who, job=(1, 3), pause=(0.2, 1.0), timeout=8):
    lock = redis.Redis.from_url(url).lock(name, timeout=timeout, sleep=0.1)
    while True:
        lock.acquire(blocking=True)
        say('debug', 'holds %s with token %s for a job of %d-%d s (timeout %d s)' % (name, lock.local.token.decode(), job[0], job[1], timeout))
        time.sleep(random.uniform(*job))
        try:
            lock.release()
            say('debug', 'released %s' % name)
        except LockError as e:
            # A job longer than the timeout finds its lock expired, and maybe taken by another.
            say('info' if job[1] < timeout else 'debug', 'lost %s while holding it: %s' % (name, e))
        time.sleep(random.uniform(*pause))

def short_ttl(name, who):
    # redis-py's Lock with a timeout picked once, for a job that has since grown past it, and nothing extending it.
    token(name, who, job=(9, 12), pause=(0.5, 2.0))

def stuck(name):
    # What a crashed redis-py job leaves: Lock(r, name) with no timeout, acquired, never released.
    value = uuid.uuid1().hex
    if r.set(name, value, nx=True):
        say('ready', 'set %s' % value)
    else:
        say('ready', 'kept %s' % r.get(name))

def wait_gone(name, value):
    while r.get(name) == value:
        time.sleep(1)

# npm redis-semaphore 5.8's Semaphore: its acquire and refresh Lua, verbatim (semaphore/acquire/lua.js, refresh/lua.js),
# which differ only in the test before the hold.
SEM_BEGIN = '''
  local key = KEYS[1]
  local limit = tonumber(ARGV[1])
  local identifier = ARGV[2]
  local lockTimeout = tonumber(ARGV[3])
  local now = tonumber(ARGV[4])
  local expiredTimestamp = now - lockTimeout

  redis.call('zremrangebyscore', key, '-inf', expiredTimestamp)
'''
SEM_HOLD = '''
    redis.call('zadd', key, now, identifier)
    redis.call('pexpire', key, lockTimeout)
    return 1
  else
    return 0
  end'''
SEM_ACQUIRE = SEM_BEGIN + '''
  if redis.call('zcard', key) < limit then''' + SEM_HOLD
SEM_REFRESH = SEM_BEGIN + '''
  if redis.call('zscore', key, identifier) then''' + SEM_HOLD
LOCK_TIMEOUT_MS = 10000

def semaphore(key, who, limit):
    # redis-semaphore's defaults: a random UUID identifier, retry every few ms (here 100), refresh at 80% of lockTimeout.
    limit = int(limit)
    ms = lambda: int(time.time() * 1000)
    while True:
        ident = str(uuid.uuid4())
        while r.eval(SEM_ACQUIRE, 1, key, limit, ident, LOCK_TIMEOUT_MS, ms()) != 1:
            time.sleep(0.1)
        say('debug', 'holds a permit of %s as %s' % (key, ident))
        end = time.time() + random.uniform(4, 12)
        while time.time() < end:
            time.sleep(min(LOCK_TIMEOUT_MS * 0.8 / 1000, end - time.time()))
            if time.time() < end and r.eval(SEM_REFRESH, 1, key, limit, ident, LOCK_TIMEOUT_MS, ms()) != 1:
                say('info', 'lost its permit of %s' % key)
                break
        r.zrem(key, ident)
        time.sleep(random.uniform(0.2, 1.0))

MODES = {'redisson': redisson, 'fair': fair, 'token': token, 'short-ttl': short_ttl, 'stuck': stuck, 'wait-gone': wait_gone, 'semaphore': semaphore}
`;

export class RedisWorkload extends PythonServices {
  /** The stuck token of `app:stuck-migration` while it is there. */
  stuckToken?: string;
  /** The fair lock's holder and waiters as first written. */
  fairReady?: string;
  private readyChanged?: () => void;

  /** `url`: redis://127.0.0.1:PORT */
  constructor(options: PythonServicesOptions) {
    super(options, 'redis-peers.py', MODES);
  }

  /** Starts every service; resolves once the stuck token and the fair lock's queue are in place. */
  async start(): Promise<void> {
    const ready = new Promise<void>((resolve) => (this.readyChanged = () => this.stuckToken && this.fairReady && resolve()));
    this.run('migration-job', () => this.stuck());
    this.run('report-fair', () =>
      this.peer('report-fair', ['fair', REDIS_LOCKS.report], (level, message) => {
        this.log('report-fair', message, level === 'debug' || level === 'ready');
        if (level === 'ready') {
          this.fairReady = message;
          this.readyChanged?.();
        }
      }),
    );
    for (const who of ['billing-worker-1', 'billing-worker-2']) this.run(who, () => this.peer(who, ['redisson', REDIS_LOCKS.billing, who]));
    for (const who of ['export-a', 'export-b', 'export-c']) this.run(who, () => this.peer(who, ['token', REDIS_LOCKS.export, who]));
    for (const who of ['invoice-sync-1', 'invoice-sync-2']) this.run(who, () => this.peer(who, ['short-ttl', REDIS_LOCKS.shortTtl, who]));
    for (let i = 1; i <= 5; i++) this.run(`thumbnailer-${i}`, () => this.peer(`thumbnailer-${i}`, ['semaphore', REDIS_LOCKS.thumbnails, `thumbnailer-${i}`, String(THUMBNAIL_PERMITS)]));
    await Promise.race([ready, sleep(20_000, this.abort.signal)]);
    if (!this.stopping && !(this.stuckToken && this.fairReady)) {
      throw new Error(`the Redis workload did not set up ${!this.stuckToken ? REDIS_LOCKS.stuck : REDIS_LOCKS.report} within 20 s`);
    }
  }

  /** The incident: a token set with no expiry by a process that exits; once it is force-released, back in 30 s. */
  private async stuck(): Promise<void> {
    const who = 'migration-job';
    let value: string | undefined;
    await this.runPeer(who, ['stuck', REDIS_LOCKS.stuck], (level, message) => {
      const m = /^(?:set|kept) ([0-9a-f]+)$/.exec(message);
      if (level === 'ready' && m) value = m[1];
      else this.log(who, message);
    });
    if (this.stopping) return;
    if (!value) throw new Error(`could not take ${REDIS_LOCKS.stuck}`);
    this.stuckToken = value;
    this.log(who, `holds ${REDIS_LOCKS.stuck} with token ${value}, no expiry, and has exited: force-release it`);
    this.readyChanged?.();
    // Waits (a small poller, not the holder: that one is gone) until someone removes it.
    await this.runPeer(`${who}-watch`, ['wait-gone', REDIS_LOCKS.stuck, value], (_, message) => this.log(who, message));
    if (this.stopping) return;
    this.stuckToken = undefined;
    this.log(who, `${REDIS_LOCKS.stuck} was released; the job crashes holding it again in 30 s`);
    await sleep(30_000, this.abort.signal);
  }
}

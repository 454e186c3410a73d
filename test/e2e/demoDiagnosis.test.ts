import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { demoConnections } from '../../demo/connections';
import { POSTGRES_LOCKS } from '../../demo/postgresWorkload';
import { REDIS_LOCKS } from '../../demo/redisWorkload';
import { TRANSFER_LOCKS } from '../../demo/transfers';
import type { ConnectionSettings } from '../../src/core/connectionSettings';
import { displayKey, keyId } from '../../src/core/keys';
import { lockHealth } from '../../src/core/lockHealth';
import { startDemo, type RunningDemo } from '../harness/demo';
import { DiagnosedWatch, type Findings } from '../harness/diagnosedWatch';
import { eventually, sleep } from '../harness/etcd';

/**
 * The demo's traffic (`npm run demo -- --no-editor --no-monitor`: etcd, Redis, ZooKeeper and PostgreSQL with all their
 * services) watched for a minute and diagnosed as VS Code diagnoses it (DiagnosedWatch), every few seconds: the one
 * deadlock the demo plants is found, and only it; the redis-py lock whose timeout is shorter than its jobs is flagged
 * by the TTL fit; and nothing else in the normal traffic is said to be a deadlock, a lock-order inversion, a TTL
 * too short, or a holder that is gone. The ShedLock job is a hold per run, never a long one; each permit of the
 * thumbnails semaphore taken is a hold of its own.
 */

const WATCH_MS = 60_000;
const SAMPLE_MS = 3000;
/** The demo's `locklens.longHoldSeconds` (demo/editor.ts). */
const DEMO_LONG_HOLD_MS = 60_000;
const SHEDLOCK_ID = keyId(Buffer.from(POSTGRES_LOCKS.shedlock));
const THUMBNAILS_ID = keyId(Buffer.from(REDIS_LOCKS.thumbnails));

/** Every finding seen at any sample, by connection, in words a failure can print. */
interface Seen {
  readonly deadlocks: Set<string>;
  readonly inversions: Set<string>;
  readonly ttlFits: Set<string>;
  readonly gone: Set<string>;
  readonly paused: Set<string>;
}

const seen = (): Seen => ({ deadlocks: new Set(), inversions: new Set(), ttlFits: new Set(), gone: new Set(), paused: new Set() });

function note(s: Seen, f: Findings): void {
  for (const c of f.deadlocks) s.deadlocks.add(c.members.map((m) => `${m.owner} holds ${m.holds.name}, waits in ${m.waitsIn.name}`).sort().join('; '));
  for (const i of f.inversions) s.inversions.add(i.locks.map((l) => l.name).sort().join(' & '));
  for (const t of f.ttlFits) s.ttlFits.add(`${t.lock.name}: ${t.text}`);
  for (const h of f.holders) {
    if (h.liveness.state === 'gone') s.gone.add(`${h.lock} (${h.owner}): ${h.liveness.evidence}`);
    if (h.liveness.state === 'paused') s.paused.add(h.lock);
  }
}

describe('the demo\'s traffic, diagnosed for a minute as VS Code diagnoses it', { timeout: 5 * 60_000 }, () => {
  let demo: RunningDemo;
  const watched: DiagnosedWatch[] = [];
  const found = new Map<string, Seen>();
  /** What the last sample said, by connection. */
  const last = new Map<string, Findings>();
  /** The troubles the ShedLock job's holder had at any sample, at the demo's long-hold threshold. */
  const shedlockTroubles = new Set<string>();

  before(async () => {
    demo = await startDemo(['--no-editor', '--no-monitor']);
    const postgresUrl = /^\S+ postgres +(postgres:\/\/\S+)/m.exec(demo.proc.stdout)?.[1];
    const connections = demoConnections([demo.endpoint], demo.redisUrl, demo.zookeeperUrl, postgresUrl) as unknown as ConnectionSettings[];
    assert.equal(connections.length, 4, demo.proc.stdout);
    for (const c of connections) watched.push(await DiagnosedWatch.open(c));
    for (const w of watched) found.set(w.name, seen());
    for (const end = Date.now() + WATCH_MS; Date.now() < end; ) {
      await sleep(SAMPLE_MS);
      for (const w of watched) {
        last.set(w.name, w.findings());
        note(found.get(w.name)!, last.get(w.name)!);
        const job = w.watch.lock(SHEDLOCK_ID);
        if (job) for (const h of lockHealth(job, w.clock, (id) => w.watch.lease(id), { longHoldMs: DEMO_LONG_HOLD_MS })) h.troubles.forEach((t) => shedlockTroubles.add(t));
      }
    }
  });

  after(async () => {
    watched.forEach((w) => w.dispose());
    await demo?.dispose();
  });

  const all = (what: keyof Seen) => [...found].flatMap(([name, s]) => [...s[what]].map((x) => `${name}: ${x}`));

  test('the planted deadlock is found: the two transfer services, each holding one account and queued for the other', () => {
    const etcd = found.get('demo')!;
    assert.equal(etcd.deadlocks.size, 1, [...etcd.deadlocks].join('\n'));
    const [cycle] = etcd.deadlocks;
    assert.match(cycle, new RegExp(`^[0-9a-f]+ holds ${TRANSFER_LOCKS.alice}, waits in ${TRANSFER_LOCKS.bob}; [0-9a-f]+ holds ${TRANSFER_LOCKS.bob}, waits in ${TRANSFER_LOCKS.alice}$|^[0-9a-f]+ holds ${TRANSFER_LOCKS.bob}, waits in ${TRANSFER_LOCKS.alice}; [0-9a-f]+ holds ${TRANSFER_LOCKS.alice}, waits in ${TRANSFER_LOCKS.bob}$`));
  });

  test('no other deadlock, in any store', () => {
    assert.deepEqual(all('deadlocks').filter((d) => !d.startsWith('demo: ')), []);
  });

  test('no lock-order inversion but the deadlocked pair\'s own (told before the deadlock is confirmed)', () => {
    assert.deepEqual(all('inversions').filter((i) => i !== `demo: ${TRANSFER_LOCKS.alice} & ${TRANSFER_LOCKS.bob}`), []);
  });

  test('the TTL fit flags the redis-py lock whose jobs outlive its 8 s timeout, and still does at the end, and nothing else', () => {
    const fits = all('ttlFits');
    // Each handoff sets the key anew with a fresh TTL: that is no renewal, and must not clear the flag.
    assert.deepEqual(last.get('demo-redis')!.ttlFits.map((f) => [f.lock.name, f.level]), [[REDIS_LOCKS.shortTtl, 'exceeds']], fits.join('\n'));
    assert.ok(fits.some((f) => f.startsWith(`demo-redis: ${REDIS_LOCKS.shortTtl}: holds run up to `) && /expires after 8 s with nothing renewing it; \d+ of \d+ holds ran until it expired/.test(f)), fits.join('\n'));
    assert.deepEqual(fits.filter((f) => !f.startsWith(`demo-redis: ${REDIS_LOCKS.shortTtl}: `)), []);
  });

  test('the ShedLock job: a hold per run (30 s apart), none a long hold or an expired TTL', () => {
    const holds = watched.find((w) => w.name === 'demo-postgres')!.stats.holds('demo-postgres', SHEDLOCK_ID);
    assert.ok(new Set(holds.map((h) => h.key)).size >= 2, JSON.stringify(holds));
    assert.deepEqual([...shedlockTroubles], []);
  });

  test("the thumbnails semaphore: each permit holder's hold is its own, several at once, and those open are its holders'", async () => {
    const redis = watched.find((w) => w.name === 'demo-redis')!;
    // The lock is the model's now, the holds what the last change set told the statistics: change sets are told at
    // most once per coalescing interval, so a permit changing hands just before may be in one and not yet in the other
    // (seen once). With the demo's permits changing hands every second or so, the two agree between changes.
    const now = () => {
      const lock = redis.watch.lock(THUMBNAILS_ID);
      const holds = redis.stats.holds('demo-redis', THUMBNAILS_ID);
      const holders = lock?.holder ? [lock.holder, ...(lock.sharedWith ?? [])] : [];
      return { holds, open: holds.filter((h) => h.endedAt === null).map((h) => h.key).sort(), holders: holders.map((m) => displayKey(m.key)).sort() };
    };
    const agree = () => {
      const { open, holders } = now();
      return open.join() === holders.join();
    };
    // Given up on, the assertion below says what differs.
    await eventually(agree, 10_000, 'the open holds are the holders').catch(() => undefined);
    const { holds, open, holders } = now();
    assert.deepEqual(open, holders, JSON.stringify(holds));
    const overlap = holds.some((a, i) => holds.slice(i + 1).some((b) => b.acquiredAt < (a.endedAt ?? Infinity)));
    assert.ok(overlap, `permits held at once are holds at once: ${JSON.stringify(holds)}`);
  });

  test('no holder is said to be gone; the only one said paused is the short-TTL lock\'s, which nothing renews', () => {
    assert.deepEqual(all('gone'), []);
    assert.deepEqual(all('paused'), [`demo-redis: ${REDIS_LOCKS.shortTtl}`]);
  });
});

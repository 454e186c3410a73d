import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyJson } from '../../src/cli/commands/history';
import { EtcdConnection } from '../../src/core/etcd/connection';
import { EtcdHistory } from '../../src/core/etcd/history';
import { lockId } from '../../src/core/etcd/lockModel';
import { isLockLensError } from '../../src/core/errors';
import { show } from '../harness/cli';
import { fixture, HEX_KEY } from '../harness/cliFixture';
import { startRedis, type RedisServer } from '../harness/redis';

/**
 * `locklens history` and the etcd replay behind it, against a real etcd whose history real `etcdctl lock` processes
 * wrote. What ran when is proven by what the processes wrote, never by timing.
 */

interface HoldDoc {
  key: string;
  keyBase64?: string;
  lease: string;
  token: number;
  acquiredRevision: number;
  beforeHistory: boolean;
  endedRevision: number | null;
  end: string | null;
  waiters: string[];
}
interface HistoryDoc {
  lock: string;
  fromRevision: number;
  toRevision: number;
  compactedAt: number | null;
  holds: HoldDoc[];
}

const HOLD_KEYS = ['acquiredRevision', 'beforeHistory', 'end', 'endedRevision', 'key', 'lease', 'token', 'waiters'];
/** Waits for the file $1, then appends the lock's key and the revision etcdctl took it at to the file $2. */
const WAIT_THEN_RECORD = 'while [ ! -e "$1" ]; do sleep 0.05; done; echo "$ETCD_LOCK_KEY $ETCD_LOCK_REV" >> "$2"';

function historyFixture() {
  const f = fixture();
  return Object.assign(f, {
    async history(name: string, extra: string[] = []): Promise<HistoryDoc> {
      const r = await f.procs.run(['history', name, '--endpoints', f.ep, '--json', ...extra]);
      assert.equal(r.code, 0, show(r));
      assert.equal(r.stderr, '', show(r));
      return JSON.parse(r.stdout) as HistoryDoc;
    },
    async connect(namespace?: string): Promise<EtcdConnection> {
      const conn = await EtcdConnection.open({ endpoints: [f.ep], namespace });
      f.procs.defer(() => conn.close());
      return conn;
    },
    /** `etcdctl lock NAME` running WAIT_THEN_RECORD with `gate`, once its key is in etcd (holding or queued). */
    lockRecording(name: string, gate: string, record: string) {
      return f.etcdctlLock(name, ['sh', '-c', WAIT_THEN_RECORD, 'sh', gate, record]);
    },
    /** At every revision of `doc`, the replayed holder is the key a Go Mutex waits for: the lowest create revision. */
    async assertGoMutexOrder(doc: HistoryDoc, from = doc.fromRevision): Promise<void> {
      const conn = await this.connect();
      const prefix = `${doc.lock}/`;
      for (let revision = from; revision <= doc.toRevision; revision++) {
        const res = await conn.client.kv.range({
          key: Buffer.from(prefix), range_end: Buffer.from(`${doc.lock}0`), revision, sort_target: 'Create', sort_order: 'Ascend', limit: 1, keys_only: true,
        });
        assert.equal(holdAt(doc, revision)?.key ?? null, res.kvs[0]?.key.toString() ?? null, `the holder at revision ${revision}`);
      }
    },
  });
}

/** The hold holding at `revision`, by the replay. */
function holdAt(doc: HistoryDoc, revision: number): HoldDoc | undefined {
  return doc.holds.find((h) => h.acquiredRevision <= revision && (h.endedRevision === null || revision < h.endedRevision));
}

describe('locklens history: the acceptance case (three etcdctl lock runs that came and went)', () => {
  const f = historyFixture();

  test('every hold in acquisition order, with its key, lease, revisions, waiters and end; the holder at every revision is the Go Mutex one', async () => {
    const gate = join(f.dir, 'gate');
    const record = join(f.dir, 'record');
    const runs: Awaited<ReturnType<typeof f.lockRecording>>[] = [];
    // Each one queued before the next starts: start order is queue order.
    for (let i = 0; i < 3; i++) runs.push(await f.lockRecording('jobs', gate, record));
    const created = await Promise.all(runs.map((r) => f.createRevision(r.key)));
    writeFileSync(gate, '');
    for (const r of runs) assert.equal((await r.proc.wait()).code, 0, show(await r.proc.wait()));
    // The order they ran in, as each wrote it while holding the lock: the truth the replay must match.
    const ran = readFileSync(record, 'utf8').trim().split('\n').map((l) => l.split(' '));
    assert.deepEqual(ran.map(([key]) => key), runs.map((r) => r.key), 'etcdctl ran them in queue order');
    // etcdctl unlocks and exits, leaving its lease to run out (10 s): gone now, whenever the replay runs.
    for (const r of runs) await f.etcd.etcdctl(['lease', 'revoke', HEX_KEY('jobs').exec(r.key)![1]]);

    const doc = await f.history('jobs');
    assert.deepEqual(Object.keys(doc).sort(), ['compactedAt', 'fromRevision', 'holds', 'lock', 'toRevision']);
    assert.equal(doc.lock, 'jobs');
    assert.equal(doc.fromRevision, 1);
    assert.equal(doc.compactedAt, null);
    assert.equal(doc.holds.length, 3, JSON.stringify(doc, null, 2));
    doc.holds.forEach((h, i) => {
      assert.deepEqual(Object.keys(h).sort(), HOLD_KEYS, `hold ${i}: its fields`);
      assert.equal(h.key, runs[i].key, `hold ${i} is the ${i + 1}th run`);
      assert.equal(h.lease, HEX_KEY('jobs').exec(h.key)![1], `hold ${i}: the lease is the key's hex suffix`);
      assert.equal(h.token, created[i], `hold ${i}: the token is the key's create revision`);
      assert.equal(h.beforeHistory, false);
      assert.ok(h.endedRevision !== null && h.endedRevision > h.acquiredRevision, `hold ${i} ended after it began`);
      const lockRevision = Number(ran[i][1]);
      assert.ok(h.acquiredRevision <= lockRevision && lockRevision < h.endedRevision!, `hold ${i} holds at ETCD_LOCK_REV ${lockRevision}`);
      assert.equal(h.end, 'revokedOrExpired', `hold ${i}: its key went, and its lease since`);
    });
    assert.equal(doc.holds[0].acquiredRevision, created[0], 'the first took a free lock: held from its key’s creation');
    assert.deepEqual(doc.holds[0].waiters, [], 'no one waited yet when it took the lock');
    assert.equal(doc.holds[1].acquiredRevision, doc.holds[0].endedRevision, 'handed over at the revision the first key went');
    assert.deepEqual(doc.holds[1].waiters, [runs[2].key]);
    assert.equal(doc.holds[2].acquiredRevision, doc.holds[1].endedRevision);
    assert.deepEqual(doc.holds[2].waiters, []);
    assert.ok(doc.toRevision >= doc.holds[2].endedRevision!);

    await f.assertGoMutexOrder(doc);

    const text = await f.procs.run(['history', 'jobs', '--endpoints', f.ep]);
    assert.equal(text.code, 0, show(text));
    const lines = text.stdout.trim().split('\n');
    assert.equal(lines[0], `the queue jobs/…: revisions 1 to ${doc.toRevision} read, 3 holds`);
    doc.holds.forEach((h, i) => {
      assert.match(lines[i + 1], new RegExp(`^  ${h.key}  lease ${h.lease}  token ${h.token}  rev ${h.acquiredRevision} → ${h.endedRevision}  revoked or expired  ${h.waiters.length} waiting$`));
    });
  });

  test('a hold still holding has no end; a name with no history has no holds', async () => {
    const gate = join(f.dir, 'gate');
    const holder = await f.lockRecording('open', gate, join(f.dir, 'record'));
    const doc = await f.history('open');
    assert.equal(doc.holds.length, 1);
    assert.equal(doc.holds[0].key, holder.key);
    assert.equal(doc.holds[0].endedRevision, null);
    assert.equal(doc.holds[0].end, null);
    const text = await f.procs.run(['history', 'open', '--endpoints', f.ep]);
    assert.match(text.stdout, new RegExp(`${holder.key}  lease [0-9a-f]+  token \\d+  holding since rev \\d+  0 waiting`));
    writeFileSync(gate, '');
    await holder.proc.wait();

    const none = await f.history('never/used');
    assert.deepEqual(none.holds, []);
    assert.equal(none.fromRevision, 1);
    assert.equal(none.compactedAt, null);
  });

  test('a single key is replayed with --single: re-created, it is a new hold; deleted with its lease alive, it was released', async () => {
    const lease = /lease ([0-9a-f]+) granted/.exec(await f.etcd.etcdctl(['lease', 'grant', '60']))![1];
    await f.etcd.etcdctl(['put', '--lease', lease, '/locks/one', 'locked']);
    await f.etcd.etcdctl(['put', '--lease', lease, '/locks/one', 'relocked']);
    await f.etcd.etcdctl(['del', '/locks/one']);
    await f.etcd.etcdctl(['put', '/locks/one', 'again']);
    const second = await f.createRevision('/locks/one');
    const doc = await f.history('/locks/one', ['--single']);
    assert.deepEqual(
      doc.holds.map((h) => [h.key, h.lease, h.endedRevision === null, h.end]),
      [['/locks/one', lease, false, 'released'], ['/locks/one', '', true, null]],
    );
    assert.equal(doc.holds[1].token, second);
    assert.deepEqual((await f.history('/locks/one')).holds, [], 'the queue /locks/one/… is another lock');
  });

  test('a key without a lease that was deleted was released; keys of the namespace are replayed without it', async () => {
    await f.etcd.etcdctl(['put', 'ns1/plain/00000000-0000-4000-8000-00000000000a', '']);
    await f.etcd.etcdctl(['del', 'ns1/plain/00000000-0000-4000-8000-00000000000a']);
    const doc = await f.history('plain', ['--namespace', 'ns1/']);
    assert.deepEqual(doc.holds.map((h) => [h.key, h.lease, h.end]), [['plain/00000000-0000-4000-8000-00000000000a', '', 'released']]);
    assert.deepEqual((await f.history('ns1/plain')).holds.length, 1, 'the same keys without the namespace');
  });

  test('an HTML name and a non-UTF-8 one come back exact (text, and keyBase64 for bytes that are not UTF-8)', async () => {
    const name = 'html/<img src=x onerror=alert(1)>';
    const lease = /lease ([0-9a-f]+) granted/.exec(await f.etcd.etcdctl(['lease', 'grant', '60']))![1];
    await f.etcd.etcdctl(['put', '--lease', lease, `${name}/${lease}`, '']);
    const r = await f.procs.run(['history', name, '--endpoints', f.ep, '--json']);
    assert.ok(r.stdout.includes(`${name}/${lease}`), `the raw output carries the key literally: ${r.stdout}`);
    const doc = JSON.parse(r.stdout) as HistoryDoc;
    assert.equal(doc.lock, name);
    assert.equal(doc.holds[0].key, `${name}/${lease}`);
    assert.equal(doc.holds[0].keyBase64, undefined);

    const conn = await f.connect();
    const bytes = Buffer.concat([Buffer.from('bin/'), Buffer.from([0xc3, 0xa9, 0xff])]);
    const granted = await conn.client.leaseClient.leaseGrant({ TTL: 60 });
    const hex = BigInt(granted.ID).toString(16);
    const key = Buffer.concat([bytes, Buffer.from(`/${hex}`)]);
    await conn.client.kv.put({ key, value: Buffer.alloc(0), lease: granted.ID });
    const replayed = await new EtcdHistory(conn).replay(bytes);
    assert.equal(replayed.lockId, lockId(bytes, 'go-mutex'), 'the live model’s id for this lock');
    assert.ok(replayed.holds[0].key.equals(key), 'the exact bytes');
    const json = historyJson(replayed);
    assert.equal(json.lock, 'bin/é\\xff');
    assert.equal(json.holds[0].key, `bin/é\\xff/${hex}`);
    assert.ok(Buffer.from(json.holds[0].keyBase64!, 'base64').equals(key));
  });

  test('a replay that is cancelled rejects with CANCELLED, before it starts or while it reads', async () => {
    const history = new EtcdHistory(await f.connect());
    await assert.rejects(history.replay(Buffer.from('jobs'), { signal: AbortSignal.abort() }), (e) => isLockLensError(e, 'CANCELLED'));
    // A name with no event keeps its watches waiting for the end of history: abort while they do.
    const abort = new AbortController();
    const reading = history.replay(Buffer.from('nothing/yet'), { signal: abort.signal, onProgress: () => undefined });
    setTimeout(() => abort.abort(), 50);
    await assert.rejects(reading, (e) => isLockLensError(e, 'CANCELLED'));
  });

  test('--help says what it does; the command is listed', async () => {
    const help = await f.procs.run(['history', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: locklens history NAME \[--single\] \[--json\]/);
    assert.match(help.stdout, /revoked or expired/);
    const usage = await f.procs.run(['--help']);
    assert.match(usage.stdout, /history\s+replay a lock's holds/);
    const missing = await f.procs.run(['history', '--endpoints', f.ep]);
    assert.equal(missing.code, 2, show(missing));
  });
});

describe('locklens history after compaction', () => {
  const f = historyFixture();

  test('the hold in place at the compaction revision is marked as begun before history, and compactedAt says where history begins', async () => {
    const gate = join(f.dir, 'gate');
    const record = join(f.dir, 'record');
    const first = await f.lockRecording('cq', gate, record);
    const second = await f.lockRecording('cq', gate, record);
    // Everything so far is compacted away: the two keys are all that is left of it.
    const revision = JSON.parse(await f.etcd.etcdctl(['endpoint', 'status', '-w', 'json']))[0].Status.header.revision as number;
    await f.etcd.etcdctl(['compact', String(revision)]);

    const before = await f.history('cq');
    assert.equal(before.compactedAt, revision);
    assert.equal(before.fromRevision, revision);
    assert.deepEqual(
      before.holds.map((h) => [h.key, h.beforeHistory, h.acquiredRevision, h.endedRevision, h.waiters]),
      [[first.key, true, revision, null, [second.key]]],
    );
    const text = await f.procs.run(['history', 'cq', '--endpoints', f.ep]);
    assert.match(text.stdout, new RegExp(`^the queue cq/…: revisions ${revision} to \\d+ read \\(history before revision ${revision} was compacted\\), 1 hold\\n`));
    assert.match(text.stdout, /holding since rev \d+ \(held before history\)/);

    writeFileSync(gate, '');
    await Promise.all([first.proc.wait(), second.proc.wait()]);
    assert.deepEqual(readFileSync(record, 'utf8').trim().split('\n').map((l) => l.split(' ')[0]), [first.key, second.key]);
    const after = await f.history('cq');
    assert.equal(after.compactedAt, revision);
    assert.deepEqual(after.holds.map((h) => [h.key, h.beforeHistory]), [[first.key, true], [second.key, false]]);
    assert.equal(after.holds[1].acquiredRevision, after.holds[0].endedRevision);
    await f.assertGoMutexOrder(after);
    assert.deepEqual((await f.history('never/used')).holds, [], 'no history since compaction, and none before: no holds');
  });
});

describe('locklens history on a store without history', () => {
  const f = historyFixture();
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis.dispose();
  });

  test('Redis (--url redis://…) exits 2 with a sentence saying why', async () => {
    const r = await f.procs.run(['history', 'jobs', '--url', redis.url]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /^locklens: redis keeps no history of its locks: locklens history replays etcd's revisions\n$/);
  });
});
